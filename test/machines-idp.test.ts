// The machine identity provider through a real listening server: tokens obtained with
// `openid-client` as a generic OAuth client (client credentials with client_secret_basic and
// client_secret_post, token exchange), verified with `jose` through the published discovery
// document and key set; every RFC 6749 error code; key rotation; the rate limiter; the clients API.
// The external OpenID provider of the token-exchange tests is a small in-test server publishing a
// discovery document and a JWKS (jose keys): a real remote JWKS verification path.
import { test, before, after, beforeEach, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload, type CryptoKey } from 'jose';
import { startTestApp, startReplica, Browser, type TestApp } from './helpers/app.js';
import { freePort } from './helpers/net.js';
import { initAdministrator } from '../src/bootstrap/init.js';
import { createClient, CLI_ACTOR, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from '../src/idp/clients.js';
import { machines } from '../src/idp/state.js';
import { rotateSigningKeys, ensureActiveKeys, ACCESS_TOKEN_TTL_SECS, RETIRED_KEY_GRACE_SECS, KEY_CACHE_MS } from '../src/idp/keys.js';
import { mintAccessToken } from '../src/idp/tokens.js';
import { query } from './helpers/db.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

// ---- a small external OpenID provider: discovery + JWKS over HTTP ----
interface Provider { issuer: string; sign(claims: JWTPayload, opts?: { key?: CryptoKey; kid?: string }): Promise<string>; stop(): Promise<void> }
async function startProvider(): Promise<Provider> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'provider-key-1', alg: 'RS256', use: 'sig' };
  let issuer = '';
  const server = http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/.well-known/openid-configuration') return res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks`, authorization_endpoint: `${issuer}/auth` }));
    if (req.url === '/jwks') return res.end(JSON.stringify({ keys: [jwk] }));
    res.statusCode = 404; res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    sign: (claims, opts = {}) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: opts.kid ?? 'provider-key-1' }).sign(opts.key ?? privateKey),
    stop: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

let t: TestApp;
let issuer: string;
let provider: Provider;
let admin: Browser;
/** The administrator's browser, signed in again when the moved clock has ended the session. */
async function adminBrowser(): Promise<Browser> {
  if ((await admin.get('/api/me')).statusCode !== 200) assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
  return admin;
}
const nowSecs = () => Math.floor(t.clock.now().getTime() / 1000);

/** A generic OAuth client configured from our discovery document. */
function discover(clientId: string, secret: string, method: 'basic' | 'post' = 'basic') {
  const auth = method === 'basic' ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret);
  return client.discovery(new URL(issuer), clientId, undefined, auth, { execute: [client.allowInsecureRequests] });
}

/** Verifies a token with jose through discovery -> jwks_uri, as a resource server would. */
async function verifyViaDiscovery(token: string, audience: string) {
  const doc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as { issuer: string; jwks_uri: string };
  const jwks = createRemoteJWKSet(new URL(doc.jwks_uri));
  return jwtVerify(token, jwks, { issuer: doc.issuer, audience, currentDate: t.clock.now() });
}

function form(params: Record<string, string | string[]>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const x of [v].flat()) u.append(k, x);
  return u.toString();
}

function tokenRequest(params: Record<string, string | string[]>, opts: { ip?: string; basic?: [string, string]; headers?: Record<string, string>; url?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': opts.ip ?? '192.0.2.1', ...opts.headers };
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(opts.basic[0])}:${encodeURIComponent(opts.basic[1])}`).toString('base64')}`;
  return t.app.inject({ method: 'POST', url: opts.url ?? '/oauth/token', headers, payload: form(params) });
}

function expectError(res: { statusCode: number; json(): { error: string; error_description?: string } }, status: number, error: string, description?: RegExp) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  assert.equal(res.json().error, error);
  assert.equal(typeof res.json().error_description, 'string');
  if (description) assert.match(res.json().error_description!, description);
}

async function newClient(input: { audiences?: string[]; scopes?: string[]; exchange?: boolean; workspace?: string } = {}) {
  return createClient(t.services.db, CLI_ACTOR, {
    name: 'test client', audiences: input.audiences ?? ['svc-catalog'], scopes: input.scopes, workspace: input.workspace ?? null,
    grant_types: input.exchange ? [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] : [GRANT_CLIENT_CREDENTIALS],
  });
}

before(async () => {
  provider = await startProvider();
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  t = await startTestApp({ SVC_IDP__ISSUER: `${issuer}/`, SVC_OIDC__ISSUER_URL: provider.issuer, SVC_OIDC__CLIENT_ID: 'people-app' });
  t.clock.set(new Date());
  await t.app.listen({ port, host: '127.0.0.1' });
  await initAdministrator(t.services.db, { email: ADMIN.email, password: ADMIN.password, force: false });
  admin = new Browser(t, '198.51.100.77');
  assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
});
after(async () => { await t.close(); await provider.stop(); });
// Fresh rate-limit windows (and verified-secret memory) for every test.
beforeEach(() => { t.clock.advance(61_000); });

