// Token exchange against a real OpenID provider (the `oidc-provider` package): a person signs in
// at the provider (authorization code with PKCE, through openid-client), and a service client
// exchanges the person's ID token at this service's token endpoint (again through openid-client)
// for a token whose `sub` is the person and whose `act` names the client, verified with jose
// through this service's discovery document and key set.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import { startTestApp, type TestApp } from './helpers/app.js';
import { freePort } from './helpers/net.js';
import { startOidcProvider, signInAtProvider, type OidcProviderHandle } from './helpers/oidc-provider.js';
import { createClient, CLI_ACTOR, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from '../src/idp/clients.js';

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const REDIRECT = 'http://127.0.0.1:9/callback';

let t: TestApp;
let op: OidcProviderHandle;
let issuer: string;

before(async () => {
  op = await startOidcProvider({
    clientId: 'people-app', clientSecret: 'people-app-secret', redirectUris: [REDIRECT],
    accounts: { alice: { email: 'alice@example.test', name: 'Alice', groups: ['analysts'] } },
  });
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}`;
  t = await startTestApp({ SVC_IDP__ISSUER: issuer, SVC_OIDC__ISSUER_URL: op.issuer, SVC_OIDC__CLIENT_ID: 'people-app' });
  t.clock.set(new Date()); // the provider's tokens carry real time
  await t.app.listen({ port, host: '127.0.0.1' });
});
after(async () => { await t.close(); await op.stop(); });

/** Alice signs in at the provider; the people app gets her tokens. */
async function aliceTokens() {
  const config = await client.discovery(new URL(op.issuer), 'people-app', 'people-app-secret', undefined, { execute: [client.allowInsecureRequests] });
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT, scope: 'openid email profile', state,
    code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
  });
  const callback = await signInAtProvider(url.href, 'alice');
  return client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
}

describe('token exchange with a real OpenID provider', () => {
  test('the person\'s ID token becomes a token for an engine: sub is the person, act the client', async () => {
    const person = await aliceTokens();
    assert.ok(person.id_token);
    const c = await createClient(t.services.db, CLI_ACTOR, { name: 'bi tool', audiences: ['engine-a'], grant_types: [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] });
    const ours = await client.discovery(new URL(issuer), c.client_id, undefined, client.ClientSecretBasic(c.client_secret), { execute: [client.allowInsecureRequests] });
    const res = await client.genericGrantRequest(ours, EXCHANGE, {
      subject_token: person.id_token!, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token', audience: 'engine-a',
    });
    assert.equal(res.issued_token_type, 'urn:ietf:params:oauth:token-type:access_token');
    const meta = ours.serverMetadata();
    const { payload } = await jwtVerify(res.access_token, createRemoteJWKSet(new URL(meta.jwks_uri!)), { issuer: meta.issuer, audience: 'engine-a' });
    assert.equal(payload.sub, 'alice');
    assert.deepEqual(payload.act, { sub: c.client_id });
    assert.equal(payload.email, 'alice@example.test');
    assert.equal(payload.client_id, c.client_id);
    assert.ok(payload.exp! <= decodeJwt(person.id_token!).exp!, 'never outlives the ID token');
  });

  test('an ID token is exchanged only when its aud names one of idp.subject_token_audiences (default oidc.client_id)', async () => {
    const person = await aliceTokens();
    const t2 = await startTestApp({ SVC_OIDC__ISSUER_URL: op.issuer, SVC_OIDC__CLIENT_ID: 'people-app', SVC_IDP__SUBJECT_TOKEN_AUDIENCES: '["svc-exchange"]' });
    try {
      t2.clock.set(new Date());
      const c = await createClient(t2.services.db, CLI_ACTOR, { name: 'x', audiences: ['engine-a'], grant_types: [GRANT_TOKEN_EXCHANGE] });
      const res = await t2.app.inject({
        method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: EXCHANGE, subject_token: person.id_token!, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token', client_id: c.client_id, client_secret: c.client_secret }).toString(),
      });
      assert.equal(res.statusCode, 400);
      assert.equal(res.json().error, 'invalid_grant');
      assert.match(res.json().error_description, /aud/);
    } finally {
      await t2.close();
    }
  });

  test('the provider\'s opaque access token is not a JWT: invalid_grant', async () => {
    const person = await aliceTokens();
    const c = await createClient(t.services.db, CLI_ACTOR, { name: 'x', audiences: ['engine-a'], grant_types: [GRANT_TOKEN_EXCHANGE] });
    const ours = await client.discovery(new URL(issuer), c.client_id, undefined, client.ClientSecretPost(c.client_secret), { execute: [client.allowInsecureRequests] });
    await assert.rejects(
      client.genericGrantRequest(ours, EXCHANGE, { subject_token: person.access_token, subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' }),
      (err: unknown) => err instanceof client.ResponseBodyError && err.error === 'invalid_grant' && err.status === 400,
    );
  });
});
