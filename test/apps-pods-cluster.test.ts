// App pods with the cluster launcher against an in-test Kubernetes API server (no Kubernetes runs
// on these machines): test/helpers/fake-k8s.ts records every request, checks names and bodies,
// and plays a tiny kubelet that runs the test's HTTP program as the image's entrypoint, so a
// session goes through the apps origin to a pod it created. The pod objects carry apps.pod.* and
// the task pods' hardening; the stop job deletes them; a pod that cannot pull its image is a 503.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { rm } from 'node:fs/promises';
import { startFakeKubernetes, type FakeKubernetes } from './helpers/fake-k8s.js';
import { freePort } from './helpers/net.js';
import { signInAdmin } from './helpers/workflow.js';
import { newApp, openSession, runStopJob, startPodBed, subprocessPods, type PodBed, type SubprocessPods } from './helpers/app-pods.js';
import { APP_COOKIE } from '../src/api/apps-origin.js';
import { ClusterLauncher, clusterPodOptions } from '../src/apps/pod-cluster.js';
import { FORCED_IPC_WARNING } from '../src/apps/pod-runtime.js';
import { loadConfig } from '../src/config/index.js';

const NS = 'svc-apps-test';
const ENV = {
  SVC_APPS__POD__LAUNCHER: 'cluster', SVC_APPS__POD__CALLBACK_URL: 'http://svc.svc-system.svc:8080', SVC_APPS__POD__NAMESPACE: NS,
  SVC_APPS__POD__IMAGE: 'registry.example.test/svc-apps:1.4.2', SVC_APPS__POD__IMAGE_PULL_POLICY: 'Always',
  SVC_APPS__POD__CPU_REQUEST: '300m', SVC_APPS__POD__MEM_REQUEST: '600Mi', SVC_APPS__POD__CPU_LIMIT: '2', SVC_APPS__POD__MEM_LIMIT: '3Gi',
  SVC_APPS__POD__PULL_SECRET: 'regcred', SVC_APPS__POD__RUN_KERNEL_MODE: 'forced_ipc', SVC_APPS__POD__RUN_IDLE_SECS: '120',
  SVC_WORKFLOW__CLUSTER__RUN_AS_USER: '4242', SVC_LOG__FILTER: 'warn',
};

