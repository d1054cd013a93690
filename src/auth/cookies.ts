// Cookie names and the attributes their names demand. Browsers accept a cookie named `__Host-...`
// only with Secure, Path=/ and no Domain (so neither a sibling subdomain nor plain HTTP can set or
// overwrite it), and `__Secure-...` only with Secure.
// - The session and CSRF cookies keep the names SPEC fixes (`session.cookie_name`,
//   `csrf.cookie_name`); an operator may configure prefixed names, and they then get Secure
//   whatever `session.secure` says (every cookie here already has Path=/ and no Domain).
// - The OIDC state cookie, whose name the spec does not fix, is `__Host-svc_oidc` (Path=/) when
//   `session.secure` is true, else `svc_oidc` limited to the sign-in routes.
export const STATE_COOKIE_BASE = 'svc_oidc';
export const STATE_COOKIE_PATH = '/api/auth/oidc';

/** Does the name carry a prefix that browsers honour only on Secure cookies? (They match it case-insensitively.) */
export function prefixNeedsSecure(name: string): boolean {
  return /^__(host|secure)-/i.test(name);
}

/** The Secure attribute of a cookie of that name. */
export function secureFlag(name: string, sessionSecure: boolean): boolean {
  return sessionSecure || prefixNeedsSecure(name);
}

/** Name and path of the OIDC state cookie. */
export function stateCookie(sessionSecure: boolean): { name: string; path: string } {
  return sessionSecure ? { name: `__Host-${STATE_COOKIE_BASE}`, path: '/' } : { name: STATE_COOKIE_BASE, path: STATE_COOKIE_PATH };
}
