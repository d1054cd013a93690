// The bed of the machines-idp-*.test.ts files: one service listening on a loopback port as the
// machine identity provider, a small external OpenID provider for token exchange, the
// administrator's browser, and the requests the tests make of them.
//
// A file calls useIdpApp() once at its top; its hooks fill `t`, `issuer`, `provider` and `admin`,
// which the file reads through ES module live bindings (so the tests name them as before the
// split, when they were the file's own variables).
import { before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload, type CryptoKey } from 'jose';
import { startTestApp, Browser, type TestApp } from './app.js';
import { freePort } from './net.js';
import { initAdministrator } from '../../src/bootstrap/init.js';
import { createClient, CLI_ACTOR, GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE } from '../../src/idp/clients.js';

export const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
export const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

// ---- a small external OpenID provider: discovery + JWKS over HTTP ----
export interface Provider { issuer: string; sign(claims: JWTPayload, opts?: { key?: CryptoKey; kid?: string }): Promise<string>; stop(): Promise<void> }
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

export let t: TestApp;
export let issuer: string;
export let provider: Provider;
export let admin: Browser;
/** The administrator's browser, signed in again when the moved clock has ended the session. */
export async function adminBrowser(): Promise<Browser> {
  if ((await admin.get('/api/me')).statusCode !== 200) assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
  return admin;
}
export const nowSecs = () => Math.floor(t.clock.now().getTime() / 1000);

/** A generic OAuth client configured from our discovery document. */
export function discover(clientId: string, secret: string, method: 'basic' | 'post' = 'basic') {
  const auth = method === 'basic' ? client.ClientSecretBasic(secret) : client.ClientSecretPost(secret);
  return client.discovery(new URL(issuer), clientId, undefined, auth, { execute: [client.allowInsecureRequests] });
}

/** Verifies a token with jose through discovery -> jwks_uri, as a resource server would. */
export async function verifyViaDiscovery(token: string, audience: string) {
  const doc = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json() as { issuer: string; jwks_uri: string };
  const jwks = createRemoteJWKSet(new URL(doc.jwks_uri));
  return jwtVerify(token, jwks, { issuer: doc.issuer, audience, currentDate: t.clock.now() });
}

export function form(params: Record<string, string | string[]>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) for (const x of [v].flat()) u.append(k, x);
  return u.toString();
}

export function tokenRequest(params: Record<string, string | string[]>, opts: { ip?: string; basic?: [string, string]; headers?: Record<string, string>; url?: string } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': opts.ip ?? '192.0.2.1', ...opts.headers };
  if (opts.basic) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(opts.basic[0])}:${encodeURIComponent(opts.basic[1])}`).toString('base64')}`;
  return t.app.inject({ method: 'POST', url: opts.url ?? '/oauth/token', headers, payload: form(params) });
}

export function expectError(res: { statusCode: number; json(): { error: string; error_description?: string } }, status: number, error: string, description?: RegExp) {
  assert.equal(res.statusCode, status, JSON.stringify(res.json()));
  assert.equal(res.json().error, error);
  assert.equal(typeof res.json().error_description, 'string');
  if (description) assert.match(res.json().error_description!, description);
}

export async function newClient(input: { audiences?: string[]; scopes?: string[]; exchange?: boolean; workspace?: string } = {}) {
  return createClient(t.services.db, CLI_ACTOR, {
    name: 'test client', audiences: input.audiences ?? ['svc-catalog'], scopes: input.scopes, workspace: input.workspace ?? null,
    grant_types: input.exchange ? [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] : [GRANT_CLIENT_CREDENTIALS],
  });
}

/** Starts the bed (once per file, at its top level): the hooks of the whole file. */
export function useIdpApp(): void {
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
}
