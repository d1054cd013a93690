// The engines resource without a worker: what the API records and refuses (SPEC 7: `disabled`,
// `refused`), roles, the state machine's requests, and explain. No container is started here
// (test/engines-local.test.ts runs engines on podman).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startTestApp, Browser, type TestApp } from './helpers/app.js';
import { signInAdmin } from './helpers/workflow.js';
import { QUEUE } from '../src/queue/queues.js';

// `auto` must find no cluster here, whatever the machine has
process.env.HOME = mkdtempSync(join(tmpdir(), 'svc-home-'));
delete process.env.KUBECONFIG;
delete process.env.KUBERNETES_SERVICE_HOST;

const MASTER_KEY = randomBytes(32).toString('base64');
const LOCAL = {
  SVC_ENGINES__PROVISIONER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__NETWORK: 'svc-engines-test',
  SVC_ENGINES__LOCAL_CONTAINER__PROJECT: 'svc-engines-api', SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL: 'http://svc.test:8080/',
  SVC_SECRETS__MASTER_KEY: MASTER_KEY,
};
const TRINO = { name: 'adhoc', kind: 'trino' };
const URL_ = '/api/workspaces/default/engines';

describe('engines disabled', () => {
  for (const [label, env] of [['auto with no cluster', {}], ['none', { SVC_ENGINES__PROVISIONER: 'none' }]] as const) {
    test(`provisioner ${label}: adding an engine is refused as disabled, naming why`, async () => {
      const t = await startTestApp({ ...env, SVC_SECRETS__MASTER_KEY: MASTER_KEY });
      try {
        const { browser } = await signInAdmin(t);
        const res = await browser.post(URL_, TRINO);
        assert.equal(res.statusCode, 409);
        assert.equal(res.json().error, 'disabled');
        assert.match(res.json().message, label === 'none' ? /^engines are disabled: engines\.provisioner is none/ : /^engines are disabled: engines\.provisioner is auto and no cluster was found/);
        const list = (await browser.get(URL_)).json();
        assert.equal(list.provisioner.name, 'none');
        assert.deepEqual(list.engines, []);
        assert.equal((await browser.post(`${URL_}/explain`, TRINO)).json().error, 'disabled');
      } finally { await t.close(); }
    });
  }
});

