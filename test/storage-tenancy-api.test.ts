// The cross-workspace matrix of issue 24 over the route families that keep objects by workspace
// id (query results download, apps content, workflow namespace and execution files), on the real
// server, the embedded engine and a real S3 server (s3rver). Workspace alpha's objects are made
// through the API; principals of workspace beta (its narrow machine client, its ws_admin, its
// viewer) and anonymous callers try every route on alpha's ids, through alpha's paths and through
// beta's, with path tricks. None reads, writes, lists or deletes any of them: every attempt is a
// 4xx without a byte of alpha's content, the bucket holds alpha's objects unchanged afterwards,
// and alpha still reads them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestAppWithS3, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin, type Admin } from './helpers/workflow.js';
import { saveFlow, run } from './helpers/workflows.js';
import { clientToken } from './helpers/catalog.js';
import { assertRefused, objectsUnder } from './helpers/tenancy.js';
import { ensureWorkspace } from '../src/workspaces/workspaces.js';
import { createLocalUser } from '../src/identity/users.js';
import { grantWorkspaceRoleToUser } from '../src/access/grants.js';
import { executionPrefix } from '../src/workflows/files.js';
import { queryService } from '../src/queries/index.js';
import { StorageRefused } from '../src/storage/ownership.js';

let t: TestApp;
let admin: Admin; // platform administrator: makes alpha's objects
let alphaId: string;
let betaId: string;
const ids = { query: '', app: '', execution: '' };
const NS_SECRET = 'alpha namespace file: the payroll token';
const APP_SECRET = 'import marimo  # alpha app: quarterly numbers';
const EXEC_SECRET = 'alpha execution output: 42 salaries';
const RESULT_ROWS = 'SELECT i * 7919 AS alpha_secret_column FROM range(50) t(i)';
const secrets = [NS_SECRET, APP_SECRET, EXEC_SECRET, 'alpha_secret_column'];
type Principal = (method: string, url: string, body?: string) => Promise<{ status: number; body: string }>;
const principals: Record<string, Principal> = {};

