// GetObject without the AWS SDK's request pipeline: a cold scan reads every manifest and data file
// of a table, and the SDK's middleware stack, signer wrapper and stream adapters cost about twice
// the main-thread CPU per object of one signed node:http GET on a kept-alive connection (41
// objects: 64 against 30 ms, bench/lakehouse.ts's figures in docs/engines.md). The request is the
// SDK's: the same addressing (path-style or the bucket's virtual host), signed by the signer the
// SDK uses (sigv4.ts), retried as the SDK's standard mode retries (three attempts on no answer,
// 5xx and 429), and its errors carry the SDK's shape (`name` from the answer's <Code>,
// `$metadata.httpStatusCode`) so errors.ts tells an outage from a refusal the same way.
import { http, https } from '../util/node-http.js';
import type { Readable } from 'node:stream';
import type { StorageConfig } from './object-store.js';
import { signS3 } from './sigv4.js';
import { endpointHosts } from './s3-request.js';
import { hasDotSegment } from './ownership.js';

/** How long a connect may take (as the SDK client's connectionTimeout). */
const CONNECT_TIMEOUT_MS = 5_000;
/** The SDK's standard retry mode: attempts in all, and the base of its jittered backoff. */
const ATTEMPTS = 3;
const BACKOFF_MS = 100;
/** Sockets kept per store: bounds the requests in flight to it (more wait for a free socket). */
const MAX_SOCKETS = 64;
/** Bytes of an error answer read for its <Code>. */
const MAX_ERROR_BYTES = 16 * 1024;
/**
 * How long a sent request may wait for the answer's headers (the SDK set no bound): a store that
 * takes the connection and never answers, or a kept-alive socket to a host gone away, is an outage
 * after this. Not after the headers: a body is read as fast as its consumer takes it.
 */
const ANSWER_TIMEOUT_MS = 30_000;

export interface GetterOptions { answerTimeoutMs?: number }

export interface ObjectGetter {
  /** The object's body and length, or null when it does not exist. */
  getStream(key: string): Promise<{ body: Readable; size: number } | null>;
  close(): void;
}

/** An S3 error as the SDK reports it: errors.ts reads `name`, `code` and `$metadata`. */
class StoreError extends Error {
  readonly $metadata: { httpStatusCode?: number };
  constructor(name: string, message: string, status?: number, readonly code?: string) {
    super(message);
    this.name = name;
    this.$metadata = { httpStatusCode: status };
  }
}

/** S3's encoding of a key in the path: RFC 3986 unreserved characters kept, `/` kept. */
function encodeKey(key: string): string {
  return key.split('/').map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/');
}

/**
 * The URL of an object: path-style on the endpoint, else the bucket's virtual host (AWS's own when
 * no endpoint is set). A "." or ".." segment is refused: the URL parser folds it away ("a/../b"
 * addresses "b", path-style "../x" another bucket), where the SDK sent the key as it is.
 */
export function objectUrl(cfg: Pick<StorageConfig, 'endpoint' | 'region' | 'bucket' | 'path_style'>, key: string): URL {
  if (hasDotSegment(key)) throw new StoreError('InvalidObjectKey', 'svc does not read a key with a "." or ".." segment', 400);
  const base = new URL(cfg.endpoint || `https://${endpointHosts(cfg)[0]}`);
  const prefix = base.pathname.replace(/\/+$/, '');
  if (cfg.path_style) return new URL(`${base.protocol}//${base.host}${prefix}/${encodeURIComponent(cfg.bucket)}/${encodeKey(key)}`);
  return new URL(`${base.protocol}//${cfg.bucket}.${base.host}${prefix}/${encodeKey(key)}`);
}