describe('engines on local_container (no worker: transitions wait in the queue)', () => {
  let t: TestApp; let admin: Browser; let viewer: Browser; let editor: Browser;
  before(async () => {
    t = await startTestApp(LOCAL);
    admin = (await signInAdmin(t)).browser;
    for (const [who, role] of [['viewer', 'ws_viewer'], ['editor', 'ws_editor']] as const) {
      assert.equal((await admin.post('/api/users', { email: `${who}@example.test`, password: `${who}-password-1` })).statusCode, 201);
      assert.equal((await admin.post('/api/groups', { name: `${who}s` })).statusCode, 201);
      assert.equal((await admin.put(`/api/groups/${who}s/members/${who}@example.test`)).statusCode, 200);
      assert.equal((await admin.put(`/api/workspaces/default/members/groups/${who}s`, { role })).statusCode, 200);
    }
    viewer = new Browser(t, '198.51.100.31'); editor = new Browser(t, '198.51.100.32');
    assert.equal((await viewer.login('viewer@example.test', 'viewer-password-1')).statusCode, 200);
    assert.equal((await editor.login('editor@example.test', 'editor-password-1')).statusCode, 200);
  });
  after(async () => { await t.close(); });

  test('floating tags are refused at create and at explain', async () => {
    for (const [kind, image] of [['trino', 'trinodb/trino'], ['trino', 'trinodb/trino:latest'], ['trino', 'trinodb/trino:v4'], ['olap', 'starrocks/allin1-ubuntu:3'], ['olap', 'starrocks/allin1-ubuntu:stable']]) {
      for (const path of [URL_, `${URL_}/explain`]) {
        const res = await admin.post(path, { ...TRINO, kind, image });
        assert.equal(res.statusCode, 400, `${path} ${image}`);
        assert.equal(res.json().error, 'refused');
        assert.match(res.json().message, new RegExp(`^image ${image} has a floating tag \\((no tag|the tag \\S+ moves|the tag \\S+ is a bare major version)\\)`));
      }
    }
    const unpinned = await admin.post(URL_, { ...TRINO, image: 'trinodb/trino:400' });
    assert.equal(unpinned.json().error, 'refused');
    assert.match(unpinned.json().message, /is not a pinned version of Trino \(pinned: 476, 475\)/);
    assert.equal((await admin.post(URL_, { ...TRINO, version: '999' })).json().message, 'Trino 999 is not a pinned version (pinned: 476, 475)');
    const other = await admin.post(URL_, { name: 'sr', kind: 'olap' });
    assert.equal(other.json().error, 'refused');
    assert.equal(other.json().message, 'image repository docker.io/starrocks/allin1-ubuntu is not in engines.local_container.allowed_images');
    assert.deepEqual((await admin.get(URL_)).json().engines, [], 'nothing was recorded');
  });

  test('explain on a pinned image shows image, resources, labels and the rendered configuration, and records nothing', async () => {
    const res = await admin.post(`${URL_}/explain`, { ...TRINO, image: 'trinodb/trino:476', resources: { memory: '2Gi' } });
    assert.equal(res.statusCode, 200, res.body);
    const x = res.json();
    assert.equal(x.action, 'create');
    assert.deepEqual(x.image, { image: 'docker.io/trinodb/trino:476', repository: 'docker.io/trinodb/trino', tag: '476', digest: null, version: '476', pinned_by: 'version' });
    assert.deepEqual(x.resources, { cpu: '2', memory: '2Gi' });
    assert.equal(x.labels['svc.project'], 'svc-engines-api');
    assert.equal(x.labels['svc.workspace'], 'default');
    assert.equal(x.labels['svc.engine'], 'adhoc');
    assert.equal(x.labels['svc.config-hash'], x.config_hash);
    const iceberg = x.files['catalog/iceberg.properties'];
    assert.match(iceberg, /^iceberg\.rest-catalog\.uri=http:\/\/svc\.test:8080\/catalog$/m);
    assert.match(iceberg, /^iceberg\.rest-catalog\.oauth2\.server-uri=http:\/\/svc\.test:8080\/oauth\/token$/m);
    assert.match(iceberg, /^iceberg\.rest-catalog\.warehouse=default$/m);
    assert.match(x.files['ranger-trino-security.xml'], /<value>http:\/\/svc\.test:8080\/service<\/value>/);
    assert.match(x.files['jvm.config'], /-Xmx1433M/);
    assert.ok(x.diff.includes('+ catalog/iceberg.properties (new)'));
    const digest = `sha256:${'a'.repeat(64)}`;
    const pinned = (await admin.post(`${URL_}/explain`, { ...TRINO, image: `trinodb/trino@${digest}` })).json();
    assert.deepEqual([pinned.image.digest, pinned.image.pinned_by], [digest, 'digest']);
    assert.deepEqual((await admin.get(URL_)).json().engines, []);
  });

  test('create records provisioning and queues one job; viewers read, only ws_admin manages', async () => {
    const res = await admin.post(URL_, TRINO);
    assert.equal(res.statusCode, 201, res.body);
    const e = res.json();
    assert.deepEqual([e.state, e.desired, e.provisioner, e.image, e.endpoint_url], ['provisioning', 'running', 'local_container', 'docker.io/trinodb/trino:476', null]);
    assert.match(e.oauth_client_id, /.+/);
    assert.equal(e.issuer_changed, false);
    assert.equal((await admin.post(URL_, TRINO)).json().message, 'engine already exists: adhoc');
    const jobs = await t.services.queues.get(QUEUE.engines).getJobs(['waiting']);
    assert.deepEqual(jobs.map((j) => j.data), [{ engineId: e.id }]);
    // the secret is sealed in the database, never in a response
    const row = await t.services.db.selectFrom('engines').select('client_secret_sealed').where('id', '=', e.id).executeTakeFirstOrThrow();
    assert.ok(row.client_secret_sealed && !row.client_secret_sealed.startsWith('svcs_'));
    assert.ok(!res.body.includes('svcs_'));

    assert.equal((await viewer.get(`${URL_}/adhoc`)).json().state, 'provisioning');
    assert.equal((await editor.get(URL_)).json().engines.length, 1);
    for (const b of [viewer, editor]) {
      assert.equal((await b.post(URL_, { ...TRINO, name: 'other' })).statusCode, 403);
      assert.equal((await b.post(`${URL_}/adhoc/stop`)).statusCode, 403);
      assert.equal((await b.delete(`${URL_}/adhoc`)).statusCode, 403);
    }
    assert.equal((await admin.get(`${URL_}/nope`)).json().message, 'engine does not exist: nope');
  });

  test('stop, start and delete move the state machine and queue the transition', async () => {
    const stop = await admin.post(`${URL_}/adhoc/stop`);
    assert.equal(stop.statusCode, 202);
    assert.deepEqual([stop.json().state, stop.json().desired], ['stopping', 'stopped']);
    const start = await admin.post(`${URL_}/adhoc/start`);
    assert.equal(start.statusCode, 409);
    assert.equal(start.json().message, 'engine is stopping: start it once it has stopped');
    const del = await admin.delete(`${URL_}/adhoc`);
    assert.deepEqual([del.statusCode, del.json().state, del.json().desired], [202, 'stopping', 'deleted']);
    assert.equal((await admin.post(`${URL_}/adhoc/start`)).json().message, 'engine is being deleted');
    const ids = (await t.services.queues.get(QUEUE.engines).getJobs(['waiting'])).map((j) => j.id).sort();
    assert.equal(ids.length, 3, 'one job per change of what is wanted');
  });

  test('bad input is a 400 naming what is wrong, at create and explain; a workspace has at most 50 engines', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...TRINO, name: 'Ad Hoc' }, 'engine name must be 1-40 characters: a lower-case letter, then lower-case letters, digits and -'],
      [{ ...TRINO, resources: { cpu: 'lots' } }, 'resources.cpu must be cores (2, 0.5) or millicores (500m)'],
      [{ ...TRINO, resources: { memory: '4GB' } }, 'resources.memory must be Mi or Gi (4Gi, 512Mi)'],
      [{ ...TRINO, image: 'trinodb/trino@sha256:abc' }, 'image trinodb/trino@sha256:abc: the digest must be sha256:<64 lower-case hex digits>'],
    ];
    for (const [body, message] of cases) {
      for (const path of [URL_, `${URL_}/explain`]) {
        const res = await admin.post(path, body);
        assert.equal(res.statusCode, 400, `${path} ${JSON.stringify(body)}: ${res.body}`);
        assert.equal(res.json().message, message, path);
      }
    }
    const ws = await t.services.db.selectFrom('workspaces').select('id').where('slug', '=', 'default').executeTakeFirstOrThrow();
    const have = (await t.services.db.selectFrom('engines').select('id').where('workspace_id', '=', ws.id).execute()).length;
    await t.services.db.insertInto('engines').values(Array.from({ length: 50 - have }, (_, i) => ({
      workspace_id: ws.id, name: `filler-${i}`, kind: 'trino', image: 'docker.io/trinodb/trino:476', resources: JSON.stringify({ cpu: '2', memory: '4Gi' }),
      provisioner: 'local_container', state: 'stopped', desired: 'stopped', config_hash: 'h', idp_issuer: 'http://issuer',
    })) as never).execute();
    const full = await admin.post(URL_, { ...TRINO, name: 'one-more' });
    assert.equal(full.statusCode, 409);
    assert.deepEqual(full.json(), { error: 'conflict', message: 'a workspace has at most 50 engines' });
  });
});

