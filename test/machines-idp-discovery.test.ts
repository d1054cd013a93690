// The machine identity provider through a real listening server (test/helpers/machines-idp.ts):
// its discovery documents and key set, client credentials obtained with `openid-client` as a
// generic OAuth client (client_secret_basic and client_secret_post) and verified with `jose`
// through the published discovery document, and key rotation.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { startTestApp } from './helpers/app.js';
import { EXCHANGE, t, issuer, adminBrowser, nowSecs, discover, verifyViaDiscovery, tokenRequest, newClient, useIdpApp } from './helpers/machines-idp.js';
import { createClient, CLI_ACTOR } from '../src/idp/clients.js';
import { machines } from '../src/idp/state.js';
import { rotateSigningKeys, ensureActiveKeys, ACCESS_TOKEN_TTL_SECS, RETIRED_KEY_GRACE_SECS, KEY_CACHE_MS } from '../src/idp/keys.js';
import { query } from './helpers/db.js';

useIdpApp();

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