/** The fields OpenID Connect Discovery 1.0 section 3 (or RFC 8414 section 2) requires, with the values they must have. */
function assertMetadata(doc: Record<string, unknown>, kind: 'oidc' | 'oauth2') {
  const required = kind === 'oidc'
    ? ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri', 'response_types_supported', 'subject_types_supported', 'id_token_signing_alg_values_supported']
    : ['issuer', 'token_endpoint', 'jwks_uri', 'response_types_supported'];
  for (const f of required) assert.ok(doc[f] !== undefined, `${kind}: ${f} is required`);
  for (const f of ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri']) {
    if (doc[f] !== undefined) assert.equal(new URL(doc[f] as string).protocol, 'http:', `${kind}: ${f} is a URL`);
  }
  assert.ok(Array.isArray(doc.response_types_supported) && (doc.response_types_supported as unknown[]).length > 0);
  if (kind === 'oidc') assert.ok((doc.id_token_signing_alg_values_supported as string[]).includes('RS256'), 'OpenID Connect requires RS256');
}

describe('discovery and key set', () => {
  test('the OpenID Connect document names the issuer (trailing slash trimmed), endpoints, grants, auth methods and algorithms, and every field OpenID Connect Discovery requires', async () => {
    const res = await t.app.inject('/.well-known/openid-configuration');
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assertMetadata(doc, 'oidc');
    assert.equal(doc.issuer, issuer);
    assert.equal(doc.token_endpoint, `${issuer}/oauth/token`);
    assert.equal(doc.authorization_endpoint, `${issuer}/oauth/authorize`);
    assert.equal(doc.jwks_uri, `${issuer}/.well-known/jwks.json`);
    assert.deepEqual(doc.grant_types_supported, ['client_credentials', EXCHANGE]);
    assert.deepEqual(doc.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post']);
    assert.deepEqual(doc.id_token_signing_alg_values_supported, ['RS256', 'ES256']);
    assert.deepEqual(doc.access_token_signing_alg_values_supported, ['ES256', 'RS256']);
  });

  test('RFC 8414 metadata at /.well-known/oauth-authorization-server: the same server without the OpenID Connect fields', async () => {
    const oidc = (await t.app.inject('/.well-known/openid-configuration')).json();
    const res = await t.app.inject('/.well-known/oauth-authorization-server');
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assertMetadata(doc, 'oauth2');
    for (const [k, v] of Object.entries(doc)) assert.deepEqual(v, oidc[k], k);
    assert.equal(doc.id_token_signing_alg_values_supported, undefined);
    assert.equal(doc.subject_types_supported, undefined);
  });

  test('openid-client discovers the provider through either document and gets tokens through each', async () => {
    const c = await newClient();
    for (const algorithm of ['oidc', 'oauth2'] as const) {
      const config = await client.discovery(new URL(issuer), c.client_id, undefined, client.ClientSecretBasic(c.client_secret), { algorithm, execute: [client.allowInsecureRequests] });
      assert.equal(config.serverMetadata().token_endpoint, `${issuer}/oauth/token`, algorithm);
      const tokens = await client.clientCredentialsGrant(config);
      assert.equal((await verifyViaDiscovery(tokens.access_token, 'svc-catalog')).payload.sub, c.client_id);
    }
  });

  test('the authorization endpoint refuses every request without redirecting (no client may use it)', async () => {
    for (const method of ['GET', 'POST'] as const) {
      const res = await t.app.inject({ method, url: '/oauth/authorize?response_type=code&client_id=x&redirect_uri=https%3A%2F%2Fevil.example%2F' });
      assert.equal(res.statusCode, 400);
      assert.equal(res.headers.location, undefined);
      assert.equal(res.json().error, 'unauthorized_client');
    }
  });

  test('the key set publishes an ES256 and an RS256 public key (no private parts); both were generated at start', async () => {
    const { keys } = (await t.app.inject('/.well-known/jwks.json')).json() as { keys: Array<Record<string, string>> };
    assert.deepEqual(keys.map((k) => k.alg).sort(), ['ES256', 'RS256']);
    const ec = keys.find((k) => k.alg === 'ES256')!;
    const rsa = keys.find((k) => k.alg === 'RS256')!;
    assert.equal(ec.kty, 'EC');
    assert.equal(ec.crv, 'P-256');
    assert.equal(rsa.kty, 'RSA');
    assert.equal(Buffer.from(rsa.n, 'base64url').length * 8, 2048);
    for (const k of keys) {
      assert.equal(k.use, 'sig');
      for (const priv of ['d', 'p', 'q', 'dp', 'dq', 'qi']) assert.equal(k[priv], undefined, priv);
    }
    const rows = await query<{ kid: string; retired_at: Date | null }>(t.db.url, 'SELECT kid, retired_at FROM idp_signing_keys ORDER BY kid');
    assert.deepEqual(rows.map((r) => [r.kid, r.retired_at]), keys.map((k) => [k.kid, null]).sort());
  });

  test('a client with token_signing_alg RS256 gets RS256 tokens that jose verifies through discovery; others get ES256', async () => {
    const created = await (await adminBrowser()).post('/api/clients', { name: 'legacy engine', audiences: ['engine-rs'], token_signing_alg: 'RS256' });
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json().token_signing_alg, 'RS256');
    const config = await discover(created.json().client_id, created.json().client_secret);
    const tokens = await client.clientCredentialsGrant(config);
    const { protectedHeader, payload } = await verifyViaDiscovery(tokens.access_token, 'engine-rs');
    assert.equal(protectedHeader.alg, 'RS256');
    assert.equal(payload.sub, created.json().client_id);
    const doc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as { jwks_uri: string };
    await jwtVerify(tokens.access_token, createRemoteJWKSet(new URL(doc.jwks_uri)), { algorithms: ['RS256'], currentDate: t.clock.now() });
    const es = await newClient();
    assert.equal(decodeProtectedHeader((await client.clientCredentialsGrant(await discover(es.client_id, es.client_secret))).access_token).alg, 'ES256');
    assert.equal((await (await adminBrowser()).post('/api/clients', { name: 'x', audiences: ['a'], token_signing_alg: 'HS256' })).statusCode, 400);
  });
});