describe('engines refused for missing wiring', () => {
  test('no callback for engines (unset, or loopback), or no secrets.master_key: disabled with the reason', async () => {
    const { SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL: _c, ...noCallback } = LOCAL;
    const t = await startTestApp(noCallback);
    try {
      const { browser } = await signInAdmin(t);
      const res = (await browser.post(URL_, TRINO)).json();
      assert.deepEqual(res, { error: 'disabled', message: 'engines.local_container.callback_url is unset: engine containers could not reach this service' });
    } finally { await t.close(); }
    // catalog.public_url's default, http://localhost:8080, is the pod itself from inside a pod
    const t1 = await startTestApp({ SVC_ENGINES__PROVISIONER: 'cluster', SVC_SECRETS__MASTER_KEY: MASTER_KEY });
    try {
      const { browser } = await signInAdmin(t1);
      for (const path of [URL_, `${URL_}/explain`]) {
        assert.deepEqual((await browser.post(path, TRINO)).json(), { error: 'disabled', message: 'catalog.public_url is http://localhost:8080, a loopback address: engine pods could not reach this service; set it to this service\'s address as they see it' });
      }
      t1.services.config.catalog.public_url = '';
      assert.deepEqual((await browser.post(URL_, TRINO)).json(), { error: 'disabled', message: 'catalog.public_url is unset: engine pods could not reach this service' });
      assert.deepEqual((await browser.get(URL_)).json().engines, [], 'nothing was recorded');
    } finally { await t1.close(); }
    const t3 = await startTestApp({ ...LOCAL, SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL: 'http://127.0.0.1:8080' });
    try {
      const { browser } = await signInAdmin(t3);
      assert.equal((await browser.post(URL_, TRINO)).json().message, 'engines.local_container.callback_url is http://127.0.0.1:8080, a loopback address: engine containers could not reach this service; set it to this service\'s address as they see it');
    } finally { await t3.close(); }
    const { SVC_SECRETS__MASTER_KEY: _k, ...noKey } = LOCAL;
    const t2 = await startTestApp(noKey);
    try {
      const { browser } = await signInAdmin(t2);
      const res = (await browser.post(URL_, TRINO)).json();
      assert.deepEqual(res, { error: 'disabled', message: 'secrets.master_key is not set: each engine\'s OAuth client secret is kept sealed' });
    } finally { await t2.close(); }
  });
});
