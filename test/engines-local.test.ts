// Engines on a REAL container engine (podman's Docker API, scripts/podman.sh), provisioned by the
// engines worker. The engine image is a tiny local one, not a real Trino: `localhost/svc-engine-test`
// is committed here from the busybox test image (localhost/svc-test:1) with `httpd` serving the
// engine's configuration directory on the Trino port, and pinned by its digest.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { startTestApp, type TestApp, Browser } from './helpers/app.js';
import { ADMIN, signInAdmin, waitFor } from './helpers/workflow.js';
import { ensurePodman, TEST_IMAGE } from './helpers/podman.js';
import { startTcpProxy } from './helpers/net.js';
import { createLocalEngineProvisioner } from '../src/engines/local-container.js';
import { startEngineWorker, type EngineWorker } from '../src/jobs/engine-worker.js';
import { readTarFiles } from '../src/runners/local-container.js';
import { sweepEngines } from '../src/engines/transition.js';

const project = `svc-eng-${process.pid}`;
const network = `svc-eng-net-${process.pid}`;
const ENGINE_IMAGE = 'localhost/svc-engine-test';
const URL_ = '/api/workspaces/default/engines';
let docker: Docker;
let t: TestApp; let admin: Browser; let worker: EngineWorker | undefined;
let image: string; let imageId: string; let podmanHost: string;
let foreign: Docker.Container;

async function fileIn(containerId: string, path: string): Promise<string> {
  const stream = await docker.getContainer(containerId).getArchive({ path });
  const files = await readTarFiles(stream, (n) => n);
  return new TextDecoder().decode(Object.values(files)[0]);
}

const ours = () => docker.listContainers({ all: true, filters: { label: [`svc.project=${project}`] } });
const engineState = async (name: string) => (await admin.get(`${URL_}/${name}`)).json();

