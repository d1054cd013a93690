// Typed domain errors. The API maps them to HTTP status in one place (src/api/errors.ts);
// the CLI prints `<code>: <message>` on one line.
export type ErrorCode =
  | 'bad_request' | 'unauthorized' | 'forbidden' | 'not_found' | 'conflict'
  | 'gone' | 'payload_too_large' | 'too_many_requests' | 'unavailable'
  // SPEC 7: adding an engine while engines are off is `disabled`; a floating image tag is `refused`
  | 'disabled' | 'refused'
  // a dependency did not answer in time (an app pod past apps.pod.ready_timeout_secs)
  | 'timeout'
  // what the request relies on failed on the server's side (a published query failing on its engine)
  | 'bad_gateway';

const STATUS: Record<ErrorCode, number> = {
  bad_request: 400, unauthorized: 401, forbidden: 403, not_found: 404, conflict: 409, gone: 410,
  payload_too_large: 413, too_many_requests: 429, unavailable: 503,
  disabled: 409, refused: 400, timeout: 504, bad_gateway: 502,
};

export class DomainError extends Error {
  readonly status: number;
  constructor(readonly code: ErrorCode, message: string, readonly retryAfterSecs?: number) {
    super(message);
    this.name = 'DomainError';
    this.status = STATUS[code];
  }

  /** The name fastify and route-level error handlers read (a DomainError thrown in a hook keeps its status). */
  get statusCode(): number { return this.status; }
}

export const badRequest = (m: string) => new DomainError('bad_request', m);
export const notFound = (m: string) => new DomainError('not_found', m);
export const conflict = (m: string) => new DomainError('conflict', m);
export const forbidden = (m: string) => new DomainError('forbidden', m);
export const unauthorized = (m: string) => new DomainError('unauthorized', m);

/** True for a PostgreSQL unique violation (SQLSTATE 23505). */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: string }).code === '23505';
}

/** Seconds a client is told to wait (Retry-After) when a dependency cannot be reached. */
export const UNAVAILABLE_RETRY_AFTER_SECS = 5;

/** The services svc runs beside; named in the server log only, never to the client. */
export type Dependency = 'PostgreSQL' | 'Redis' | 'object store' | 'a service it calls';

/** The answer while a dependency cannot be reached: 503 `unavailable` with Retry-After. */
export function unavailable(retryAfterSecs = UNAVAILABLE_RETRY_AFTER_SECS): DomainError {
  return new DomainError('unavailable', `temporarily unavailable: a service this request needs cannot be reached; retry in ${retryAfterSecs} s`, retryAfterSecs);
}

/** A dependency that did not answer in time (thrown by code that bounds its wait), with its name for the log. */
export class DependencyUnavailable extends Error {
  constructor(readonly dependency: Dependency, message: string) { super(message); this.name = 'DependencyUnavailable'; }
}

// Socket-level failures: the peer is down, restarting or unreachable.
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED']);
// node-postgres' own messages for a connection lost or never made.
const PG_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end)/;
// ioredis (and BullMQ over it) when Redis is gone: retries exhausted, offline queue off, closed.
const REDIS_MESSAGES = /^(Reached the max retries per request limit|Stream isn't writeable and enableOfflineQueue|Connection is closed)/;

/** The ports of PostgreSQL and Redis (from their URLs), to name the dependency a bare socket error came from. */
export function dependencyPorts(urls: { database?: string; redis?: string }): { postgres?: number; redis?: number } {
  const port = (url: string | undefined, fallback: number) => {
    try { return url ? Number(new URL(url).port || fallback) : undefined; } catch { return undefined; }
  };
  return { postgres: port(urls.database, 5432), redis: port(urls.redis, 6379) };
}

/**
 * Which dependency an error says cannot be reached, or undefined when it is something else (a bug,
 * a refusal): PostgreSQL connection errors and its shutdown / cannot-connect SQLSTATEs (class 08,
 * 57P01-57P03, 53300), ioredis' retry and offline errors, and the AWS SDK's network errors,
 * timeouts and 5xx answers from the object store.
 */
export function unreachableDependency(err: unknown, ports: { postgres?: number; redis?: number } = {}): Dependency | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  if (err instanceof DependencyUnavailable) return err.dependency;
  const e = err as { name?: string; code?: unknown; message?: string; $metadata?: { httpStatusCode?: number }; errors?: unknown[] };
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (e.$metadata !== undefined) {
    // the AWS SDK: no HTTP answer at all, a timeout, or the store saying it is busy or broken
    const status = e.$metadata.httpStatusCode;
    if (NET_CODES.has(code) || e.name === 'TimeoutError' || e.name === 'RequestTimeout' || (status === undefined && /socket|network|connect/i.test(message)) || (status !== undefined && status >= 500)) return 'object store';
    return undefined;
  }
  if (e.name === 'MaxRetriesPerRequestError' || REDIS_MESSAGES.test(message)) return 'Redis';
  if (/^08[0-9A-Z]{3}$/.test(code) || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300') return 'PostgreSQL';
  if (PG_MESSAGES.test(message)) return 'PostgreSQL';
  // a bare socket error: named by the port it tried when that is the database's or Redis' (the
  // SDK's errors carry $metadata); else another service a route calls (an engine, a provider)
  if (NET_CODES.has(code)) {
    const port = (e as { port?: unknown }).port;
    return port !== undefined && port === ports.postgres ? 'PostgreSQL' : port !== undefined && port === ports.redis ? 'Redis' : 'a service it calls';
  }
  // AggregateError of a connect to several addresses (localhost: ::1 and 127.0.0.1)
  if (Array.isArray(e.errors) && e.errors.length > 0) return unreachableDependency(e.errors[0], ports);
  return undefined;
}
