// The engines' cluster provisioner against an IN-TEST Kubernetes API server
// (test/helpers/fake-k8s-objects.ts: an object store that checks the requests; no cluster runs
// here). The engines worker provisions through @kubernetes/client-node; the test asserts the
// objects the API server received.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
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
    const svc = k8s.get('services', NS, name);
    assert.deepEqual(svc.spec.selector, { 'svc.component': 'engine', 'svc.engine-id': e.id });
    assert.deepEqual(svc.spec.ports, [{ name: 'http', port: 8080, targetPort: 8080 }]);
  });

  test('stop scales to 0, start back to 1 (merge patches); delete removes every object', async () => {
    const e = (await admin.get(`${URL_}/adhoc`)).json();
    const name = objectName({ workspace: 'default', name: 'adhoc', id: e.id });
    assert.equal((await admin.post(`${URL_}/adhoc/stop`)).statusCode, 202);
    await state('stopped');
    assert.equal(k8s.get('deployments', NS, name).spec.replicas, 0);
    assert.equal((await admin.post(`${URL_}/adhoc/start`)).statusCode, 202);
    await state('running');
    assert.equal(k8s.get('deployments', NS, name).spec.replicas, 1);
    const patches = k8s.calls.filter((c) => c.method === 'PATCH');
    assert.deepEqual(patches.map((p) => [p.contentType.split(';')[0], p.body]), [
      ['application/merge-patch+json', { spec: { replicas: 0 } }], ['application/merge-patch+json', { spec: { replicas: 1 } }],
    ]);
    assert.equal((await admin.delete(`${URL_}/adhoc`)).statusCode, 202);
    await waitFor(async () => (await admin.get(`${URL_}/adhoc`)).statusCode === 404, 'the engine to be removed');
    assert.deepEqual([...k8s.objects.keys()], [], 'no object left');
  });
});
