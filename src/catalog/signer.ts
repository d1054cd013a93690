// Remote signing of object-store requests (Iceberg REST `.../tables/{table}/sign`, the
// RemoteSignRequest of the specification): the client sends the S3 request it is about to make,
// the server checks that it touches only the table's location, and signs it with AWS Signature
// Version 4 using the service's storage keys, which never leave the process. Chosen over vended
// credentials: the object store here need not offer STS, nothing expires under a long job (each
// request is signed while the caller's catalog token is valid), and the scope is the table, not a
// bucket-wide key. Signing is plain node:crypto HMAC-SHA256 (AWS SigV4, documented by AWS).
import { createHash, createHmac } from 'node:crypto';
import type { Services } from '../services.js';
import { badRequest, forbidden } from './errors.js';
import type { CatalogRight } from './access.js';

export type MultiMap = Record<string, string[]>;
export interface SignRequest { region: string; uri: string; method: string; headers: MultiMap; body?: string }

const UNSIGNED = 'UNSIGNED-PAYLOAD';
// Headers a client or proxy may change in transit: never part of the signature.
const UNSIGNED_HEADERS = new Set(['authorization', 'user-agent', 'expect', 'connection', 'x-amzn-trace-id', 'amz-sdk-invocation-id', 'amz-sdk-request', 'content-length']);

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256 = (data: string) => createHash('sha256').update(data, 'utf8').digest('hex');
const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** The bucket and key an S3 request addresses (path-style or virtual-hosted), or null. */
export function addressed(s: Services, url: URL): { bucket: string; key: string } | null {
  const bucket = s.config.storage.bucket;
  const path = decodeURIComponent(url.pathname);
  if (url.hostname.startsWith(`${bucket}.`)) return { bucket, key: path.replace(/^\//, '') };
  const m = /^\/([^/]+)\/?(.*)$/.exec(path);
  return m ? { bucket: m[1], key: m[2] } : null;
}

/** Which right a request needs, and whether it stays under `prefix` (a table location's key). */
export function checkScope(s: Services, req: SignRequest, prefix: string): CatalogRight {
  let url: URL;
  try { url = new URL(req.uri); } catch { throw badRequest('uri must be an absolute URL'); }
  const a = addressed(s, url);
  if (!a || a.bucket !== s.config.storage.bucket) throw forbidden(`Forbidden: the request is outside the bucket ${s.config.storage.bucket}`);
  const inside = (key: string) => key === prefix || key.startsWith(`${prefix}/`);
  const listPrefix = url.searchParams.get('prefix');
  if (a.key === '' && listPrefix !== null) {
    if (!inside(listPrefix.replace(/\/$/, ''))) throw forbidden(`Forbidden: listing outside the table location ${prefix}/`);
  } else if (!inside(a.key)) {
    throw forbidden(`Forbidden: ${a.key} is outside the table location ${prefix}/`);
  }
  if (req.method === 'POST' && url.searchParams.has('delete')) {
    // DeleteObjects names its keys in the body: each must be inside too.
    for (const m of (req.body ?? '').matchAll(/<Key>([^<]*)<\/Key>/g)) if (!inside(m[1])) throw forbidden(`Forbidden: ${m[1]} is outside the table location ${prefix}/`);
    return 'write';
  }
  return ['GET', 'HEAD', 'OPTIONS'].includes(req.method) ? 'read' : 'write';
}

/** The headers of the request signed with SigV4 (service s3) by the service's storage keys. */
export function signV4(s: Services, req: SignRequest, now: Date): { uri: string; headers: MultiMap } {
  const url = new URL(req.uri);
  const st = s.config.storage;
  const amzDate = now.toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
  const day = amzDate.slice(0, 8);
  const headers: MultiMap = {};
  for (const [k, v] of Object.entries(req.headers)) {
    const name = k.toLowerCase();
    if (name === 'authorization' || name === 'x-amz-date' || name === 'x-amz-security-token') continue;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw badRequest(`header ${k} must be an array of strings`);
    headers[name] = v;
  }
  headers.host = [url.host];
  headers['x-amz-date'] = [amzDate];
  const payload = headers['x-amz-content-sha256']?.[0] ?? UNSIGNED;
  headers['x-amz-content-sha256'] = [payload];
  const signed = Object.keys(headers).filter((h) => !UNSIGNED_HEADERS.has(h)).sort();
  const canonicalHeaders = signed.map((h) => `${h}:${headers[h].map((v) => v.trim().replace(/\s+/g, ' ')).join(',')}\n`).join('');
  const query = [...url.searchParams.entries()].map(([k, v]) => [rfc3986(k), rfc3986(v)]).sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join('&');
  const canonical = [req.method, url.pathname || '/', query, canonicalHeaders, signed.join(';'), payload].join('\n');
  const region = st.region || req.region;
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${st.secret_key}`, day), region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign, 'utf8').digest('hex');
  headers.authorization = [`AWS4-HMAC-SHA256 Credential=${st.access_key}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`];
  return { uri: req.uri, headers };
}
