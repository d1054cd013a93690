// S3 client from `[storage]`: any S3-compatible store (MinIO, AWS, s3rver in tests).
import { createRequire } from 'node:module';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { buffer } from 'node:stream/consumers';
import { createObjectGetter, type GetterOptions, type ObjectGetter } from './object-get.js';

// The AWS SDK is large: it is loaded on the first object-store call, not at start.
const require = createRequire(import.meta.url);
let sdkModule: typeof import('@aws-sdk/client-s3') | undefined;
const sdk = () => (sdkModule ??= require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3'));

export interface StorageConfig {
  endpoint?: string;
  region: string;
  bucket: string;
  access_key: string;
  secret_key: string;
  path_style: boolean;
}

export interface ObjectStore {
  readonly bucket: string;
  /** Throws a one-line error when the bucket cannot be reached. */
  checkBucket(): Promise<void>;
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  get(key: string): Promise<Uint8Array | null>;
  delete(key: string): Promise<void>;
  /** Keys under the prefix in key order, at most `max`, after `startAfter` when given. */
  list(prefix: string, max?: number, startAfter?: string): Promise<Array<{ key: string; size: number; lastModified?: Date }>>;
  /** Size of an object, or null when it does not exist. */
  head(key: string): Promise<{ size: number } | null>;
  /** A readable stream of the object, or null when it does not exist. */
  getStream(key: string): Promise<{ body: Readable; size: number } | null>;
  /** Uploads a stream of unknown length (multipart). */
  putStream(key: string, body: Readable, contentType?: string): Promise<void>;
  /** Deletes every object under the prefix; returns how many. */
  deletePrefix(prefix: string): Promise<number>;
  close(): void;
}

/** How long a connect to the object store may take. */
const CONNECT_TIMEOUT_MS = 5_000;

/** `reads`: the reads' bounds (tests shorten them). */
export function createObjectStore(cfg: StorageConfig, reads: GetterOptions = {}): ObjectStore {
  let s3: S3Client | undefined;
  const client = () => (s3 ??= new (sdk().S3Client)({
    endpoint: cfg.endpoint || undefined,
    region: cfg.region,
    forcePathStyle: cfg.path_style,
    credentials: { accessKeyId: cfg.access_key, secretAccessKey: cfg.secret_key },
    // s3rver and older MinIO reject the newer default checksum headers on some calls.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // A store that does not answer a connect is an outage (503 after the SDK's retries), not a hang
    // for the system's TCP timeout; transfers themselves are not bounded (large streams).
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS },
  }));
  // Reads, the most frequent call (every manifest and data file of a scan), skip the SDK's pipeline.
  let getter: ObjectGetter | undefined;
  const reader = () => (getter ??= createObjectGetter(cfg, reads));
  const Bucket = cfg.bucket;
  return {
    bucket: Bucket,
    async checkBucket() {
      try {
        await client().send(new (sdk().HeadBucketCommand)({ Bucket }));
      } catch (err) {
        const name = (err as { name?: string }).name ?? 'error';
        throw new Error(`object store bucket "${Bucket}" is not reachable at ${cfg.endpoint ?? 'the default endpoint'}: ${name}`);
      }
    },
    async put(key, body, contentType) {
      await client().send(new (sdk().PutObjectCommand)({ Bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async get(key) {
      const obj = await reader().getStream(key);
      if (!obj) return null;
      const b = await buffer(obj.body);
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    },
    async delete(key) {
      await client().send(new (sdk().DeleteObjectCommand)({ Bucket, Key: key }));
    },
    async list(prefix, max = Number.POSITIVE_INFINITY, startAfter) {
      const out: Array<{ key: string; size: number; lastModified?: Date }> = [];
      let token: string | undefined;
      do {
        const page = await client().send(new (sdk().ListObjectsV2Command)({ Bucket, Prefix: prefix, ContinuationToken: token, StartAfter: token ? undefined : startAfter, MaxKeys: Math.min(1000, Math.max(1, max - out.length)) }));
        for (const o of page.Contents ?? []) if (out.length < max) out.push({ key: o.Key!, size: o.Size ?? 0, lastModified: o.LastModified });
        token = page.IsTruncated && out.length < max ? page.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async head(key) {
      try {
        const out = await client().send(new (sdk().HeadObjectCommand)({ Bucket, Key: key }));
        return { size: out.ContentLength ?? 0 };
      } catch (err) {
        const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
        if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return null;
        throw err;
      }
    },
    getStream: (key) => reader().getStream(key),
    async putStream(key, body, contentType) {
      const { Upload } = require('@aws-sdk/lib-storage') as typeof import('@aws-sdk/lib-storage');
      await new Upload({ client: client(), params: { Bucket, Key: key, Body: body, ContentType: contentType } }).done();
    },
    async deletePrefix(prefix) {
      let deleted = 0;
      for (;;) {
        const page = await client().send(new (sdk().ListObjectsV2Command)({ Bucket, Prefix: prefix, MaxKeys: 1000 }));
        const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
        if (keys.length === 0) return deleted;
        // One call per key works on every S3 flavour (some lack the batch delete's MD5 handling).
        await Promise.all(keys.map((k) => client().send(new (sdk().DeleteObjectCommand)({ Bucket, Key: k.Key }))));
        deleted += keys.length;
        if (!page.IsTruncated && keys.length < 1000) return deleted;
      }
    },
    close() { s3?.destroy(); getter?.close(); },
  };
}