describe('local_container engines on a real podman engine', () => {
  before(async () => {
    // SVC_TEST_PODMAN_HOST: another podman service (a developer's, or one restarted beside a broken one)
    const host = process.env.SVC_TEST_PODMAN_HOST ?? await ensurePodman();
    podmanHost = host;
    docker = new Docker({ socketPath: host.slice('unix://'.length) });
    // the tiny engine image: busybox httpd in the foreground on the Trino port
    const base = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'] });
    await base.commit({ repo: ENGINE_IMAGE, tag: '1.0.0', changes: ['CMD ["/bin/busybox", "httpd", "-f", "-p", "8080", "-h", "/etc/trino"]'] });
    await base.remove({ force: true });
    const info = await docker.getImage(`${ENGINE_IMAGE}:1.0.0`).inspect();
    const digest = info.RepoDigests?.find((d) => d.startsWith(`${ENGINE_IMAGE}@`));
    assert.ok(digest, `podman gave ${ENGINE_IMAGE} a digest: ${JSON.stringify(info.RepoDigests)}`);
    image = digest;
    imageId = info.Id;
    await docker.createNetwork({ Name: network });
    t = await startTestApp({
      SVC_ENGINES__PROVISIONER: 'local_container', SVC_ENGINES__LOCAL_CONTAINER__HOST: host,
      SVC_ENGINES__LOCAL_CONTAINER__NETWORK: network, SVC_ENGINES__LOCAL_CONTAINER__PROJECT: project,
      SVC_ENGINES__LOCAL_CONTAINER__CALLBACK_URL: 'http://svc.internal:8080',
      SVC_ENGINES__LOCAL_CONTAINER__ALLOWED_IMAGES: JSON.stringify([ENGINE_IMAGE]),
      SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
    });
    admin = (await signInAdmin(t)).browser;
    worker = await startEngineWorker(t.services, createLocalEngineProvisioner(t.config.engines.local_container));
  }, { timeout: 15 * 60_000 });

  after(async () => {
    await worker?.close();
    await t?.close();
    if (!docker) return;
    const left = await ours();
    for (const c of left) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {});
    await foreign?.remove({ force: true }).catch(() => {});
    await docker.getNetwork(network).remove().catch(() => {});
    assert.deepEqual(left.map((c) => c.Names), [], 'engine containers left behind');
  });

  test('create: a container with its labels, configuration and callback, running on the network', async () => {
    const res = await admin.post(URL_, { name: 'adhoc', kind: 'trino', image, resources: { cpu: '500m', memory: '256Mi' } });
    assert.equal(res.statusCode, 201, res.body);
    const id = res.json().id;
    const e = await waitFor(async () => { const v = await engineState('adhoc'); return v.state !== 'provisioning' && v; }, 'the engine to leave provisioning');
    assert.equal(e.state, 'running', e.error);
    const [c] = await ours();
    assert.ok(c, 'one container of the project');
    assert.equal(c.State, 'running');
    assert.equal((await docker.getContainer(c.Id).inspect()).Image, imageId, 'the pinned image');
    assert.deepEqual(
      Object.fromEntries(Object.entries(c.Labels).filter(([k]) => k.startsWith('svc.'))),
      { 'svc.project': project, 'svc.managed-by': 'svc', 'svc.component': 'engine', 'svc.workspace': 'default', 'svc.engine': 'adhoc', 'svc.engine-id': id, 'svc.engine-kind': 'trino', 'svc.config-hash': e.config_hash },
    );
    assert.equal(e.running_config_hash, e.config_hash);
    const iceberg = await fileIn(c.Id, '/etc/trino/catalog/iceberg.properties');
    assert.match(iceberg, /^iceberg\.rest-catalog\.uri=http:\/\/svc\.internal:8080\/catalog$/m);
    assert.match(iceberg, new RegExp(`^iceberg\\.rest-catalog\\.oauth2\\.credential=${e.oauth_client_id}:\\$\\{ENV:SVC_ENGINE_CLIENT_SECRET\\}$`, 'm'));
    const inspect = await docker.getContainer(c.Id).inspect();
    assert.ok(inspect.Config.Env.some((v) => /^SVC_ENGINE_CLIENT_SECRET=svcs_/.test(v)), 'the client secret reaches the engine through its environment');
    assert.equal(inspect.HostConfig.Memory, 256 * 1024 * 1024);
    assert.ok(inspect.NetworkSettings.Networks[network], 'on the configured network');
    const ip = inspect.NetworkSettings.Networks[network]!.IPAddress;
    assert.equal(e.endpoint_url, `http://${ip}:8080`);

    // engines.local_container.host may also be tcp:// or http:// (here a TCP port in front of the same socket)
    const proxy = await startTcpProxy({ path: podmanHost.slice('unix://'.length) });
    try {
      for (const scheme of ['tcp', 'http']) {
        const via = createLocalEngineProvisioner({ ...t.config.engines.local_container, host: `${scheme}://127.0.0.1:${proxy.port}` });
        assert.deepEqual((await via.list()).map((o) => [o.engineId, o.hash, o.running]), [[id, e.config_hash, true]], scheme);
      }
    } finally {
      await proxy.stop();
    }
  });

  test('a container of another project is never stopped or removed, even one naming the same engine', async () => {
    const id = (await engineState('adhoc')).id;
    foreign = await docker.createContainer({
      Image: TEST_IMAGE, Cmd: ['sleep', '600'], name: `svc-foreign-${process.pid}`,
      Labels: { 'svc.project': `${project}-other`, 'svc.component': 'engine', 'svc.engine-id': id, 'svc.workspace': 'default', 'svc.engine': 'adhoc' },
    });
    await foreign.start();
    assert.equal((await admin.post(`${URL_}/adhoc/stop`)).statusCode, 202);
    const stopped = await waitFor(async () => { const v = await engineState('adhoc'); return v.state === 'stopped' && v; }, 'the engine to stop', 60_000);
    assert.equal(stopped.endpoint_url, null);
    const [c] = await ours();
    assert.notEqual(c!.State, 'running', 'our container stopped and kept');
    assert.equal((await foreign.inspect()).State.Running, true, 'the other project\'s container still runs');

    assert.equal((await admin.post(`${URL_}/adhoc/start`)).statusCode, 202);
    const again = await waitFor(async () => { const v = await engineState('adhoc'); return v.state === 'running' && v; }, 'the engine to run again', 60_000);
    const [c2] = await ours();
    assert.equal(c2!.Id, c!.Id, 'the same container started again (its configuration did not change)');
    assert.equal(again.error, null);

    assert.equal((await admin.delete(`${URL_}/adhoc`)).statusCode, 202);
    await waitFor(async () => (await admin.get(`${URL_}/adhoc`)).statusCode === 404, 'the engine to be removed', 60_000);
    assert.deepEqual(await ours(), [], 'its container removed');
    assert.equal((await admin.get(`/api/clients/${again.oauth_client_id}`)).statusCode, 404, 'its OAuth client removed');
    assert.equal((await foreign.inspect()).State.Running, true, 'the other project\'s container untouched');
  });

  test('a transition whose worker died is taken over once its lease expires (the sweep); drift is reported and replaced at the next start', async () => {
    await worker!.close();
    worker = undefined;
    const res = await admin.post(URL_, { name: 'orphan', kind: 'trino', image });
    assert.equal(res.statusCode, 201);
    // a worker claimed it and died: a live lease holds it, and its job is gone
    await t.services.queues.get('engines').obliterate({ force: true });
    await t.services.db.updateTable('engines').set({ lease_token: '00000000-0000-4000-8000-000000000001', lease_until: new Date(t.clock.now().getTime() + 60_000) }).where('name', '=', 'orphan').execute();
    worker = await startEngineWorker(t.services, createLocalEngineProvisioner(t.config.engines.local_container));
    t.clock.advance(30_000);
    assert.equal(await sweepEngines(t.services), 0, 'a live lease is left alone');
    t.clock.advance(31_000 + t.config.workflow.working_timeout_s * 1000);
    assert.equal(await sweepEngines(t.services), 1, 'the expired lease is swept');
    // the hour moved past the administrator's session: sign in again
    admin = new Browser(t, '198.51.100.77');
    assert.equal((await admin.login(ADMIN.email, ADMIN.password)).statusCode, 200);
    const e = await waitFor(async () => { const v = await engineState('orphan'); return v.state !== 'provisioning' && v; }, 'the swept engine to leave provisioning', 60_000);
    assert.equal(e.state, 'running', e.error);
    assert.match(e.endpoint_url, /^http:\/\/.+:8080$/);

    // Drift, as Compose finds it: the callback URL changed since the container was made. Reconcile
    // reports it (and leaves it running); a stop and start replaces the container.
    const { reconcileEngines } = await import('../src/engines/reconcile.js');
    const [before_] = await ours();
    const cfg = t.services.config.engines.local_container;
    const callback = cfg.callback_url;
    cfg.callback_url = 'http://svc-moved.internal:8080';
    try {
      assert.deepEqual(await reconcileEngines(t.services, createLocalEngineProvisioner(cfg)), { orphans: [], reprovisioned: [], drifted: [before_!.Names[0]!.slice(1)] });
      assert.equal((await docker.getContainer(before_!.Id).inspect()).State.Running, true, 'reported, not replaced while it runs');
      assert.equal((await admin.post(`${URL_}/orphan/stop`)).statusCode, 202);
      await waitFor(async () => (await engineState('orphan')).state === 'stopped', 'the engine to stop', 60_000);
      assert.equal((await admin.post(`${URL_}/orphan/start`)).statusCode, 202);
      const moved = await waitFor(async () => { const v = await engineState('orphan'); return v.state === 'running' && v; }, 'the engine to run again', 60_000);
      const [after_] = await ours();
      assert.notEqual(after_!.Id, before_!.Id, 'a new container for the new configuration');
      assert.equal(after_!.Labels['svc.config-hash'], moved.config_hash);
      assert.notEqual(moved.config_hash, e.config_hash);
      assert.match(await fileIn(after_!.Id, '/etc/trino/catalog/iceberg.properties'), /^iceberg\.rest-catalog\.uri=http:\/\/svc-moved\.internal:8080\/catalog$/m);
      assert.deepEqual(await reconcileEngines(t.services, createLocalEngineProvisioner(cfg)), { orphans: [], reprovisioned: [], drifted: [] });
    } finally {
      cfg.callback_url = callback;
    }
    assert.equal((await admin.delete(`${URL_}/orphan`)).statusCode, 202);
    await waitFor(async () => (await admin.get(`${URL_}/orphan`)).statusCode === 404, 'the engine to be removed', 60_000);
  });

  test('reconcile removes an orphan of this project (its engine is gone) and never one of another project', async () => {
    const { reconcileEngines } = await import('../src/engines/reconcile.js');
    const orphan = await docker.createContainer({
      Image: TEST_IMAGE, Cmd: ['sleep', '600'], name: `svc-orphan-${process.pid}`,
      Labels: { 'svc.project': project, 'svc.component': 'engine', 'svc.engine-id': '00000000-0000-4000-8000-000000000009', 'svc.workspace': 'gone', 'svc.engine': 'old', 'svc.config-hash': 'x' },
    });
    await orphan.start();
    const report = await reconcileEngines(t.services, createLocalEngineProvisioner(t.config.engines.local_container));
    assert.deepEqual(report, { orphans: [`svc-orphan-${process.pid}`], reprovisioned: [], drifted: [] });
    assert.deepEqual(await ours(), [], 'the orphan is removed');
    assert.equal((await foreign.inspect()).State.Running, true, 'the other project\'s container untouched');
  });
});