async function member(email: string, role: 'ws_admin' | 'ws_viewer', ip: string): Promise<Principal> {
  const u = await createLocalUser(t.services.db, { email, password: `password-of-${email}` });
  await grantWorkspaceRoleToUser(t.services.db, betaId, u.id, role, null, t.clock.now());
  const b = new Browser(t, ip);
  assert.equal((await b.login(email, `password-of-${email}`)).statusCode, 200);
  return async (method, url, body) => {
    const r = await b.request(method, url, body, body === undefined ? {} : { headers: { 'content-type': body.startsWith('{') ? 'application/json' : 'application/octet-stream' } });
    return { status: r.statusCode, body: r.body };
  };
}
const bare = (headers: Record<string, string>): Principal => async (method, url, body) => {
  const r = await t.app.inject({ method: method as never, url, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': body.startsWith('{') ? 'application/json' : 'application/octet-stream' }) }, payload: body });
  return { status: r.statusCode, body: r.body };
};

before(async () => {
  t = await startTestAppWithS3({ SVC_ENGINES__PROVISIONER: 'none', SVC_ENGINE__PREVIEW_ROWS: '2' });
  admin = await signInAdmin(t);
  alphaId = (await ensureWorkspace(t.services.db, 'alpha', null)).workspace.id;
  betaId = (await ensureWorkspace(t.services.db, 'beta', null)).workspace.id;
  const a = admin.browser;
  const q = (await a.post('/api/workspaces/alpha/queries', { sql: RESULT_ROWS, wait_ms: 60_000 })).json();
  assert.equal(q.state, 'SUCCEEDED');
  ids.query = q.id;
  const app = await a.post('/api/workspaces/alpha/apps', { name: 'numbers', source: APP_SECRET });
  assert.equal(app.statusCode, 201, app.body);
  ids.app = app.json().id;
  assert.equal((await a.post(`/api/workspaces/alpha/apps/${ids.app}/publish`)).statusCode, 201);
  const up = await a.request('PUT', '/workflows/v1/alpha/namespaces/team/files/content?path=payroll/token.txt', NS_SECRET, { headers: { 'content-type': 'application/octet-stream' } });
  assert.equal(up.statusCode, 200, up.body);
  await saveFlow(a, 'alpha', 'id: idle\nnamespace: team\ntasks:\n  - id: o\n    type: output\n    values: { ok: true }\n');
  ids.execution = await run(a, 'alpha', 'team', 'idle');
  // What a task run of the execution wrote (no worker runs here).
  await t.services.s3.put(`${executionPrefix(t.services, alphaId, ids.execution)}tr/1/out.txt`, EXEC_SECRET);
  Object.assign(principals, {
    'beta machine client': bare({ authorization: `Bearer ${await clientToken(t, 'beta')}` }),
    'beta ws_admin': await member('bea@example.test', 'ws_admin', '198.51.100.41'),
    'beta viewer': await member('vic@example.test', 'ws_viewer', '198.51.100.42'),
    anonymous: bare({}),
  });
});
after(async () => { await t.close(); });

const alphaRoots = () => [`query-results/${alphaId}/`, `apps/${alphaId}/`, `workflow/${alphaId}/`];

/** Every route of the three families on alpha's ids, through alpha's paths and beta's. */
function attempts(): Array<[method: string, url: string, body?: string]> {
  const up = '../'.repeat(4);
  const list: Array<[string, string, string?]> = [];
  for (const ws of ['alpha', 'beta']) {
    list.push(
      ['GET', `/api/workspaces/${ws}/queries/${ids.query}`], ['GET', `/api/workspaces/${ws}/queries/${ids.query}/results`],
      ['GET', `/api/workspaces/${ws}/queries/${ids.query}/results?format=csv`], ['GET', `/api/workspaces/${ws}/queries`],
      ['GET', `/api/workspaces/${ws}/apps/${ids.app}`], ['GET', `/api/workspaces/${ws}/apps/${ids.app}/draft`],
      ['GET', `/api/workspaces/${ws}/apps/${ids.app}/versions/1`], ['PUT', `/api/workspaces/${ws}/apps/${ids.app}/draft`, '{"source":"stolen"}'],
      ['POST', `/api/workspaces/${ws}/apps/${ids.app}/publish`], ['DELETE', `/api/workspaces/${ws}/apps/${ids.app}`],
      ['GET', `/workflows/v1/${ws}/executions/${ids.execution}/files`],
      ['GET', `/workflows/v1/${ws}/executions/${ids.execution}/files/download?path=tr/1/out.txt`],
    );
  }
  // Namespace files are named by path, not id: through beta's paths they are beta's own (below).
  list.push(
    ['GET', '/workflows/v1/alpha/namespaces/team/files'], ['GET', '/workflows/v1/alpha/namespaces/team/files/content?path=payroll/token.txt'],
    ['PUT', '/workflows/v1/alpha/namespaces/team/files/content?path=payroll/token.txt', 'overwritten'],
    ['DELETE', '/workflows/v1/alpha/namespaces/team/files/content?path=payroll/token.txt'],
  );
  // From beta's own paths, climbing out of beta's prefix towards alpha's.
  const tricks = [`${up}${alphaId}/namespaces/team/files/payroll/token.txt`, `..%2F..%2F${alphaId}%2Fnamespaces%2Fteam%2Ffiles%2Fpayroll%2Ftoken.txt`, `/${alphaId}/x`];
  for (const p of tricks) {
    list.push(['GET', `/workflows/v1/beta/namespaces/team/files/content?path=${p}`], ['PUT', `/workflows/v1/beta/namespaces/team/files/content?path=${p}`, 'x']);
    list.push(['GET', `/workflows/v1/beta/executions/${ids.execution}/files/download?path=${p}`]);
  }
  list.push(['GET', `/workflows/v1/beta/namespaces/..%2F${alphaId}/files`], ['GET', `/workflows/v1/beta/namespaces/team%2F..%2F..%2F${alphaId}%2Fnamespaces%2Fteam/files`]);
  return list;
}

test('no principal of beta, nor anyone anonymous, reads, writes, lists or deletes alpha\'s results, app sources or workflow files', async () => {
  const before = await objectsUnder(t.services.s3, alphaRoots());
  assert.equal(before.size, 5, `alpha's objects: ${[...before.keys()].join(', ')}`);
  let tried = 0;
  for (const [who, call] of Object.entries(principals)) {
    for (const [method, url, body] of attempts()) {
      const r = await call(method, url, body);
      // beta's listings are beta's own (empty): a 200 there carries nothing of alpha.
      const own = r.status === 200 && method === 'GET' && url === '/api/workspaces/beta/queries';
      assertRefused(`${who} ${method} ${url}`, r.status, r.body, own ? [200] : [400, 401, 403, 404], secrets);
      tried++;
    }
  }
  assert.equal(tried, 4 * attempts().length);
  assert.deepEqual(await objectsUnder(t.services.s3, alphaRoots()), before);
});

test('alpha still reads every object the matrix tried, and beta\'s own files stay in beta\'s prefix', async () => {
  const a = admin.browser;
  assert.match((await a.get(`/api/workspaces/alpha/queries/${ids.query}/results?format=csv`)).body, /alpha_secret_column/);
  assert.equal((await a.get(`/api/workspaces/alpha/apps/${ids.app}/draft`)).json().source, APP_SECRET);
  assert.equal((await a.get('/workflows/v1/alpha/namespaces/team/files/content?path=payroll/token.txt')).body, NS_SECRET);
  assert.equal((await a.get(`/workflows/v1/alpha/executions/${ids.execution}/files/download?path=tr/1/out.txt`)).body, EXEC_SECRET);
  const put = await principals['beta ws_admin']!('PUT', '/workflows/v1/beta/namespaces/team/files/content?path=own.txt', 'beta bytes');
  assert.equal(put.status, 200, put.body);
  assert.deepEqual((await t.services.s3.list(`workflow/${betaId}/`)).map((o) => o.key), [`workflow/${betaId}/namespaces/team/files/own.txt`]);
});

test('below the routes, the storage rule still holds: a record naming another workspace\'s key reaches nothing', async () => {
  // As if a row were wrong (a bug, a hand-edited database): the key is alpha's, the workspace beta.
  const alphaResult = `query-results/${alphaId}/${ids.query}.parquet`;
  assert.ok(await t.services.s3.head(alphaResult));
  await assert.rejects(queryService(t.services).download(betaId, { key: alphaResult }, 'csv'), (err: StorageRefused) => err instanceof StorageRefused && err.status === 403);
  const beta = t.services.storage.of({ tenant: { id: betaId } });
  await assert.rejects(beta.get(`apps/${alphaId}/${ids.app}/draft`), StorageRefused);
  await assert.rejects(beta.deletePrefix(`apps/${alphaId}/`), StorageRefused);
  await assert.rejects(beta.list(`workflow/${alphaId}/`), StorageRefused);
  await assert.rejects(beta.put(`workflow/${betaId}/namespaces/team/files/../../../${alphaId}/x`, 'x'), StorageRefused);
  assert.deepEqual((await beta.list(`apps/${betaId}/`)), []);
  assert.ok(await t.services.s3.head(alphaResult));
});
