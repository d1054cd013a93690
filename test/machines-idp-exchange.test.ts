// The machine identity provider's token exchange (RFC 8693) through a real listening server
// (test/helpers/machines-idp.ts), and every error code of its token endpoint (RFC 6749 5.2,
// RFC 8707, RFC 8693). The external OpenID provider of these tests is a small in-test server
// publishing a discovery document and a JWKS (jose keys): a real remote JWKS verification path.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { decodeJwt, generateKeyPair } from 'jose';
import { startTestApp } from './helpers/app.js';
import { freePort } from './helpers/net.js';
import { EXCHANGE, ID_TOKEN, ACCESS_TOKEN, t, issuer, provider, adminBrowser, nowSecs, discover, verifyViaDiscovery, form, tokenRequest, expectError, newClient, useIdpApp } from './helpers/machines-idp.js';
import { createClient, CLI_ACTOR, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from '../src/idp/clients.js';
import { machines } from '../src/idp/state.js';
import { mintAccessToken } from '../src/idp/tokens.js';

useIdpApp();

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