export function createObjectGetter(cfg: StorageConfig, opts: GetterOptions = {}): ObjectGetter {
  const answerTimeoutMs = opts.answerTimeoutMs ?? ANSWER_TIMEOUT_MS;
  const agents = {
    'http:': new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS }),
    'https:': new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS }),
  };

  const once = async (key: string): Promise<{ body: Readable; size: number } | null> => {
    const url = objectUrl(cfg, key);
    const signed = await signS3(cfg, 'GET', { op: { name: 'GetObject', key }, url, headers: { host: [url.host], 'x-amz-content-sha256': ['UNSIGNED-PAYLOAD'] } }, new Date());
    const headers = Object.fromEntries(Object.entries(signed).map(([k, v]) => [k, v.join(',')]));
    const secure = url.protocol === 'https:';
    return new Promise((resolve, reject) => {
      const req = (secure ? https : http).request(url, { method: 'GET', headers, agent: secure ? agents['https:'] : agents['http:'] }, (res) => {
        clearTimeout(answerTimer);
        const status = res.statusCode ?? 0;
        if (status === 200) {
          // the caches count this size before they read the body (Node holds a body to its Content-Length)
          if (res.headers['content-length'] !== undefined) return resolve({ body: res, size: Number(res.headers['content-length']) });
          res.destroy();
          return reject(new StoreError('InvalidResponse', 'the object store answered a read without a Content-Length', status));
        }
        // an error answer: its <Code> names it (NoSuchKey, AccessDenied, SlowDown, ...)
        const chunks: Buffer[] = [];
        let n = 0;
        res.on('data', (c: Buffer) => { if (n < MAX_ERROR_BYTES) { chunks.push(c); n += c.length; } });
        res.on('error', (err) => reject(Object.assign(err, { $metadata: {} })));
        res.on('end', () => {
          const named = /<Code>([^<]{1,100})<\/Code>/.exec(Buffer.concat(chunks).toString('utf8'))?.[1];
          // as the SDK: only NoSuchKey is "no object" (a missing bucket, NoSuchBucket, stays an error)
          if (status === 404 && (named === undefined || named === 'NoSuchKey')) return resolve(null);
          const code = named ?? (status >= 500 ? 'InternalError' : `Http${status}`);
          reject(new StoreError(code, `the object store answered ${status} ${code}`, status));
        });
      });
      // counted from the socket, not from the request: a read waiting for a free socket (MAX_SOCKETS
      // bodies being read) is not the store's silence
      let answerTimer: NodeJS.Timeout | undefined;
      // a store that does not answer a connect is an outage, not a hang for the system's TCP timeout
      req.on('socket', (socket) => {
        answerTimer = setTimeout(() => req.destroy(new StoreError('TimeoutError', `the object store did not answer a read within ${answerTimeoutMs} ms`, undefined, 'ETIMEDOUT')), answerTimeoutMs);
        if (!socket.connecting) return;
        const timer = setTimeout(() => req.destroy(new StoreError('TimeoutError', `connecting to the object store took more than ${CONNECT_TIMEOUT_MS} ms`, undefined, 'ETIMEDOUT')), CONNECT_TIMEOUT_MS);
        socket.once('connect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      // no answer at all (refused, reset): the SDK's shape of a network error
      req.on('error', (err) => { clearTimeout(answerTimer); reject(err instanceof StoreError ? err : Object.assign(err, { $metadata: {} })); });
      req.end();
    });
  };

  const retryable = (err: unknown) => {
    const e = err as { $metadata?: { httpStatusCode?: number } };
    const status = e.$metadata?.httpStatusCode;
    return status === undefined || status >= 500 || status === 429;
  };

  return {
    async getStream(key) {
      for (let attempt = 1; ; attempt++) {
        try {
          return await once(key);
        } catch (err) {
          if (attempt >= ATTEMPTS || !retryable(err)) throw err;
          await new Promise((r) => setTimeout(r, Math.random() * BACKOFF_MS * 2 ** (attempt - 1)));
        }
      }
    },
    close() { agents['http:'].destroy(); agents['https:'].destroy(); },
  };
}