describe('client credentials through openid-client', () => {
  test('client_secret_basic: a JWT with the stated claims, verified with jose through discovery', async () => {
    const c = await newClient({ audiences: ['svc-catalog', 'engine-a'], workspace: 'default' });
    const config = await discover(c.client_id, c.client_secret, 'basic');
    assert.equal(config.serverMetadata().token_endpoint, `${issuer}/oauth/token`);
    const tokens = await client.clientCredentialsGrant(config, { audience: 'engine-a', scope: 'read write' });
    assert.equal(tokens.token_type, 'bearer');
    assert.equal(tokens.expires_in, ACCESS_TOKEN_TTL_SECS);
    assert.equal(tokens.scope, 'read write');
    const { payload, protectedHeader } = await verifyViaDiscovery(tokens.access_token, 'engine-a');
    assert.equal(protectedHeader.alg, 'ES256');
    assert.ok(protectedHeader.kid);
    assert.equal(payload.iss, issuer);
    assert.equal(payload.sub, c.client_id);
    assert.equal(payload.aud, 'engine-a');
    assert.equal(payload.client_id, c.client_id);
    assert.equal(payload.scope, 'read write');
    assert.equal(payload.workspace, 'default');
    assert.equal(payload.iat, nowSecs());
    assert.equal(payload.exp, nowSecs() + ACCESS_TOKEN_TTL_SECS);
    assert.match(String(payload.jti), /^[0-9a-f-]{36}$/);
  });

  test('client_secret_post with `resource` (RFC 8707); the only audience is the default', async () => {
    const c = await newClient({ audiences: ['svc-catalog'] });
    const config = await discover(c.client_id, c.client_secret, 'post');
    const viaResource = await client.clientCredentialsGrant(config, { resource: 'svc-catalog' });
    assert.equal((await verifyViaDiscovery(viaResource.access_token, 'svc-catalog')).payload.aud, 'svc-catalog');
    const byDefault = await client.clientCredentialsGrant(config);
    assert.equal(decodeJwt(byDefault.access_token).aud, 'svc-catalog');
  });

  test('several audiences at once give an array aud', async () => {
    const c = await newClient({ audiences: ['a1', 'a2', 'a3'] });
    const tokens = await client.clientCredentialsGrant(await discover(c.client_id, c.client_secret), new URLSearchParams([['audience', 'a1'], ['audience', 'a3']]));
    assert.deepEqual(decodeJwt(tokens.access_token).aud, ['a1', 'a3']);
  });

  test('answers carry Cache-Control: no-store and Pragma: no-cache', async () => {
    const c = await newClient();
    const ok = await tokenRequest({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret });
    assert.equal(ok.statusCode, 200);
    assert.equal(ok.headers['cache-control'], 'no-store');
    assert.equal(ok.headers.pragma, 'no-cache');
    const bad = await tokenRequest({ grant_type: 'client_credentials' });
    assert.equal(bad.headers['cache-control'], 'no-store');
  });
});

