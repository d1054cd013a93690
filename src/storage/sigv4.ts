// AWS Signature Version 4 of an S3 request with the service's storage keys, by
// @smithy/signature-v4 (the implementation AWS maintains and the AWS SDK signs with). The request
// was read and allowed first (s3-request.ts, ownership.ts); this only signs what was allowed: the
// host, path, query and headers it was read from, and its payload hash. Loaded on first use.
import { createHash, createHmac } from 'node:crypto';
import { createRequire } from 'node:module';
import type { SignatureV4 } from '@smithy/signature-v4';
import type { StorageConfig } from './object-store.js';
import type { MultiMap, S3Request } from './s3-request.js';

const require = createRequire(import.meta.url);

type Data = string | ArrayBuffer | ArrayBufferView;
const bytes = (d: Data) => (typeof d === 'string' ? d : ArrayBuffer.isView(d) ? new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : new Uint8Array(d));

/** The SDK's hash constructor shape on node:crypto: HMAC-SHA256 when given a key, else SHA-256. */
class Sha256 {
  private readonly h;
  constructor(secret?: Data) { this.h = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret)); }
  update(d: Data) { this.h.update(bytes(d)); }
  async digest() { return new Uint8Array(this.h.digest()); }
}

// Hop-by-hop and SDK bookkeeping headers a client or proxy may change in transit: left unsigned
// (besides @smithy's own list: authorization, user-agent, expect, connection, ...).
const UNSIGNABLE = new Set(['amz-sdk-invocation-id', 'amz-sdk-request', 'content-length']);

let Signer: typeof SignatureV4 | undefined;
// One signer per storage configuration: @smithy keeps the day's signing key in it.
const signers = new WeakMap<object, { signer: SignatureV4; id: string }>();

function signer(st: StorageConfig): SignatureV4 {
  const id = `${st.region}\u0000${st.access_key}\u0000${st.secret_key}`;
  const hit = signers.get(st);
  if (hit && hit.id === id) return hit.signer;
  Signer ??= (require('@smithy/signature-v4') as typeof import('@smithy/signature-v4')).SignatureV4;
  // uriEscapePath false: S3 signs the path as sent, without the second encoding other services use.
  const made = new Signer({ service: 's3', region: st.region, sha256: Sha256, uriEscapePath: false, applyChecksum: false, credentials: { accessKeyId: st.access_key, secretAccessKey: st.secret_key } });
  signers.set(st, { signer: made, id });
  return made;
}

/** The request's headers with `authorization` and `x-amz-date` added, signed at `now`. */
export async function signS3(st: StorageConfig, method: string, req: S3Request, now: Date): Promise<MultiMap> {
  const { url } = req;
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const signed = await signer(st).sign({
    method, protocol: url.protocol, hostname: url.hostname, port: url.port ? Number(url.port) : undefined,
    path: url.pathname, query, headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, v.join(',')])),
  }, { signingDate: now, unsignableHeaders: UNSIGNABLE });
  const out: MultiMap = { ...req.headers };
  for (const h of ['authorization', 'x-amz-date']) out[h] = [signed.headers[h]!];
  return out;
}
