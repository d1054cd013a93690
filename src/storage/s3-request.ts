// An S3 request a client asks svc to sign (the catalog's remote signing), read into the one
// operation it performs, by an allow-list: the host must be the configured endpoint (path-style)
// or the bucket's virtual host on it, the method and query parameters must name one operation of
// OBJECT_OPERATIONS, ListObjectsV2 or DeleteObjects, and every x-amz-* header must be one that
// changes nothing but the request itself (no x-amz-copy-source, x-amz-website-redirect-location,
// x-amz-acl, x-amz-grant-*, x-amz-tagging, ...). DeleteObjects must carry its body, whose keys are
// read and whose SHA-256 is signed (S3 checks it), so no other keys can be sent. Bad input is a
// 400, a request that is no allowed operation a 403. Pure: no I/O.
import { createHash } from 'node:crypto';
import { badRequest } from '../errors.js';
import type { StorageConfig } from './object-store.js';
import { StorageRefused, type ObjectOperation, type StorageOp } from './ownership.js';
import { deleteObjectsKeys } from './delete-objects.js';

export type MultiMap = Record<string, string[]>;
export interface SignInput { method: string; uri: string; headers: MultiMap; body?: string }

export interface S3Request {
  op: StorageOp;
  url: URL;
  /** Lower-case names, trimmed values, `host` set from the URL, without the headers the signer writes. */
  headers: MultiMap;
}

export const UNSIGNED_PAYLOAD = 'UNSIGNED-PAYLOAD';
const PAYLOADS = new Set([UNSIGNED_PAYLOAD, 'STREAMING-UNSIGNED-PAYLOAD-TRAILER']);
/** Written by the signer; whatever the client sent for them is dropped. */
const REPLACED = new Set(['host', 'authorization', 'x-amz-date', 'x-amz-security-token']);
/** x-amz-* headers that shape only the request they travel on. */
const AMZ_HEADERS = new Set([
  'x-amz-content-sha256', 'x-amz-user-agent', 'x-amz-decoded-content-length', 'x-amz-trailer',
  'x-amz-checksum-crc32', 'x-amz-checksum-crc32c', 'x-amz-checksum-crc64nvme', 'x-amz-checksum-sha1', 'x-amz-checksum-sha256',
  'x-amz-checksum-type', 'x-amz-checksum-mode', 'x-amz-sdk-checksum-algorithm', 'x-amz-expected-bucket-owner', 'x-amz-request-payer',
  'x-amz-storage-class', 'x-amz-server-side-encryption', 'x-amz-server-side-encryption-customer-algorithm',
  'x-amz-server-side-encryption-customer-key', 'x-amz-server-side-encryption-customer-key-md5', 'x-amz-mp-object-size',
]);
const MAX_HEADERS = 64;
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]{1,256}$/;

interface Shape { method: string; name: ObjectOperation | 'ListObjectsV2' | 'DeleteObjects'; bucket: boolean; required: string[]; optional: string[] }
/** Each allowed operation by method, addressed object or bucket, and its exact query parameters (x-id aside). */
const SHAPES: Shape[] = [
  { method: 'GET', name: 'ListParts', bucket: false, required: ['uploadId'], optional: ['max-parts', 'part-number-marker'] },
  { method: 'GET', name: 'GetObject', bucket: false, required: [], optional: ['versionId', 'partNumber'] },
  { method: 'HEAD', name: 'HeadObject', bucket: false, required: [], optional: ['versionId', 'partNumber'] },
  { method: 'PUT', name: 'UploadPart', bucket: false, required: ['partNumber', 'uploadId'], optional: [] },
  { method: 'PUT', name: 'PutObject', bucket: false, required: [], optional: [] },
  { method: 'POST', name: 'CreateMultipartUpload', bucket: false, required: ['uploads'], optional: [] },
  { method: 'POST', name: 'CompleteMultipartUpload', bucket: false, required: ['uploadId'], optional: [] },
  { method: 'DELETE', name: 'AbortMultipartUpload', bucket: false, required: ['uploadId'], optional: [] },
  { method: 'DELETE', name: 'DeleteObject', bucket: false, required: [], optional: ['versionId'] },
  { method: 'GET', name: 'ListObjectsV2', bucket: true, required: ['list-type', 'prefix'], optional: ['delimiter', 'continuation-token', 'start-after', 'max-keys', 'encoding-type'] },
  { method: 'POST', name: 'DeleteObjects', bucket: true, required: ['delete'], optional: [] },
];

/** The hosts that serve the bucket path-style: the endpoint's, or AWS's for the region without one. */
export function endpointHosts(st: Pick<StorageConfig, 'endpoint' | 'region'>): string[] {
  if (st.endpoint) {
    try { return [new URL(st.endpoint).host.toLowerCase()]; } catch { return []; }
  }
  return [`s3.${st.region}.amazonaws.com`, `s3.dualstack.${st.region}.amazonaws.com`, ...(st.region === 'us-east-1' ? ['s3.amazonaws.com'] : [])];
}

/** A path or part of one with every %XX decoded; a malformed escape is the client's 400. */
function decodePath(p: string): string {
  try { return decodeURIComponent(p); } catch { throw badRequest(`the uri has a malformed percent escape: ${JSON.stringify(p.slice(0, 200))}`); }
}