describe('token exchange (RFC 8693) through openid-client', () => {
  test('an ID token of the configured OpenID provider becomes a token for the person, act naming the client', async () => {
    const c = await newClient({ audiences: ['engine-a', 'svc-catalog'], exchange: true });
    const idToken = await provider.sign({ iss: provider.issuer, sub: 'person-123', aud: 'people-app', email: 'p@example.test', iat: nowSecs(), exp: nowSecs() + 300 });
    const config = await discover(c.client_id, c.client_secret);
    const res = await client.genericGrantRequest(config, EXCHANGE, { subject_token: idToken, subject_token_type: ID_TOKEN, audience: 'engine-a' });
    assert.equal(res.issued_token_type, ACCESS_TOKEN);
    assert.equal(res.token_type, 'bearer');
    const { payload } = await verifyViaDiscovery(res.access_token, 'engine-a');
    assert.equal(payload.sub, 'person-123');
    assert.deepEqual(payload.act, { sub: c.client_id });
    assert.equal(payload.client_id, c.client_id);
    assert.equal(payload.email, 'p@example.test');
    assert.equal(payload.iss, issuer);
  });

  test('a provider token is exchanged only when its aud names this service (oidc.client_id): ID and access tokens alike', async () => {
    const c = await newClient({ audiences: ['engine-a'], exchange: true });
    const config = await discover(c.client_id, c.client_secret, 'post');
    const base = { iss: provider.issuer, sub: 'person-9', iat: nowSecs(), exp: nowSecs() + 300 };
    for (const type of [ACCESS_TOKEN, ID_TOKEN]) {
      const foreign = await provider.sign({ ...base, aud: 'https://provider-api' });
      await assert.rejects(client.genericGrantRequest(config, EXCHANGE, { subject_token: foreign, subject_token_type: type }),
        (err: unknown) => err instanceof client.ResponseBodyError && err.error === 'invalid_grant' && /aud/.test(err.error_description ?? ''), type);
      const ours = await provider.sign({ ...base, aud: ['https://provider-api', 'people-app'] });
      const res = await client.genericGrantRequest(config, EXCHANGE, { subject_token: ours, subject_token_type: type });
      assert.equal(decodeJwt(res.access_token).sub, 'person-9');
    }
  });

  test('idp.subject_token_audiences replaces oidc.client_id as the audiences a provider token must name', async () => {
    const t2 = await startTestApp({ SVC_OIDC__ISSUER_URL: provider.issuer, SVC_OIDC__CLIENT_ID: 'people-app', SVC_IDP__SUBJECT_TOKEN_AUDIENCES: '["svc-exchange","svc-exchange-2"]' });
    try {
      t2.clock.set(t.clock.now());
      const c = await createClient(t2.services.db, CLI_ACTOR, { name: 'x', audiences: ['engine-a'], grant_types: [GRANT_TOKEN_EXCHANGE] });
      const exchange = async (aud: string | string[]) => t2.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({
          grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, client_id: c.client_id, client_secret: c.client_secret,
          subject_token: await provider.sign({ iss: provider.issuer, sub: 'p', aud, iat: nowSecs(), exp: nowSecs() + 60 }),
        }),
      });
      assert.equal((await exchange('people-app')).json().error, 'invalid_grant');
      assert.equal((await exchange('svc-exchange-2')).statusCode, 200);
      assert.equal((await exchange(['x', 'svc-exchange'])).statusCode, 200);
    } finally {
      await t2.close();
    }
  });

  test('a delegated token of this service can be exchanged again by a client it names in aud: narrower, nested act, never outliving it', async () => {
    const b = await newClient({ audiences: ['svc-catalog', 'engine-b'], exchange: true });
    const a = await newClient({ audiences: [b.client_id, 'svc-catalog'], exchange: true });
    const idToken = await provider.sign({ iss: provider.issuer, sub: 'person-7', aud: 'people-app', iat: nowSecs(), exp: nowSecs() + 300 });
    const first = await client.genericGrantRequest(await discover(a.client_id, a.client_secret), EXCHANGE,
      new URLSearchParams([['subject_token', idToken], ['subject_token_type', ID_TOKEN], ['audience', b.client_id], ['audience', 'svc-catalog'], ['scope', 'read write']]));
    assert.equal(first.expires_in, 300, 'never outlives the provider token');
    const second = await client.genericGrantRequest(await discover(b.client_id, b.client_secret), EXCHANGE, { subject_token: first.access_token, subject_token_type: ACCESS_TOKEN, audience: 'svc-catalog', scope: 'read' });
    const p = (await verifyViaDiscovery(second.access_token, 'svc-catalog')).payload;
    assert.equal(p.sub, 'person-7');
    assert.deepEqual(p.act, { sub: b.client_id, act: { sub: a.client_id } });
    assert.equal(p.scope, 'read');
    assert.equal(p.exp, decodeJwt(first.access_token).exp);
    const own = await client.clientCredentialsGrant(await discover(a.client_id, a.client_secret), { audience: 'svc-catalog' });
    const res = await tokenRequest({ grant_type: EXCHANGE, subject_token: own.access_token, subject_token_type: ACCESS_TOKEN, audience: 'svc-catalog' }, { basic: [b.client_id, b.client_secret] });
    assert.equal(res.statusCode, 400);
    assert.equal(res.json().error, 'invalid_grant');
  });

  test('a re-exchanged token never gains: scope, audience, workspace and lifetime stay within the subject token, and only its recipients may exchange it', async () => {
    const t1 = nowSecs();
    const b = await newClient({ audiences: ['svc-catalog', 'engine-b'], exchange: true });
    const a = await newClient({ audiences: [b.client_id, 'svc-catalog'], exchange: true, workspace: 'default' });
    const idToken = await provider.sign({ iss: provider.issuer, sub: 'person-8', aud: 'people-app', iat: t1, exp: t1 + 3000 });
    const first = await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, audience: [b.client_id, 'svc-catalog'], scope: 'read' }, { basic: [a.client_id, a.client_secret] });
    assert.equal(first.statusCode, 200, first.body);
    const subject = first.json().access_token as string;
    assert.equal(decodeJwt(subject).workspace, 'default');
    const again = (client: { client_id: string; client_secret: string }, extra: Record<string, string | string[]> = {}) =>
      tokenRequest({ grant_type: EXCHANGE, subject_token: subject, subject_token_type: ACCESS_TOKEN, ...extra }, { basic: [client.client_id, client.client_secret] });
    expectError(await again(b, { audience: 'engine-b' }), 400, 'invalid_target', /beyond the subject token/);
    expectError(await again(b, { audience: 'svc-catalog', scope: 'read write' }), 400, 'invalid_scope', /beyond the subject token's: write/);
    // not a recipient: a client with the grant that the token neither was issued to nor names
    const stranger = await newClient({ audiences: ['svc-catalog'], exchange: true });
    expectError(await again(stranger, { audience: 'svc-catalog' }), 400, 'invalid_grant', /not issued to this client/);
    // a client of another workspace cannot move it there; a client of none keeps the subject's
    await (await adminBrowser()).post('/api/workspaces', { slug: 'other-ws' });
    const elsewhere = await newClient({ audiences: ['svc-catalog'], exchange: true, workspace: 'other-ws' });
    const a2 = await newClient({ audiences: [elsewhere.client_id, 'svc-catalog'], exchange: true, workspace: 'default' });
    const named = await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, audience: [elsewhere.client_id, 'svc-catalog'] }, { basic: [a2.client_id, a2.client_secret] });
    assert.equal(named.statusCode, 200, named.body);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: named.json().access_token, subject_token_type: ACCESS_TOKEN, audience: 'svc-catalog' }, { basic: [elsewhere.client_id, elsewhere.client_secret] }),
      400, 'invalid_grant', /bound to workspace default/);
    // later in the subject token's life: the new token ends when it ends, with the subject's workspace
    t.clock.advance(3000_000 - 600_000);
    const ok = await again(b, { audience: 'svc-catalog' });
    assert.equal(ok.statusCode, 200, ok.body);
    const p = (await verifyViaDiscovery(ok.json().access_token, 'svc-catalog')).payload;
    assert.equal(p.exp, decodeJwt(subject).exp);
    assert.equal(ok.json().expires_in, 600);
    assert.equal(p.workspace, 'default');
    assert.equal(p.scope, 'read');
  });
});

