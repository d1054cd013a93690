// The API client, typed from the service's own OpenAPI document: `svc openapi` is turned into
// ./schema.d.ts by openapi-typescript at build time (scripts/build-ui.sh), so a route that
// changes shape breaks the console's type check, not the user.
//
// Every request is same-origin with the session cookie and never cached; every state-changing
// request echoes the CSRF cookie in the CSRF header (both names come from GET /api/auth/config).
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './schema';

export type { paths };

export class ApiError extends Error {
  /** Seconds to wait before trying again (the answer's Retry-After), when it said. */
  constructor(readonly status: number, readonly code: string, message: string, readonly retryAfter: number | null = null) { super(message); }
}

const csrf = { cookie: 'svc_csrf', header: 'X-Svc-CSRF' };

/** Names from GET /api/auth/config. */
export function useCsrfNames(cookie: string, header: string): void {
  csrf.cookie = cookie;
  csrf.header = header;
}

export function readCookie(name: string): string | null {
  for (const part of document.cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const raw = part.slice(eq + 1).trim();
    try { return decodeURIComponent(raw); } catch { return raw; }
  }
  return null;
}

const csrfHeader: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      const token = readCookie(csrf.cookie);
      if (token) request.headers.set(csrf.header, token);
    }
    return request;
  },
};

export const api = createClient<paths>({
  baseUrl: '',
  credentials: 'same-origin',
  cache: 'no-store',
  headers: { Accept: 'application/json' },
});
api.use(csrfHeader);

type Result<T> = { data?: T; error?: unknown; response: Response };

/** Awaits an openapi-fetch call and returns its data, or throws an ApiError with the server's message. */
export async function ok<T>(call: Promise<Result<T>>): Promise<T> {
  let res: Result<T>;
  try {
    res = await call;
  } catch {
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
  }
  if (!res.response.ok) {
    const body = res.error as { error?: unknown; message?: unknown } | undefined;
    const message = typeof body?.message === 'string' ? body.message : `request failed with status ${res.response.status}`;
    const retry = Number(res.response.headers.get('retry-after'));
    throw new ApiError(res.response.status, typeof body?.error === 'string' ? body.error : 'error', message, Number.isFinite(retry) && retry > 0 ? retry : null);
  }
  return res.data as T;
}

/** Sentence case for API messages, which are lower-case sentences without a final stop. */
export function sentence(message: unknown): string {
  const s = String(message ?? '').trim();
  if (!s) return 'Something went wrong.';
  const first = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(first) ? first : `${first}.`;
}

export const errorText = (err: unknown): string => sentence(err instanceof Error ? err.message : String(err));
