// A listening app with the catalog on, a real S3 server (s3rver) behind it, workspaces and
// people with roles, and real tokens of the service's identity provider for each kind of caller.
import type { AddressInfo } from 'node:net';
import { startTestApp, type TestApp } from './app.js';
import { startS3, storageEnv, type TestS3 } from './s3.js';
import { ensureWorkspace } from '../../src/workspaces/workspaces.js';
import { grantWorkspaceRoleToUser } from '../../src/access/grants.js';
import { createClient, CLI_ACTOR } from '../../src/idp/clients.js';
import { machines } from '../../src/idp/state.js';
import { mintAccessToken } from '../../src/idp/tokens.js';
import type { WorkspaceRole } from '../../src/db/index.js';
import { checkExchange } from './iceberg-spec.js';

export const CATALOG_TOKEN = 'catalog-admin-token-0123456789';

export interface CatalogApp {
  t: TestApp;
  s3: TestS3;
  /** http://127.0.0.1:port/catalog/ */
  base: string;
  close(): Promise<void>;
}

export async function startCatalogApp(env: Record<string, string> = {}): Promise<CatalogApp> {
  const s3 = await startS3('warehouse');
  const t = await startTestApp({
    SVC_CATALOG__ENABLED: 'true', SVC_CATALOG__AUTH_TOKEN: CATALOG_TOKEN, SVC_CATALOG__WAREHOUSE: 's3://warehouse/lake',
    SVC_IDP__ISSUER: 'https://svc.example.test',
    ...storageEnv(s3),
    ...env,
  });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (t.app.server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}/catalog/`;
  const restore = checkEveryAnswer(base);
  return {
    t, s3, base,
    async close() {
      const wrong = restore();
      await t.close(); await s3.stop();
      if (wrong.length > 0) throw new Error(`${wrong.length} catalog answers do not match the Iceberg REST specification:\n${wrong.join('\n')}`);
    },
  };
}

/**
 * Every answer of the catalog at `base` that the file's tests fetch (iceberg-js and plain HTTP
 * alike: both use the global fetch) is checked against the specification (checkExchange); the
 * returned function restores fetch and lists the mismatches, which fail the file.
 */
function checkEveryAnswer(base: string): () => string[] {
  const original = globalThis.fetch;
  const wrong: string[] = [];
  globalThis.fetch = async (input, init) => {
    const res = await original(input, init);
    const url = String(input instanceof Request ? input.url : input);
    if (url.startsWith(base)) {
      const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
      const body = res.status === 204 || res.status === 304 || method === 'HEAD' ? '' : await res.clone().text();
      const problem = checkExchange(method, `/${new URL(url).pathname.slice(new URL(base).pathname.length)}`, res.status, body);
      if (problem) wrong.push(problem);
    }
    return res;
  };
  return () => { globalThis.fetch = original; return wrong; };
}

export async function workspace(t: TestApp, slug: string): Promise<string> {
  return (await ensureWorkspace(t.services.db, slug, null)).workspace.id;
}

/** A person (with an IdP `sub`) holding `role` in each named workspace. */
export async function person(t: TestApp, email: string, roles: Record<string, WorkspaceRole>): Promise<{ id: string; sub: string }> {
  const sub = `sub-${email}`;
  const u = await t.services.db.insertInto('users').values({ email, sub, name: email } as never).returning('id').executeTakeFirstOrThrow();
  for (const [slug, role] of Object.entries(roles)) {
    await grantWorkspaceRoleToUser(t.services.db, await workspace(t, slug), u.id, role, null, t.clock.now());
  }
  return { id: u.id, sub };
}

/** The token an engine holds when acting for `p` (token exchange's shape: sub, act, email). */
export async function personToken(t: TestApp, p: { sub: string }, email: string, opts: { workspace?: string } = {}): Promise<string> {
  const m = machines(t.services);
  const { token } = await mintAccessToken(m.keys, t.services.clock, m.issuer, {
    sub: p.sub, audiences: [t.config.oidc.catalog_audience], clientId: 'engine-1', scope: '', act: { sub: 'engine-1' },
    workspace: opts.workspace ?? null, extra: { email },
  });
  return token;
}

/** A client's own token from POST /oauth/token (client credentials), bound to `ws` when given. */
export async function clientToken(t: TestApp, ws: string | null): Promise<string> {
  const c = await createClient(t.services.db, CLI_ACTOR, { name: `engine-${ws ?? 'none'}`, audiences: [t.config.oidc.catalog_audience], workspace: ws });
  const res = await t.app.inject({
    method: 'POST', url: '/oauth/token', headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.client_id, client_secret: c.client_secret }).toString(),
  });
  if (res.statusCode !== 200) throw new Error(`token endpoint: ${res.statusCode} ${res.body}`);
  return res.json().access_token;
}

/** Vera (ws_viewer), Ed (ws_editor) and Ada (ws_admin) of workspace `ws`, with engine tokens acting for them. */
export async function rolePeople(t: TestApp, ws: string): Promise<{ viewer: string; editor: string; owner: string }> {
  const viewer = await person(t, 'vera@example.test', { [ws]: 'ws_viewer' });
  const editor = await person(t, 'ed@example.test', { [ws]: 'ws_editor' });
  const owner = await person(t, 'ada@example.test', { [ws]: 'ws_admin' });
  return {
    viewer: await personToken(t, viewer, 'vera@example.test'),
    editor: await personToken(t, editor, 'ed@example.test'),
    owner: await personToken(t, owner, 'ada@example.test'),
  };
}

/** A JSON request to the catalog of `c` with a bearer token: the status, the text and the parsed body. */
export async function catalogRequest(c: Pick<CatalogApp, 'base'>, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? JSON.parse(text) : null };
}

/** Sends a request the catalog signed (a RemoteSignResult) to the object store as a client would (fetch sets Host itself). */
export function sendSigned(method: string, signed: { uri: string; headers: Record<string, string[]> }, body?: string) {
  const headers = Object.fromEntries(Object.entries(signed.headers).filter(([k]) => k !== 'host').map(([k, v]) => [k, v.join(',')]));
  return fetch(signed.uri, { method, headers, body });
}
