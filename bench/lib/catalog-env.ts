// The environment of a benchmark's `svc serve` with the catalog on (warehouse s3://warehouse/lake on
// the bench's s3rver, one admin token), signed in as bench@example.test. Under bench/lib/ so that
// `npm run bench` (bench/*.ts) does not run it as a benchmark.
import { serviceEnv } from '../../test/helpers/cli.js';
import { redisUrl } from '../../test/helpers/redis-dbs.js';
import type { TestS3 } from '../../test/helpers/s3.js';

export function catalogBenchEnv(dbUrl: string, s3: TestS3, port: number, token: string, extra: Record<string, string> = {}): Record<string, string> {
  const base = `http://127.0.0.1:${port}`;
  return serviceEnv(dbUrl, s3, {
    SVC_REDIS__URL: redisUrl('bench'),
    SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_LOG__FILTER: 'warn',
    SVC_ADMIN_EMAIL: 'bench@example.test', SVC_ADMIN_PASSWORD: 'bench-password-1', SVC_ENGINES__PROVISIONER: 'none',
    SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: token, SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake', SVC_CATALOG__PUBLIC_URL: base,
    SVC_STORAGE__BUCKET: 'warehouse',
    ...extra,
  });
}