describe('every error code (RFC 6749 5.2, RFC 8707, RFC 8693)', () => {

  test('invalid_request: missing grant_type, JSON body, repeated parameter, query string, two auth methods, missing audience', async () => {
    const c = await newClient({ audiences: ['x', 'y'] });
    const basic: [string, string] = [c.client_id, c.client_secret];
    expectError(await tokenRequest({ client_id: c.client_id, client_secret: c.client_secret }), 400, 'invalid_request', /grant_type is required/);
    expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ grant_type: 'client_credentials' }) }), 400, 'invalid_request', /x-www-form-urlencoded/);
    expectError(await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json' }, payload: '{"grant_type":' }), 400, 'invalid_request');
    expectError(await tokenRequest({ grant_type: ['client_credentials', 'client_credentials'] }, { basic }), 400, 'invalid_request', /more than once/);
    expectError(await tokenRequest({ grant_type: 'client_credentials' }, { basic, url: `/oauth/token?client_secret=${c.client_secret}` }), 400, 'invalid_request', /query string/);
    expectError(await tokenRequest({ grant_type: 'client_credentials', client_secret: c.client_secret }, { basic }), 400, 'invalid_request', /one client authentication method/);
    expectError(await tokenRequest({ grant_type: 'client_credentials' }, { basic }), 400, 'invalid_request', /audience is required/);
  });

  test('invalid_client: 401 with WWW-Authenticate for no credentials, wrong secret, unknown client, bad Basic header', async () => {
    const c = await newClient();
    const cases = [
      await tokenRequest({ grant_type: 'client_credentials' }),
      await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, 'svcs_wrong'] }),
      await tokenRequest({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: 'nope' }),
      await tokenRequest({ grant_type: 'client_credentials', client_id: 'svc-unknown', client_secret: c.client_secret }),
      await tokenRequest({ grant_type: 'client_credentials' }, { headers: { authorization: 'Basic !!!' } }),
      await tokenRequest({ grant_type: 'client_credentials' }, { headers: { authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` } }),
      await tokenRequest({ grant_type: 'client_credentials' }, { headers: { authorization: 'Bearer something' } }),
    ];
    for (const res of cases) {
      expectError(res, 401, 'invalid_client');
      assert.match(String(res.headers['www-authenticate']), /^Basic realm="svc"/);
    }
    // openid-client sees the challenge
    const config = await discover(c.client_id, 'svcs_wrong');
    await assert.rejects(client.clientCredentialsGrant(config), (err: unknown) => {
      assert.ok(err instanceof client.WWWAuthenticateChallengeError, String(err));
      assert.equal(err.response.status, 401);
      assert.equal(err.cause[0].scheme, 'basic');
      return true;
    });
  });

  test('unsupported_grant_type and unauthorized_client', async () => {
    const c = await newClient();
    expectError(await tokenRequest({ grant_type: 'password', username: 'a', password: 'b' }, { basic: [c.client_id, c.client_secret] }), 400, 'unsupported_grant_type');
    expectError(await tokenRequest({ grant_type: 'authorization_code', code: 'x' }, { basic: [c.client_id, c.client_secret] }), 400, 'unsupported_grant_type');
    // token exchange is opt-in per client
    const idToken = await provider.sign({ iss: provider.issuer, sub: 'p', aud: 'people-app', iat: nowSecs(), exp: nowSecs() + 60 });
    await assert.rejects(
      client.genericGrantRequest(await discover(c.client_id, c.client_secret), EXCHANGE, { subject_token: idToken, subject_token_type: ID_TOKEN }),
      (err: unknown) => err instanceof client.ResponseBodyError && err.error === 'unauthorized_client' && err.status === 400,
    );
  });

  test('invalid_scope: a scope outside the client\'s list, or malformed', async () => {
    const c = await newClient({ scopes: ['catalog', 'read'] });
    const config = await discover(c.client_id, c.client_secret);
    assert.equal((await client.clientCredentialsGrant(config, { scope: 'read' })).scope, 'read');
    assert.equal((await client.clientCredentialsGrant(config)).scope, 'catalog read', 'no scope asked: the allowed ones');
    await assert.rejects(client.clientCredentialsGrant(config, { scope: 'read admin' }),
      (err: unknown) => err instanceof client.ResponseBodyError && err.error === 'invalid_scope' && err.status === 400 && /admin/.test(err.error_description ?? ''));
    expectError(await tokenRequest({ grant_type: 'client_credentials', scope: 'bad"scope' }, { basic: [c.client_id, c.client_secret] }), 400, 'invalid_scope');
  });

  test('invalid_target: an audience or resource the client may not use', async () => {
    const c = await newClient({ audiences: ['svc-catalog'] });
    const config = await discover(c.client_id, c.client_secret);
    await assert.rejects(client.clientCredentialsGrant(config, { audience: 'engine-b' }),
      (err: unknown) => err instanceof client.ResponseBodyError && err.error === 'invalid_target' && err.status === 400);
    expectError(await tokenRequest({ grant_type: 'client_credentials', resource: 'https://elsewhere' }, { basic: [c.client_id, c.client_secret] }), 400, 'invalid_target');
  });

  test('invalid_grant: unverifiable, expired, foreign, untrusted or mis-addressed subject tokens', async () => {
    const c = await newClient({ audiences: ['engine-a'], exchange: true });
    const basic: [string, string] = [c.client_id, c.client_secret];
    const exchange = (subject_token: string, subject_token_type = ID_TOKEN) => tokenRequest({ grant_type: EXCHANGE, subject_token, subject_token_type }, { basic });
    const claims = { iss: provider.issuer, sub: 'p', aud: 'people-app', iat: nowSecs(), exp: nowSecs() + 60 };
    expectError(await exchange('not-a-jwt'), 400, 'invalid_grant', /not a JWT/);
    expectError(await exchange(await provider.sign({ ...claims, exp: nowSecs() - 10 })), 400, 'invalid_grant', /expired/);
    const other = await generateKeyPair('RS256');
    expectError(await exchange(await provider.sign(claims, { key: other.privateKey })), 400, 'invalid_grant', /signature/);
    expectError(await exchange(await provider.sign({ ...claims, iss: 'https://evil.example' })), 400, 'invalid_grant', /not trusted/);
    expectError(await exchange(await provider.sign({ ...claims, aud: 'another-app' })), 400, 'invalid_grant', /aud/);
    // a token minted with this service's key but another issuer is not ours
    const m = machines(t.services);
    const foreignIss = await mintAccessToken(m.keys, t.services.clock, 'https://other-issuer', { sub: 'p', audiences: ['x'], clientId: 'c', scope: '', act: { sub: 'c' } });
    expectError(await exchange(foreignIss.token, ACCESS_TOKEN), 400, 'invalid_grant', /not trusted/);
  });

  test('token exchange parameters: subject_token and its type required, types checked, actor_token refused', async () => {
    const c = await newClient({ audiences: ['engine-a'], exchange: true });
    const basic: [string, string] = [c.client_id, c.client_secret];
    const idToken = await provider.sign({ iss: provider.issuer, sub: 'p', aud: 'people-app', iat: nowSecs(), exp: nowSecs() + 60 });
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token_type: ID_TOKEN }, { basic }), 400, 'invalid_request', /subject_token is required/);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken }, { basic }), 400, 'invalid_request', /subject_token_type is required/);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: 'urn:ietf:params:oauth:token-type:saml2' }, { basic }), 400, 'invalid_request', /subject_token_type/);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, requested_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' }, { basic }), 400, 'invalid_request', /requested_token_type/);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, actor_token: idToken, actor_token_type: ID_TOKEN }, { basic }), 400, 'invalid_request', /actor_token/);
    expectError(await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, audience: 'svc-catalog' }, { basic }), 400, 'invalid_target');
    const ok = await tokenRequest({ grant_type: EXCHANGE, subject_token: idToken, subject_token_type: ID_TOKEN, requested_token_type: ACCESS_TOKEN }, { basic });
    assert.equal(ok.statusCode, 200);
  });

  test('temporarily_unavailable (503) when the OpenID provider cannot be reached', async () => {
    const closed = await freePort();
    const t2 = await startTestApp({ SVC_OIDC__ISSUER_URL: `http://127.0.0.1:${closed}`, SVC_OIDC__CLIENT_ID: 'people-app' });
    try {
      const c = await createClient(t2.services.db, CLI_ACTOR, { name: 'x', audiences: ['engine-a'], grant_types: [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] });
      const token = await provider.sign({ iss: `http://127.0.0.1:${closed}`, sub: 'p', aud: 'people-app', iat: nowSecs(), exp: nowSecs() + 60 });
      const res = await t2.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: form({ grant_type: EXCHANGE, subject_token: token, subject_token_type: ID_TOKEN, client_id: c.client_id, client_secret: c.client_secret }),
      });
      expectError(res, 503, 'temporarily_unavailable', /discovery document/);
    } finally {
      await t2.close();
    }
  });
});

