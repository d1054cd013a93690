// A real S3 wire-protocol server (s3rver) on a free loopback port, with the bucket created.
import S3rver from 's3rver';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';

export interface TestS3 { endpoint: string; bucket: string; accessKey: string; secretKey: string; stop(): Promise<void> }

export async function startS3(bucket = 'warehouse'): Promise<TestS3> {
  const directory = await mkdtemp(path.join(tmpdir(), 'svc-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', directory, silent: true, configureBuckets: [{ name: bucket }] } as never);
  const info = (await server.run()) as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${info.port}`,
    bucket,
    accessKey: 'S3RVER',
    secretKey: 'S3RVER',
    async stop() {
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The SVC_STORAGE__* variables pointing the service at this server (path-style addressing, which
 * s3rver needs, is the default).
 */
export function storageEnv(s3: Pick<TestS3, 'endpoint' | 'bucket' | 'accessKey' | 'secretKey'>): Record<string, string> {
  return { SVC_STORAGE__ENDPOINT: s3.endpoint, SVC_STORAGE__BUCKET: s3.bucket, SVC_STORAGE__ACCESS_KEY: s3.accessKey, SVC_STORAGE__SECRET_KEY: s3.secretKey };
}