describe('cluster app pods against an in-test Kubernetes API server', () => {
  let k8s: FakeKubernetes;
  let pods: SubprocessPods;
  let b: PodBed;
  before(async () => {
    k8s = await startFakeKubernetes();
    pods = await subprocessPods();
    k8s.behaviour = () => ({ entrypoint: [process.execPath, pods.program] });
    // The options as the configuration gives them; only the port is a free one (the fake's pods share the host).
    const options = { ...clusterPodOptions(loadConfig({ cwd: pods.root, env: { ...ENV, SVC_DATABASE__URL: 'postgres://x@127.0.0.1/x' } })), port: await freePort() };
    b = await startPodBed(ENV, new ClusterLauncher(options, { kubeConfig: k8s.kubeConfig(), pollMs: 50 }));
  });
  after(async () => {
    await b.close();
    await k8s.close();
    await rm(pods.root, { recursive: true, force: true });
  });

  const get = (token: string) => b.origin.inject({ method: 'GET', url: '/', cookies: { [APP_COOKIE]: token } });
  const created = (kind: 'pods' | 'secrets') => k8s.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/${kind}$`)).map((r) => r.body);

  test('a run session reaches a hardened pod in apps.pod.namespace, created with apps.pod.* and its source Secret', async () => {
    const appId = await newApp(b.admin, 'sales', 'x = 1  # v1\n');
    const res = await get(await openSession(b.admin, b.origin, appId));
    assert.equal(res.statusCode, 200, res.body);
    const seen = res.json();
    assert.equal(seen.source, 'x = 1  # v1\n', 'the published version, from the mounted Secret');
    assert.equal(seen.env.SVC_APP_MODE, 'run');
    assert.equal(seen.env.SVC_APP_KERNEL_MODE, 'forced_ipc');
    assert.equal(seen.env.SVC_APP_CALLBACK_URL, 'http://svc.svc-system.svc:8080');
    assert.match(b.t.logs(), new RegExp(FORCED_IPC_WARNING.replace(/[()]/g, '.')), 'forced_ipc is logged as unsupported');

    const [pod] = created('pods');
    assert.match(pod.metadata.name, /^svc-app-run-[0-9a-f-]{36}$/);
    assert.equal(pod.metadata.namespace, NS);
    assert.deepEqual(pod.metadata.labels, { 'svc.component': 'app-pod', 'svc.app-mode': 'run', 'svc.app-id': appId, 'svc.workspace-id': pod.metadata.labels['svc.workspace-id'], 'svc.launch': pod.metadata.name.slice('svc-app-run-'.length) });
    const spec = pod.spec;
    assert.equal(spec.automountServiceAccountToken, false, 'no service-account token');
    assert.equal(spec.enableServiceLinks, false);
    assert.deepEqual(spec.securityContext, { runAsUser: 4242, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    assert.deepEqual(spec.imagePullSecrets, [{ name: 'regcred' }]);
    const [c] = spec.containers;
    assert.equal(spec.containers.length, 1);
    assert.equal(c.image, 'registry.example.test/svc-apps:1.4.2');
    assert.equal(c.imagePullPolicy, 'Always');
    assert.equal(c.command, undefined, 'the image\'s own entrypoint');
    assert.deepEqual(c.resources, { requests: { cpu: '300m', memory: '600Mi' }, limits: { cpu: '2', memory: '3Gi' } });
    assert.deepEqual(c.securityContext, { runAsUser: 4242, runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    const env = Object.fromEntries(c.env.map((e: { name: string; value: string }) => [e.name, e.value]));
    assert.equal(env.SVC_APP_SOURCE, '/srv/app/src/sales.py');
    assert.equal(env.SVC_APP_VERSION, '1');
    assert.ok(!Object.keys(env).some((k) => k.startsWith('SVC_') && !k.startsWith('SVC_APP_')), 'none of the service\'s variables');
    assert.deepEqual(c.volumeMounts.find((m: { name: string }) => m.name === 'source'), { name: 'source', mountPath: '/srv/app/src', readOnly: true });
    const [secret] = created('secrets');
    assert.equal(secret.metadata.name, `${pod.metadata.name}-src`);
    assert.equal(Buffer.from(secret.data['sales.py'], 'base64').toString(), 'x = 1  # v1\n');
    assert.deepEqual(spec.volumes.find((v: { name: string }) => v.name === 'source').secret, { secretName: secret.metadata.name, defaultMode: 0o444 });
  });

  test('an edit pod gets another app of its author through its Secret; the stop job deletes pod and Secret', async () => {
    const one = await newApp(b.admin, 'edit-one', 'a = 1\n', false);
    const two = await newApp(b.admin, 'edit-two', 'b = 2\n', false);
    assert.equal((await get(await openSession(b.admin, b.origin, one, 'edit'))).statusCode, 200);
    assert.equal((await get(await openSession(b.admin, b.origin, two, 'edit'))).statusCode, 200);
    const editPods = created('pods').filter((p) => p.metadata.labels['svc.app-mode'] === 'edit');
    assert.equal(editPods.length, 1, 'one edit pod per author per workspace');
    const name = editPods[0].metadata.name;
    const stored = k8s.secrets.get(`${NS}/${name}-src`);
    assert.deepEqual(Object.keys(stored.data).sort(), ['edit-one.py', 'edit-two.py']);
    assert.equal(k8s.find('PATCH', new RegExp(`/secrets/${name}-src$`))[0].contentType.split(';')[0], 'application/merge-patch+json');

    b.t.clock.advance(121_000);
    await runStopJob(b.t);
    const runPod = created('pods').find((p) => p.metadata.labels['svc.app-mode'] === 'run').metadata.name;
    assert.ok(k8s.deletions.some((d) => d.name === runPod), 'the run pod is deleted after run_idle_secs');
    assert.ok(!k8s.deletions.some((d) => d.name === name), 'the edit pod lives until idle_secs');
    assert.equal(k8s.secrets.has(`${NS}/${runPod}-src`), false, 'with its Secret');
    b.t.clock.advance(1_800_000);
    await runStopJob(b.t);
    assert.ok(k8s.deletions.some((d) => d.name === name), 'the edit pod after idle_secs');
  });

  test('a pod whose image does not pull is a 503, and nothing of it is left', async () => {
    k8s.behaviour = () => ({ mode: 'imagePullError' });
    b.admin = await signInAdmin(b.t); // the moved clock ended the service session
    try {
      const appId = await newApp(b.admin, 'unpulled', 'z = 0\n');
      const res = await get(await openSession(b.admin, b.origin, appId));
      assert.equal(res.statusCode, 503, res.body);
      assert.deepEqual(res.json(), { error: 'unavailable', message: 'the app could not start: its pod was not created' });
      const pod = created('pods').find((p) => p.metadata.labels['svc.app-id'] === appId);
      assert.ok(k8s.deletions.some((d) => d.name === pod.metadata.name));
      assert.equal(k8s.secrets.has(`${NS}/${pod.metadata.name}-src`), false);
    } finally {
      k8s.behaviour = () => ({ entrypoint: [process.execPath, pods.program] });
    }
  });
});
