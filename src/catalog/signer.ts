// Remote signing of object-store requests (Iceberg REST `.../tables/{table}/sign`, the
// RemoteSignRequest of the specification): the client sends the S3 request it is about to make,
// the server reads it into one allowed operation (src/storage/s3-request.ts: host, method, query,
// headers, a bulk delete's body), lets the storage rule decide it for the table's workspace and
// location (src/storage/ownership.ts), and signs it with AWS Signature Version 4 using the
// service's storage keys, which never leave the process (src/storage/sigv4.ts, @smithy's signer).
// Chosen over vended credentials: the object store here need not offer STS, nothing expires under
// a long job (each request is signed while the caller's catalog token is valid), and the scope is
// the table, not a bucket-wide key.
import type { Services } from '../services.js';
import { parseS3Request, type MultiMap, type S3Request, type SignInput } from '../storage/s3-request.js';
import { authorize, type StorageAccess } from '../storage/ownership.js';
import { signS3 } from '../storage/sigv4.js';
import { locationKey, type Warehouse } from './warehouse.js';

export type { MultiMap };
export type SignRequest = SignInput;

/** Reads the request and decides it for the workspace and the table location: what it needs, and what to sign. */
export function checkSignRequest(s: Services, wh: Warehouse, location: string, req: SignRequest): { access: StorageAccess; request: S3Request } {
  const request = parseS3Request(s.config.storage, req);
  const access = authorize(s.storage.layout, { tenant: wh, within: locationKey(s, location) }, request.op);
  return { access, request };
}

/** The signed request (RemoteSignResult): the same uri, the headers with the signature. */
export async function signRequest(s: Services, req: SignRequest, request: S3Request): Promise<{ uri: string; headers: MultiMap }> {
  return { uri: req.uri, headers: await signS3(s.config.storage, req.method, request, s.clock.now()) };
}
