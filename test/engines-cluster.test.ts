// The engines' cluster provisioner against an IN-TEST Kubernetes API server
// (test/helpers/fake-k8s-objects.ts: an object store that checks the requests; no cluster runs
// here). The engines worker provisions through @kubernetes/client-node; the test asserts the
// objects the API server received.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { selfSignedCert } from './helpers/tls.js';
import { startTestApp, type TestApp, Browser } from './helpers/app.js';
import { signInAdmin, waitFor } from './helpers/workflow.js';
import { startFakeKubernetesObjects, type FakeKubernetesObjects } from './helpers/fake-k8s-objects.js';
import { createClusterEngineProvisioner, objectName } from '../src/engines/cluster.js';
import { startEngineWorker, type EngineWorker } from '../src/jobs/engine-worker.js';

const URL_ = '/api/workspaces/default/engines';
const NS = 'svc-engines-test';
let t: TestApp; let admin: Browser; let k8s: FakeKubernetesObjects; let worker: EngineWorker;

describe('cluster engines against the in-test Kubernetes API server', () => {
  before(async () => {
    k8s = await startFakeKubernetesObjects();
    t = await startTestApp({
      SVC_ENGINES__PROVISIONER: 'cluster', SVC_CATALOG__PUBLIC_URL: 'https://svc.example.test',
      SVC_WORKFLOW__CLUSTER__NAMESPACE: NS, SVC_WORKFLOW__CLUSTER__RUN_AS_USER: '1234',
      SVC_WORKFLOW__CLUSTER__IMAGE_PULL_SECRETS: '["registry-creds"]',
      SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
    });
    admin = (await signInAdmin(t)).browser;
    worker = await startEngineWorker(t.services, createClusterEngineProvisioner(t.config, { kubeConfig: k8s.kubeConfig() }));
  });
  after(async () => { await worker?.close(); await t?.close(); await k8s?.close(); });

  const state = async (want: string) => waitFor(async () => { const v = (await admin.get(`${URL_}/adhoc`)).json(); return v.state === want && v; }, `the engine to be ${want}`);

  test('create: Secret, ConfigMap, Deployment and Service with the task-pod hardening and the engine labels', async () => {
    const res = await admin.post(URL_, { name: 'adhoc', kind: 'trino', resources: { cpu: '1', memory: '2Gi' } });
    assert.equal(res.statusCode, 201, res.body);
    const e = await waitFor(async () => { const v = (await admin.get(`${URL_}/adhoc`)).json(); return v.state !== 'provisioning' && v; }, 'the engine to leave provisioning');
    assert.equal(e.state, 'running', e.error);
    const name = objectName({ workspace: 'default', name: 'adhoc', id: e.id });
    assert.match(name, /^svc-engine-default-adhoc-[0-9a-f]{8}$/);
    assert.equal(e.endpoint_url, `http://${name}.${NS}.svc:8080`);

    const d = k8s.get('deployments', NS, name);
    assert.ok(d, 'the Deployment');
    assert.equal(d.metadata.labels['svc.engine-id'], e.id);
    assert.equal(d.metadata.labels['svc.config-hash'], e.config_hash);
    assert.equal(d.metadata.labels['svc.workspace'], 'default');
    assert.equal(d.spec.replicas, 1);
    const pod = d.spec.template.spec;
    assert.equal(pod.automountServiceAccountToken, false);
    assert.equal(pod.enableServiceLinks, false);
    assert.deepEqual(pod.securityContext, { runAsUser: 1234, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    assert.deepEqual(pod.imagePullSecrets, [{ name: 'registry-creds' }]);
    const [c] = pod.containers;
    assert.equal(c.image, 'docker.io/trinodb/trino:476');
    assert.deepEqual(c.securityContext, { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsUser: 1234 });
    assert.deepEqual(c.resources, { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1', memory: '2Gi' } });
    assert.deepEqual(c.envFrom, [{ secretRef: { name: `${name}-client` } }]);
    assert.deepEqual(c.volumeMounts, [{ name: 'config', mountPath: '/etc/trino', readOnly: true }]);

    const cm = k8s.get('configmaps', NS, `${name}-config`);
    assert.match(cm.data['catalog__iceberg.properties'], /^iceberg\.rest-catalog\.uri=https:\/\/svc\.example\.test\/catalog$/m);
    assert.ok(pod.volumes[0].configMap.items.some((i: { key: string; path: string }) => i.key === 'catalog__iceberg.properties' && i.path === 'catalog/iceberg.properties'));
    assert.match(cm.data['ranger-trino-security.xml'], /https:\/\/svc\.example\.test\/service/);
    const secret = k8s.get('secrets', NS, `${name}-client`);
    assert.match(Buffer.from(secret.data.SVC_ENGINE_CLIENT_SECRET, 'base64').toString(), /^svcs_/);
    assert.ok(!JSON.stringify(cm).includes('svcs_'), 'the secret is not in the ConfigMap');
    // The engine's own OAuth client, as its Iceberg catalog uses it: client credentials with the
    // rendered scope against /oauth/token give a token for the catalog's audience and workspace.
    const clientSecret = Buffer.from(secret.data.SVC_ENGINE_CLIENT_SECRET, 'base64').toString();
    assert.match(cm.data['catalog__iceberg.properties'], /^iceberg\.rest-catalog\.oauth2\.scope=audience:svc-catalog$/m);
    const granted = await t.app.inject({
      method: 'POST', url: '/oauth/token', payload: `grant_type=client_credentials&scope=${encodeURIComponent('audience:svc-catalog')}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${e.oauth_client_id}:${clientSecret}`).toString('base64')}` },
    });
    assert.equal(granted.statusCode, 200, granted.body);
    const claims = JSON.parse(Buffer.from(granted.json().access_token.split('.')[1], 'base64url').toString());
    assert.deepEqual([[claims.aud].flat(), claims.iss, claims.workspace, claims.client_id], [['svc-catalog'], 'https://svc.example.test', 'default', e.oauth_client_id]);
    const svc = k8s.get('services', NS, name);
    assert.deepEqual(svc.spec.selector, { 'svc.component': 'engine', 'svc.engine-id': e.id });
    assert.deepEqual(svc.spec.ports, [{ name: 'http', port: 8080, targetPort: 8080 }]);
  });

  test('explain diffs against what runs; a changed idp.issuer is reported on the engine', async () => {
    const same = (await admin.post(`${URL_}/explain`, { name: 'adhoc', kind: 'trino', resources: { cpu: '1', memory: '2Gi' } })).json();
    assert.equal(same.action, 'unchanged');
    assert.deepEqual(same.diff, []);
    const bigger = (await admin.post(`${URL_}/explain`, { name: 'adhoc', kind: 'trino', resources: { cpu: '1', memory: '4Gi' } })).json();
    assert.equal(bigger.action, 'replace');
    assert.deepEqual(bigger.diff, ['- jvm.config: -Xmx1433M', '+ jvm.config: -Xmx2867M']);
    assert.notEqual(bigger.config_hash, bigger.running_config_hash);

    await t.services.db.updateTable('engines').set({ idp_issuer: 'https://old-issuer.example.test' }).where('name', '=', 'adhoc').execute();
    const e = (await admin.get(`${URL_}/adhoc`)).json();
    assert.equal(e.issuer_changed, true);
    assert.deepEqual(e.warnings, ['provisioned under idp.issuer https://old-issuer.example.test; it is now https://svc.example.test: start the engine again (stop, start) to re-wire it']);
  });

  test('reconcile: a running engine whose Deployment vanished is provisioned again; drift and foreign objects are reported', async () => {
    const { reconcileEngines } = await import('../src/engines/reconcile.js');
    const p = createClusterEngineProvisioner(t.config, { kubeConfig: k8s.kubeConfig() });
    const e = (await admin.get(`${URL_}/adhoc`)).json();
    const name = objectName({ workspace: 'default', name: 'adhoc', id: e.id });
    const dep = k8s.get('deployments', NS, name);
    k8s.objects.set(`deployments/${NS}/svc-engine-x-y-00000000`, { ...structuredClone(dep), metadata: { ...dep.metadata, name: 'svc-engine-x-y-00000000', labels: { ...dep.metadata.labels, 'svc.engine-id': '00000000-0000-4000-8000-000000000000' } } });
    k8s.objects.get(`deployments/${NS}/${name}`).metadata.labels['svc.config-hash'] = 'edited';
    assert.deepEqual(await reconcileEngines(t.services, p), { orphans: ['svc-engine-x-y-00000000'], reprovisioned: [], drifted: [name] });
    assert.ok(k8s.get('deployments', NS, 'svc-engine-x-y-00000000'), 'another installation\'s object is left in place');
    k8s.objects.delete(`deployments/${NS}/svc-engine-x-y-00000000`);

    k8s.objects.delete(`deployments/${NS}/${name}`);
    assert.deepEqual(await reconcileEngines(t.services, p), { orphans: [], reprovisioned: ['adhoc'], drifted: [] });
    await state('running');
    assert.equal(k8s.get('deployments', NS, name).metadata.labels['svc.config-hash'], e.config_hash, 'the Deployment is back');

    // The service's settings changed since the engine was provisioned (its callback URL): what it
    // would render now differs from its objects' hash, as Compose finds a changed file.
    const url = t.services.config.catalog.public_url;
    t.services.config.catalog.public_url = 'https://svc-moved.example.test';
    try {
      assert.deepEqual(await reconcileEngines(t.services, p), { orphans: [], reprovisioned: [], drifted: [name] });
      const x = (await admin.post(`${URL_}/explain`, { name: 'adhoc', kind: 'trino', resources: { cpu: '1', memory: '2Gi' } })).json();
      assert.equal(x.action, 'replace');
      assert.ok(x.diff.includes('+ catalog/iceberg.properties: iceberg.rest-catalog.uri=https://svc-moved.example.test/catalog'), x.diff.join('\n'));
    } finally {
      t.services.config.catalog.public_url = url;
    }
    assert.deepEqual(await reconcileEngines(t.services, p), { orphans: [], reprovisioned: [], drifted: [] });
  });

  test('stop scales to 0, start back to 1 (merge patches); delete removes every object', async () => {
    const e = (await admin.get(`${URL_}/adhoc`)).json();
    const name = objectName({ workspace: 'default', name: 'adhoc', id: e.id });
    assert.equal((await admin.post(`${URL_}/adhoc/stop`)).statusCode, 202);
    await state('stopped');
    assert.equal(k8s.get('deployments', NS, name).spec.replicas, 0);
    assert.equal((await admin.post(`${URL_}/adhoc/start`)).statusCode, 202);
    const restarted = await state('running');
    assert.equal(restarted.issuer_changed, false, 'provisioning again wires the engine to the current issuer');
    assert.equal(k8s.get('deployments', NS, name).spec.replicas, 1);
    const patches = k8s.calls.filter((c) => c.method === 'PATCH' && c.body?.spec?.replicas !== undefined).slice(-2);
    assert.deepEqual(patches.map((p) => [p.contentType.split(';')[0], p.body]), [
      ['application/merge-patch+json', { spec: { replicas: 0 } }], ['application/merge-patch+json', { spec: { replicas: 1 } }],
    ]);
    assert.equal((await admin.delete(`${URL_}/adhoc`)).statusCode, 202);
    await waitFor(async () => (await admin.get(`${URL_}/adhoc`)).statusCode === 404, 'the engine to be removed');
    assert.deepEqual([...k8s.objects.keys()], [], 'no object left');
  });
});

describe('olap engines: the pinned JDBC drivers, repointed and checked before the engine starts', () => {
  let t2: TestApp; let admin2: Browser; let k: FakeKubernetesObjects; let w: EngineWorker;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-drivers-'));
    writeFileSync(join(dir, 'mysql.jar'), 'not the pinned driver');
    k = await startFakeKubernetesObjects();
    t2 = await startTestApp({
      SVC_ENGINES__PROVISIONER: 'cluster', SVC_CATALOG__PUBLIC_URL: 'https://svc.example.test', SVC_WORKFLOW__CLUSTER__NAMESPACE: NS,
      SVC_SECRETS__MASTER_KEY: randomBytes(32).toString('base64'),
      SVC_OLAP__JDBC_DRIVERS__MYSQL__DRIVER_URL: pathToFileURL(join(dir, 'mysql.jar')).href,
      SVC_OLAP__JDBC_DRIVERS__MYSQL__DRIVER_CLASS: 'com.mysql.jdbc.Driver',
    });
    admin2 = (await signInAdmin(t2)).browser;
    w = await startEngineWorker(t2.services, createClusterEngineProvisioner(t2.config, { kubeConfig: k.kubeConfig() }));
  });
  after(async () => { await w?.close(); await t2?.close(); await k?.close(); rmSync(dir, { recursive: true, force: true }); });

  test('explain renders the six drivers with the repointed one; provisioning checks it and fails before any object is made', async () => {
    const x = (await admin2.post(`${URL_}/explain`, { name: 'sr', kind: 'olap' })).json();
    const props = x.files['jdbc-drivers.properties'];
    for (const d of ['mysql', 'mariadb', 'postgresql', 'sqlserver', 'oracle', 'db2']) assert.match(props, new RegExp(`^${d}\\.driver_url=`, 'm'));
    assert.match(props, new RegExp(`^mysql\\.driver_url=file://${join(dir, 'mysql.jar')}$`, 'm'));
    assert.match(props, /^mysql\.driver_class=com\.mysql\.jdbc\.Driver$/m);
    assert.match(props, /^postgresql\.driver_url=https:\/\/repo1\.maven\.org\/maven2\/org\/postgresql\/postgresql\/42\.7\.3\/postgresql-42\.7\.3\.jar$/m);

    assert.equal((await admin2.post(URL_, { name: 'sr', kind: 'olap' })).statusCode, 201);
    const e = await waitFor(async () => { const v = (await admin2.get(`${URL_}/sr`)).json(); return v.state !== 'provisioning' && v; }, 'the engine to leave provisioning');
    assert.equal(e.state, 'failed');
    const got = createHash('sha256').update('not the pinned driver').digest('hex');
    assert.equal(e.error, `up failed: olap.jdbc_drivers.mysql.driver_url ${pathToFileURL(join(dir, 'mysql.jar')).href}: sha256 ${got} does not match the pinned a221c4106b7fe68a45912cdbf8351f1b43ad3c53a43c3bc966181cc14f86fa30`);
    assert.deepEqual([...k.objects.keys()], [], 'nothing was provisioned');
  });

  test('a driver whose bytes match is accepted once; http:// and unknown dialects are refused', async () => {
    const { verifyRepointedDrivers, effectiveDrivers } = await import('../src/engines/jdbc-drivers.js');
    const file = join(dir, 'ok.jar');
    writeFileSync(file, 'driver bytes');
    const sha256 = createHash('sha256').update('driver bytes').digest('hex');
    await verifyRepointedDrivers([{ dialect: 'mysql', url: pathToFileURL(file).href, sha256, driver_class: 'x', repointed: true }]);
    await assert.rejects(verifyRepointedDrivers([{ dialect: 'mysql', url: 'http://mirror.test/m.jar', sha256, driver_class: 'x', repointed: true }]),
      { message: 'olap.jdbc_drivers.mysql.driver_url: http://mirror.test/m.jar: a driver is fetched from an https:// mirror or a file:/// path' });
    assert.throws(() => effectiveDrivers({ olap: { jdbc_drivers: { sqlite: { driver_url: 'file:///x' } } } }), /olap\.jdbc_drivers\.sqlite: no pinned driver of that dialect/);
  });

  test('a driver repointed to an https:// mirror is fetched and checked; a mirror serving other bytes, or none, is refused', async () => {
    const { verifyRepointedDrivers } = await import('../src/engines/jdbc-drivers.js');
    const tls = selfSignedCert();
    const served: string[] = [];
    const mirror = https.createServer(tls, (req, res) => {
      served.push(req.url!);
      if (req.url === '/good.jar') return res.end('mirrored driver');
      if (req.url === '/other.jar') return res.end('other bytes');
      if (req.url === '/big.jar') return res.end('more than four bytes');
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => mirror.listen(0, '127.0.0.1', r));
    const base = `https://127.0.0.1:${(mirror.address() as AddressInfo).port}`;
    // the mirror's certificate is trusted as an internal CA would be (the default fetch has the system's CAs)
    const trusted = ((url: string) => new Promise<Response>((resolve, reject) => {
      https.get(url, { ca: tls.cert }, (res) => resolve(new Response(Readable.toWeb(res) as ReadableStream, { status: res.statusCode }))).on('error', reject);
    })) as unknown as typeof fetch;
    const sha256 = createHash('sha256').update('mirrored driver').digest('hex');
    const driver = (path: string) => [{ dialect: 'postgresql', url: `${base}${path}`, sha256, driver_class: 'org.postgresql.Driver', repointed: true }];
    try {
      await verifyRepointedDrivers(driver('/good.jar'), { fetch: trusted });
      assert.deepEqual(served, ['/good.jar']);
      await verifyRepointedDrivers(driver('/good.jar'), { fetch: trusted });
      assert.deepEqual(served, ['/good.jar'], 'a verified mirror is read once per process');
      const other = createHash('sha256').update('other bytes').digest('hex');
      await assert.rejects(verifyRepointedDrivers(driver('/other.jar'), { fetch: trusted }),
        { message: `olap.jdbc_drivers.postgresql.driver_url ${base}/other.jar: sha256 ${other} does not match the pinned ${sha256}` });
      await assert.rejects(verifyRepointedDrivers(driver('/missing.jar'), { fetch: trusted }),
        { message: `olap.jdbc_drivers.postgresql.driver_url: ${base}/missing.jar: HTTP 404` });
      await assert.rejects(verifyRepointedDrivers(driver('/big.jar'), { fetch: trusted, maxBytes: 4 }),
        { message: `olap.jdbc_drivers.postgresql.driver_url: ${base}/big.jar: larger than 4 bytes` });
    } finally {
      mirror.closeAllConnections();
      await new Promise((r) => mirror.close(r));
    }
  });
});
