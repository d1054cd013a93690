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