describe('rate limit (rate_limit.token_*: 60 per 60 s, 60 s lockout)', () => {
  test('wrong secrets count: the 61st request in the window gets 429 with Retry-After, for that client from any address', async () => {
    const c = await newClient();
    for (let i = 0; i < 60; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, `svcs_guess${i}`], ip: `10.1.${i}.1` });
      assert.equal(r.statusCode, 401, `attempt ${i + 1}`);
    }
    const blocked = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.200.1' });
    assert.equal(blocked.statusCode, 429);
    assert.equal(blocked.headers['retry-after'], '60');
    assert.equal(blocked.json().error, 'too_many_requests');
    assert.equal(blocked.headers['cache-control'], 'no-store');
    await assert.rejects(client.clientCredentialsGrant(await discover(c.client_id, c.client_secret)),
      (err: unknown) => err instanceof client.ResponseBodyError && err.status === 429 && err.error === 'too_many_requests');
    t.clock.advance(59_000);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.201.1' })).statusCode, 429, 'still blocked');
    t.clock.advance(2_000);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '10.1.202.1' })).statusCode, 200, 'counting again');
  });

  test('per address: 60 requests of unknown clients from one address, then 429 there only', async () => {
    for (let i = 0; i < 60; i++) assert.equal((await tokenRequest({ grant_type: 'client_credentials', client_id: `svc-x${i}`, client_secret: 'no' }, { ip: '203.0.113.50' })).statusCode, 401);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { ip: '203.0.113.50' })).statusCode, 429);
    const c = await newClient();
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '203.0.113.51' })).statusCode, 200);
  });

  test('a 1 MB client_id is counted under its hash: 300 such requests keep the table small', async () => {
    const limiter = t.services.tokenLimiter;
    const before = limiter.bytes;
    for (let i = 0; i < 300; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials', client_id: `${i}-${'x'.repeat(1_000_000)}`, client_secret: 'no' }, { ip: `198.18.${i >> 8}.${i & 255}` });
      assert.equal(r.statusCode, 401);
      assert.ok(r.body.length < 1000, 'the answer does not echo the id');
    }
    assert.ok(limiter.bytes - before < 300 * 2 * 500, `300 requests grew the table by ${limiter.bytes - before} bytes`);
  });

  test('malformed requests count for their address too', async () => {
    for (let i = 0; i < 30; i++) assert.equal((await tokenRequest({ scope: 'x' }, { ip: '203.0.113.60' })).statusCode, 400);
    for (let i = 0; i < 30; i++) {
      const r = await t.app.inject({ method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.60' }, payload: '{' });
      assert.equal(r.statusCode, 400);
    }
    const r = await tokenRequest({ grant_type: 'client_credentials' }, { ip: '203.0.113.60' });
    assert.equal(r.statusCode, 429);
    assert.equal(r.json().error, 'too_many_requests');
  });

  test('a repeated, already verified secret is not counted: 100 requests all succeed; guesses are still counted', async () => {
    const c = await newClient();
    for (let i = 0; i < 100; i++) {
      const r = await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '198.51.100.20' });
      assert.equal(r.statusCode, 200, `request ${i + 1}`);
    }
    // The first verification counted once; 59 guesses fill the window; the 60th guess is refused.
    for (let i = 0; i < 59; i++) assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, `svcs_g${i}`], ip: '198.51.100.20' })).statusCode, 401, `guess ${i + 1}`);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, 'svcs_g60'], ip: '198.51.100.20' })).statusCode, 429);
    // A blocked key stays blocked, even for the verified secret.
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret], ip: '198.51.100.21' })).statusCode, 429);
  });

  test('through openid-client: 100 token requests with the same secret all succeed', async () => {
    const c = await newClient();
    const config = await discover(c.client_id, c.client_secret, 'post');
    for (let i = 0; i < 100; i++) await client.clientCredentialsGrant(config);
  });

  test('a rotated secret is no longer "verified": it is refused and counted', async () => {
    const c = await newClient();
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret] })).statusCode, 200);
    const rotated = await (await adminBrowser()).post(`/api/clients/${c.client_id}/rotate`);
    assert.equal(rotated.statusCode, 200);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret] })).statusCode, 401);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, rotated.json().client_secret] })).statusCode, 200);
  });
});

