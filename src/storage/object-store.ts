// S3 client from `[storage]`: any S3-compatible store (MinIO, AWS, s3rver in tests).
import {
  S3Client, HeadBucketCommand, PutObjectCommand, GetObjectCommand, DeleteObjectCommand,
  ListObjectsV2Command, NoSuchKey,
} from '@aws-sdk/client-s3';

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
  readonly client: S3Client;
  /** Throws a one-line error when the bucket cannot be reached. */
  checkBucket(): Promise<void>;
  put(key: string, body: Uint8Array | string, contentType?: string): Promise<void>;
  get(key: string): Promise<Uint8Array | null>;
  delete(key: string): Promise<void>;
  list(prefix: string): Promise<Array<{ key: string; size: number; lastModified?: Date }>>;
  close(): void;
}

export function createObjectStore(cfg: StorageConfig): ObjectStore {
  const client = new S3Client({
    endpoint: cfg.endpoint || undefined,
    region: cfg.region,
    forcePathStyle: cfg.path_style,
    credentials: { accessKeyId: cfg.access_key, secretAccessKey: cfg.secret_key },
    // s3rver and older MinIO reject the newer default checksum headers on some calls.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const Bucket = cfg.bucket;
  return {
    bucket: Bucket,
    client,
    async checkBucket() {
      try {
        await client.send(new HeadBucketCommand({ Bucket }));
      } catch (err) {
        const name = (err as { name?: string }).name ?? 'error';
        throw new Error(`object store bucket "${Bucket}" is not reachable at ${cfg.endpoint ?? 'the default endpoint'}: ${name}`);
      }
    },
    async put(key, body, contentType) {
      await client.send(new PutObjectCommand({ Bucket, Key: key, Body: body, ContentType: contentType }));
    },
    async get(key) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket, Key: key }));
        return out.Body ? await out.Body.transformToByteArray() : new Uint8Array();
      } catch (err) {
        if (err instanceof NoSuchKey || (err as { name?: string }).name === 'NoSuchKey') return null;
        throw err;
      }
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket, Key: key }));
    },
    async list(prefix) {
      const out: Array<{ key: string; size: number; lastModified?: Date }> = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken: token }));
        for (const o of page.Contents ?? []) out.push({ key: o.Key!, size: o.Size ?? 0, lastModified: o.LastModified });
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    close() { client.destroy(); },
  };
}
