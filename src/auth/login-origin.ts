// Login CSRF (a page on another site signing the victim's browser in as the attacker): local
// sign-in accepts a request only when the browser says it comes from this origin, or, from
// clients that send neither Sec-Fetch-Site nor Origin (scripts, curl), only a JSON body, which
// no cross-site form can produce and no cross-site script can send without a CORS preflight
// this service never answers. A JSON body that a browser marks as cross-site is refused too.
// Pure: the route passes the headers in and turns a reason into a 403.

export type RequestSite = 'same-origin' | 'cross-site' | 'unknown';

type Headers = Record<string, string | string[] | undefined>;

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)?.split(',', 1)[0]?.trim().toLowerCase();

/**
 * Where the request comes from, as the browser tells: Sec-Fetch-Site when sent (every current
 * browser does), else Origin compared with the Host (or X-Forwarded-Host) the request was sent to.
 */
export function requestSite(h: Headers): RequestSite {
  const site = first(h['sec-fetch-site']);
  if (site) return site === 'same-origin' || site === 'none' ? 'same-origin' : 'cross-site';
  const origin = first(h.origin);
  if (!origin) return 'unknown';
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    return 'cross-site'; // "null" (sandboxed frames, redirects) and anything unparsable
  }
  return host !== '' && (host === first(h.host) || host === first(h['x-forwarded-host'])) ? 'same-origin' : 'cross-site';
}

function isJson(contentType: string | string[] | undefined): boolean {
  return first(contentType)?.split(';', 1)[0].trim() === 'application/json';
}

/** Null when a sign-in request may proceed, else why it is refused. */
export function loginRequestRefusal(h: Headers): string | null {
  const site = requestSite(h);
  if (site === 'same-origin') return null;
  if (site === 'cross-site') return 'cross-site sign-in refused: sign in from this service\'s own page';
  return isJson(h['content-type']) ? null : 'sign-in takes a JSON body ({"email","password"} as application/json)';
}