describe('client cache', () => {
  test('a secret rotated or a client deleted through one replica\'s API stops working on another that answered from its cache', async () => {
    const other = await startReplica(t);
    try {
      const c = await newClient();
      const there = (secret: string) => other.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': '192.0.2.90' },
        payload: form({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: secret }),
      });
      assert.equal((await there(c.client_secret)).statusCode, 200, 'read and cached there');
      const rotated = await (await adminBrowser()).post(`/api/clients/${c.client_id}/rotate`);
      assert.equal(rotated.statusCode, 200);
      await eventually(async () => (await there(c.client_secret)).statusCode === 401, 'the old secret is refused on the other replica');
      assert.equal((await there(rotated.json().client_secret)).statusCode, 200);
      assert.equal((await (await adminBrowser()).delete(`/api/clients/${c.client_id}`)).statusCode, 204);
      await eventually(async () => (await there(rotated.json().client_secret)).statusCode === 401, 'a deleted client is refused on the other replica');
    } finally {
      await other.close();
    }
  });
});

/** Asks until `ok`: an invalidation travels over Redis, so it lands a moment after the change (the clock is not moved). */
async function eventually(ok: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`${what}: not within 5 s of real time (the cached client was not invalidated)`);
}

describe('key rotation', () => {
  test('new keys sign after rotation (picked up within the cache time); the old keys stay published until their tokens expired', async () => {
    const es = await newClient();
    const rs = await createClient(t.services.db, CLI_ACTOR, { name: 'rs', audiences: ['svc-catalog'], token_signing_alg: 'RS256' });
    const get = async (c: { client_id: string; client_secret: string }) => (await tokenRequest({ grant_type: 'client_credentials' }, { basic: [c.client_id, c.client_secret] })).json().access_token as string;
    const before = [await get(es), await get(rs)];
    const oldKids = before.map((tk) => decodeProtectedHeader(tk).kid!);
    // Rotation by another process (`svc idp rotate-key` writes the table).
    const r = await rotateSigningKeys(t.services.db, machines(t.services).sealer, t.clock.now());
    assert.deepEqual(r.retired.map((x) => [x.alg, x.kid]), [['ES256', oldKids[0]], ['RS256', oldKids[1]]]);
    assert.deepEqual(r.created.map((x) => x.alg), ['ES256', 'RS256']);
    t.clock.advance(KEY_CACHE_MS + 1_000);
    const after = [await get(es), await get(rs)];
    assert.deepEqual(after.map((tk) => decodeProtectedHeader(tk).kid), r.created.map((x) => x.kid));
    const kids = async () => ((await t.app.inject('/.well-known/jwks.json')).json().keys as Array<{ kid: string }>).map((k) => k.kid).sort();
    assert.deepEqual(await kids(), [...oldKids, ...r.created.map((x) => x.kid)].sort());
    // All verify through discovery and the published key set.
    for (const tk of [...before, ...after]) assert.equal((await verifyViaDiscovery(tk, 'svc-catalog')).protectedHeader.kid, decodeProtectedHeader(tk).kid);
    // Published until retirement + token lifetime + grace, gone after.
    t.clock.advance((ACCESS_TOKEN_TTL_SECS + RETIRED_KEY_GRACE_SECS) * 1000 - KEY_CACHE_MS - 5_000);
    assert.equal((await kids()).length, 4);
    t.clock.advance(10_000);
    assert.deepEqual(await kids(), r.created.map((x) => x.kid).sort());
  });

  test('two replicas creating the first keys at once end up with one active key per algorithm', async () => {
    const t2 = await startTestApp();
    try {
      await query(t2.db.url, 'DELETE FROM idp_signing_keys');
      const created = await Promise.all(Array.from({ length: 5 }, () => ensureActiveKeys(t2.services.db, machines(t2.services).sealer, new Date())));
      assert.deepEqual(created.map((k) => k.length).sort(), [0, 0, 0, 0, 2]);
      const rows = await query<{ alg: string }>(t2.db.url, 'SELECT alg FROM idp_signing_keys WHERE retired_at IS NULL ORDER BY alg');
      assert.deepEqual(rows.map((r) => r.alg), ['ES256', 'RS256']);
    } finally {
      await t2.close();
    }
  });
});

