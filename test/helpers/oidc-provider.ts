// A real OpenID provider for tests: the `oidc-provider` package on a loopback port, with one
// confidential client, accounts whose ID tokens carry `email`, `name` and a `groups` claim, PKCE
// required, development login and consent pages, and back-channel logout. Logout tokens are
// minted with the provider's own signing key (or, for the bad cases, another key).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import Provider from 'oidc-provider';

export interface ProviderAccount { email: string; name: string; groups: string[] }

export interface OidcProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUris: string[];
  backchannelLogoutUri?: string;
  accounts: Record<string, ProviderAccount>;
  /** A fixed loopback port (default: any free one). */
  port?: number;
}

export interface LogoutTokenOptions {
  aud?: string;
  iss?: string;
  /** Seconds from now until `exp` (negative: already expired). Default 120. */
  expSecs?: number;
  omitEvents?: boolean;
  nonce?: string;
  /** Signs with a key the provider does not publish (same `kid`). */
  signWithOtherKey?: boolean;
  /** Adds a `sid` claim. */
  sid?: string;
  /** Leaves out `sub` (a token naming only a `sid`). */
  omitSub?: boolean;
  /** Leaves out these claims, e.g. ['iat'] or ['jti']. */
  omitClaims?: string[];
}

export interface OidcProviderHandle {
  issuer: string;
  port: number;
  /** Replaces the groups an account's next ID token carries. */
  setGroups(sub: string, groups: string[]): void;
  /** Replaces an account's email and name in its next ID token. */
  setProfile(sub: string, profile: Partial<Pick<ProviderAccount, 'email' | 'name'>>): void;
  /** A logout token as the provider would send (iss, aud, iat, exp, jti, sub, events). */
  logoutToken(sub: string, opts?: LogoutTokenOptions): Promise<string>;
  /** A logout token made by the provider itself (its own IdToken class, `use: 'logout'`). */
  providerLogoutToken(sub: string, sid?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startOidcProvider(opts: OidcProviderOptions): Promise<OidcProviderHandle> {
  const accounts = new Map(Object.entries(opts.accounts).map(([sub, a]) => [sub, { ...a, groups: [...a.groups] }]));
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const other = await generateKeyPair('RS256', { extractable: true });
  const kid = `k-${randomBytes(4).toString('hex')}`;
  const signingJwk: JWK = { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };

  // Listen first: the issuer names the port.
  let handler: http.RequestListener = (_req, res) => { res.statusCode = 503; res.end(); };
  const server = http.createServer((req, res) => handler(req, res));
  const sockets = new Set<import('node:net').Socket>();
  server.on('connection', (s) => { sockets.add(s); s.on('close', () => sockets.delete(s)); });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const issuer = `http://127.0.0.1:${port}`;

  const provider = new Provider(issuer, {
    clients: [{
      client_id: opts.clientId,
      client_secret: opts.clientSecret,
      redirect_uris: opts.redirectUris,
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      ...(opts.backchannelLogoutUri ? { backchannel_logout_uri: opts.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
    }],
    jwks: { keys: [signingJwk] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    // Scope claims in the ID token too (the service reads the groups from the ID token).
    conformIdTokenClaims: false,
    features: {
      devInteractions: { enabled: true },
      backchannelLogout: { enabled: true },
    },
    pkce: { required: () => true },
    // The provider refuses outgoing calls to loopback addresses (SSRF protection); the service
    // under test is on loopback, so its back-channel logout calls go out without that guard.
    fetch: (url: string | URL, options: RequestInit & { dispatcher?: unknown }) => {
      const { dispatcher: _guard, ...rest } = options;
      return globalThis.fetch(url, rest);
    },
    async findAccount(_ctx: unknown, sub: string) {
      const a = accounts.get(sub);
      if (!a) return undefined;
      return {
        accountId: sub,
        async claims() {
          const cur = accounts.get(sub)!;
          return { sub, email: cur.email, email_verified: true, name: cur.name, groups: [...cur.groups] };
        },
      };
    },
  });
  provider.on('server_error', (_ctx: unknown, err: Error) => { console.error('oidc-provider server_error', err); });
  provider.on('backchannel.error', (_ctx: unknown, err: Error) => { console.error('oidc-provider backchannel.error', err.message); });
  handler = provider.callback();

  return {
    issuer,
    port,
    setGroups(sub, groups) {
      const a = accounts.get(sub);
      if (!a) throw new Error(`no account ${sub}`);
      a.groups = [...groups];
    },
    setProfile(sub, profile) {
      const a = accounts.get(sub);
      if (!a) throw new Error(`no account ${sub}`);
      Object.assign(a, profile);
    },
    async logoutToken(sub, o = {}) {
      const now = Math.floor(Date.now() / 1000);
      const claims: Record<string, unknown> = {
        iss: o.iss ?? issuer,
        aud: o.aud ?? opts.clientId,
        iat: now,
        exp: now + (o.expSecs ?? 120),
        jti: randomUUID(),
        sub,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
      };
      if (o.omitEvents) delete claims.events;
      if (o.nonce !== undefined) claims.nonce = o.nonce;
      if (o.sid !== undefined) claims.sid = o.sid;
      if (o.omitSub) delete claims.sub;
      for (const c of o.omitClaims ?? []) delete claims[c];
      const key = o.signWithOtherKey ? other.privateKey : privateKey;
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'logout+jwt' }).sign(key);
    },
    async providerLogoutToken(sub, sid) {
      const client = await provider.Client.find(opts.clientId);
      const token = new provider.IdToken({ sub }, { client, ctx: undefined });
      token.mask = { sub: null };
      token.set('events', { 'http://schemas.openid.net/event/backchannel-logout': {} });
      token.set('jti', randomUUID());
      if (sid) token.set('sid', sid);
      return token.issue({ use: 'logout' });
    },
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
    },
  };
}

/** A cookie jar for plain-HTTP requests (name and path; enough for the provider's pages). */
export class CookieJar {
  private readonly cookies = new Map<string, { name: string; value: string; path: string }>();

  store(url: URL, res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';').map((p) => p.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      let path = '/';
      let expired = value === '';
      for (const a of attrs) {
        const [k, v = ''] = a.split('=');
        if (k.toLowerCase() === 'path') path = v || '/';
        if (k.toLowerCase() === 'max-age' && Number(v) <= 0) expired = true;
        if (k.toLowerCase() === 'expires' && Date.parse(v) < Date.now()) expired = true;
      }
      if (!attrs.some((a) => a.toLowerCase().startsWith('path='))) path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      const key = `${name}|${path}`;
      if (expired) this.cookies.delete(key);
      else this.cookies.set(key, { name, value, path });
    }
  }

  header(url: URL): string {
    return [...this.cookies.values()]
      .filter((c) => url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`))
      .map((c) => `${c.name}=${c.value}`).join('; ');
  }
}

/**
 * Signs `login` (an account's sub) in at the provider the way a browser would, through the
 * development login and consent pages: starts at the authorization URL, follows redirects, posts
 * the forms, and stops at the first redirect leaving the provider (to the client's redirect URI).
 * Returns that URL (code, state and iss in its query).
 */
export async function signInAtProvider(authorizationUrl: string, login: string, jar = new CookieJar()): Promise<URL> {
  let url = new URL(authorizationUrl);
  const origin = url.origin;
  let method = 'GET';
  let body: URLSearchParams | undefined;
  for (let hop = 0; hop < 20; hop++) {
    const res = await fetch(url, {
      method, body, redirect: 'manual',
      headers: { cookie: jar.header(url), ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    });
    jar.store(url, res);
    if (res.status >= 300 && res.status < 400) {
      await res.arrayBuffer();
      const next = new URL(res.headers.get('location')!, url);
      if (next.origin !== origin) return next;
      url = next; method = 'GET'; body = undefined;
      continue;
    }
    const html = await res.text();
    if (res.status !== 200) throw new Error(`provider answered ${res.status} at ${url.pathname}: ${html.slice(0, 500)}`);
    const action = /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(html)?.[1];
    if (!action) throw new Error(`no form at ${url.pathname}: ${html.slice(0, 500)}`);
    const prompt = /name="prompt" value="([^"]+)"/.exec(html)?.[1];
    url = new URL(action.replace(/&amp;/g, '&'), url);
    method = 'POST';
    body = prompt === 'login'
      ? new URLSearchParams({ prompt: 'login', login, password: 'any' })
      : new URLSearchParams({ prompt: prompt ?? 'consent' });
  }
  throw new Error('too many hops at the provider');
}

/**
 * Signs out at the provider (RP-initiated logout page, "Yes, sign me out") with the browser
 * session in `jar`. The provider sends its back-channel logout tokens to the clients of that
 * session before it answers. Returns the status of the confirmation.
 */
export async function signOutAtProvider(issuer: string, jar: CookieJar): Promise<number> {
  const start = new URL(`${issuer}/session/end`);
  const page = await fetch(start, { headers: { cookie: jar.header(start) }, redirect: 'manual' });
  jar.store(start, page);
  const html = await page.text();
  if (page.status !== 200) throw new Error(`provider answered ${page.status} at /session/end: ${html.slice(0, 300)}`);
  const action = /<form id="op.logoutForm" method="post" action="([^"]+)"/.exec(html)?.[1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  if (!action || !xsrf) throw new Error('no logout form at the provider');
  const confirm = new URL(action.replace(/&amp;/g, '&'), start);
  const res = await fetch(confirm, {
    method: 'POST', redirect: 'manual',
    headers: { cookie: jar.header(confirm), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ xsrf, logout: 'yes' }),
  });
  jar.store(confirm, res);
  await res.arrayBuffer();
  return res.status;
}