/** The bucket and key the URL addresses; the host must serve this bucket. */
function addressed(st: Pick<StorageConfig, 'endpoint' | 'region' | 'bucket'>, url: URL): { bucket: string; key: string } {
  const host = url.host.toLowerCase();
  const hosts = endpointHosts(st);
  if (hosts.includes(host)) {
    const m = /^\/([^/]*)(?:\/(.*))?$/.exec(url.pathname)!;
    return { bucket: decodePath(m[1]!), key: decodePath(m[2] ?? '') };
  }
  if (hosts.some((h) => host === `${st.bucket}.${h}`)) return { bucket: st.bucket, key: decodePath(url.pathname.slice(1)) };
  throw new StorageRefused(`the request goes to ${host}, which is neither the storage endpoint ${hosts[0] ?? st.endpoint} nor the bucket's virtual host ${st.bucket}.${hosts[0] ?? ''}`);
}

function query(url: URL): Map<string, string> {
  if (/%(?![0-9a-fA-F]{2})/.test(url.search)) throw badRequest('the uri\'s query has a malformed percent escape');
  const q = new Map<string, string>();
  for (const [k, v] of url.searchParams) {
    if (q.has(k)) throw badRequest(`the query parameter ${k} is given twice`);
    q.set(k, v);
  }
  return q;
}

function shapeOf(method: string, onBucket: boolean, q: Map<string, string>, where: string): Shape {
  const shape = SHAPES.find((s) => s.method === method && s.bucket === onBucket && s.required.every((p) => q.has(p))
    && [...q.keys()].every((p) => p === 'x-id' || s.required.includes(p) || s.optional.includes(p)));
  const xId = q.get('x-id');
  if (!shape || (xId !== undefined && xId !== shape.name)) {
    throw new StorageRefused(`${method} ${where}${q.size ? `?${[...q.keys()].join('&')}` : ''} is not an operation svc signs (object reads, writes, multipart uploads and deletes, ListObjectsV2 with a prefix, DeleteObjects)`);
  }
  if (shape.name === 'ListObjectsV2' && q.get('list-type') !== '2') throw new StorageRefused('only ListObjectsV2 (list-type=2) is signed');
  for (const flag of ['uploads', 'delete']) if (q.has(flag) && q.get(flag) !== '') throw badRequest(`the query parameter ${flag} takes no value`);
  return shape;
}

function headersOf(raw: MultiMap): MultiMap {
  const names = Object.keys(raw);
  if (names.length > MAX_HEADERS) throw badRequest(`at most ${MAX_HEADERS} headers are signed`);
  const out: MultiMap = {};
  for (const k of names) {
    const name = k.toLowerCase();
    if (!TOKEN.test(name)) throw badRequest(`${JSON.stringify(k.slice(0, 100))} is not a header name`);
    if (name in out) throw badRequest(`the header ${name} is given twice`);
    const values = raw[k]!;
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string' || /[\u0000-\u0008\u000a-\u001f\u007f]/.test(v))) {
      throw badRequest(`the header ${name} must be a list of strings without control characters`);
    }
    if (REPLACED.has(name)) continue;
    if (name.startsWith('x-amz-') && !AMZ_HEADERS.has(name) && !/^x-amz-meta-[a-z0-9._-]+$/.test(name)) {
      throw new StorageRefused(`the header ${name} is not one svc signs`);
    }
    out[name] = values.map((v) => v.trim());
  }
  return out;
}

/** The operation an S3 request performs, with the headers to sign; throws 400 or StorageRefused. */
export function parseS3Request(st: Pick<StorageConfig, 'endpoint' | 'region' | 'bucket'>, req: SignInput): S3Request {
  let url: URL;
  try { url = new URL(req.uri); } catch { throw badRequest('uri must be an absolute URL'); }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw badRequest('uri must be an http or https URL');
  if (url.username || url.password || url.hash) throw badRequest('uri must carry no user information or fragment');
  const { bucket, key } = addressed(st, url);
  if (bucket !== st.bucket) throw new StorageRefused(`the request is outside the bucket ${st.bucket}`);
  const q = query(url);
  const shape = shapeOf(req.method, key === '', q, key === '' ? `the bucket ${bucket}` : JSON.stringify(key));
  const headers = headersOf(req.headers);
  headers.host = [url.host];
  const sha = headers['x-amz-content-sha256']?.[0];
  if (shape.name === 'DeleteObjects') {
    if (req.body === undefined) throw badRequest('a DeleteObjects request is signed only with its body');
    const body = Buffer.from(req.body, 'utf8');
    const hash = createHash('sha256').update(body).digest('hex');
    if (sha !== undefined && sha !== hash) throw badRequest('x-amz-content-sha256 of a DeleteObjects request must be the SHA-256 of its body');
    headers['x-amz-content-sha256'] = [hash];
    const md5 = createHash('md5').update(body).digest('base64');
    if (headers['content-md5'] && headers['content-md5'][0] !== md5) throw badRequest('content-md5 does not match the body');
    // S3 needs an integrity header on DeleteObjects; the client gets this one back with the signature.
    if (!headers['content-md5'] && !Object.keys(headers).some((h) => h.startsWith('x-amz-checksum-'))) headers['content-md5'] = [md5];
    return { op: { name: 'DeleteObjects', keys: deleteObjectsKeys(req.body) }, url, headers };
  }
  if (sha !== undefined && !PAYLOADS.has(sha) && !/^[0-9a-f]{64}$/.test(sha)) {
    throw badRequest(`x-amz-content-sha256 must be a SHA-256 in hex, ${UNSIGNED_PAYLOAD} or STREAMING-UNSIGNED-PAYLOAD-TRAILER (chunk signatures need the key, which stays in svc)`);
  }
  headers['x-amz-content-sha256'] = [sha ?? UNSIGNED_PAYLOAD];
  const op: StorageOp = shape.name === 'ListObjectsV2' ? { name: 'ListObjectsV2', prefix: q.get('prefix')! }
    : { name: shape.name as ObjectOperation, key };
  return { op, url, headers };
}