describe('clients API (platform_admin)', () => {
  beforeEach(async () => { await adminBrowser(); });
  test('create, list, rotate, delete; the secret appears only in create and rotate answers; governance audited', async () => {
    const created = await admin.post('/api/clients', { name: 'engine', audiences: ['svc-catalog', 'engine-a'], grant_types: ['client_credentials', EXCHANGE], workspace: 'default' });
    assert.equal(created.statusCode, 201, created.body);
    const c = created.json();
    assert.match(c.client_id, /^svc-/);
    assert.match(c.client_secret, /^svcs_[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(c.audiences, ['svc-catalog', 'engine-a']);
    assert.equal(c.workspace, 'default');
    const list = await admin.get('/api/clients');
    const listed = list.json().clients.find((x: { client_id: string }) => x.client_id === c.client_id);
    assert.ok(listed);
    assert.equal(listed.client_secret, undefined);
    assert.ok(!list.body.includes(c.client_secret));
    const rotated = await admin.post(`/api/clients/${c.client_id}/rotate`);
    assert.notEqual(rotated.json().client_secret, c.client_secret);
    const del = await admin.delete(`/api/clients/${c.client_id}`);
    assert.equal(del.statusCode, 204);
    assert.equal((await admin.delete(`/api/clients/${c.client_id}`)).statusCode, 404);
    assert.equal((await tokenRequest({ grant_type: 'client_credentials', audience: 'svc-catalog' }, { basic: [c.client_id, rotated.json().client_secret] })).statusCode, 401);
    const audit = await admin.get('/api/audit?kind=governance&limit=50');
    const actions = audit.json().events.filter((e: { target: string }) => e.target === `client:${c.client_id}`).map((e: { action: string; actor: string }) => [e.action, e.actor]);
    assert.deepEqual(actions, [['client.delete', ADMIN.email], ['client.rotate', ADMIN.email], ['client.create', ADMIN.email]]);
    assert.ok(!audit.body.includes(c.client_secret));
  });

  test('validation: no audience, unknown workspace, unknown grant type; non-admins are refused', async () => {
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: [] })).statusCode, 400);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a b'] })).statusCode, 400);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a'], workspace: 'nope' })).statusCode, 404);
    assert.equal((await admin.post('/api/clients', { name: 'x', audiences: ['a'], grant_types: ['password'] })).statusCode, 400);
    assert.equal((await new Browser(t, '198.51.100.99').get('/api/clients')).statusCode, 401);
    await admin.post('/api/users', { email: 'user@example.test', password: 'user-password-1' });
    const user = new Browser(t, '198.51.100.98');
    assert.equal((await user.login('user@example.test', 'user-password-1')).statusCode, 200);
    assert.equal((await user.get('/api/clients')).statusCode, 403);
    assert.equal((await user.post('/api/clients', { name: 'x', audiences: ['a'] })).statusCode, 403);
  });

  test('the token endpoint ignores the session layer: a browser with a session cookie and no CSRF header can still post', async () => {
    const c = await newClient();
    const res = await admin.request('POST', '/oauth/token', form({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }),
      { csrf: false, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assert.equal(res.statusCode, 200, res.body);
  });
});
