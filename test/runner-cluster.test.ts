// The cluster runner against an IN-TEST FAKE Kubernetes API server (test/helpers/fake-k8s.ts):
// no Kubernetes can run on these machines. The fake records and validates the requests, and plays
// a small kubelet that runs the pod's containers (including the helper scripts that move the
// files) as local processes, so file movement, logs, phases and deletions are exercised end to end
// through @kubernetes/client-node.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createClusterRunner,
  effectiveResources,
  normaliseQuantity,
  parseQuantity,
  podNameFor,
  type ClusterRunner,
  type ClusterRunnerOptions,
} from '../src/runners/cluster/index.js';
import { RunnerSpecError, outputMatcher, type ContainerTaskSpec, type LogStream, type Resources } from '../src/runners/types.js';
import { createContainerRunner, keptContainerCutoff } from '../src/runners/index.js';
import { defaultConfig } from '../src/config/index.js';
import { startFakeKubernetes, type FakeKubernetes } from './helpers/fake-k8s.js';

const NS = 'svc-tasks-test';
const HELPER = 'registry.example/svc-task-helper:7';
const defaultResources: Resources = {
  request: { cpu: '100m', memory: '128Mi', ephemeral_storage: '256Mi' },
  limit: { cpu: '1', memory: '512Mi', ephemeral_storage: '10Gi' },
};
const maxResources: Resources = { limit: { cpu: '2', memory: '2Gi', ephemeral_storage: '10Gi' } };

let fake: FakeKubernetes;
let runner: ClusterRunner;
let seq = 0;

function makeRunner(over: Partial<ClusterRunnerOptions> = {}): ClusterRunner {
  return createClusterRunner({
    kubeConfig: fake.kubeConfig(),
    namespace: NS,
    defaultResources,
    maxResources,
    runAsUser: 1000,
    imagePullSecrets: ['regcred', 'mirror-cred'],
    helperImage: HELPER,
    pollMs: 50,
    ...over,
  });
}

function spec(over: Partial<ContainerTaskSpec> = {}): ContainerTaskSpec {
  seq++;
  return {
    name: `svc-ex${seq}-tr${seq}-1`,
    image: 'registry.example/python:3.12',
    command: ['/bin/sh', '-c', 'true'],
    env: {},
    inputFiles: {},
    outputFiles: [],
    workingDir: '/work',
    delete: true,
    labels: { 'svc.execution': `ex${seq}`, 'svc.task-run': `tr${seq}`, 'svc.workspace': 'default' },
    ...over,
  };
}

function callbacks(signal = new AbortController().signal) {
  const lines: Array<[string, LogStream]> = [];
  return { cb: { onLog: (l: string, s: LogStream) => lines.push([l, s]), signal }, lines };
}

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | undefined) => (b ? new TextDecoder().decode(b) : undefined);
const podPath = (name: string) => new RegExp(`^/api/v1/namespaces/${NS}/pods/${name}$`);

describe('cluster runner against an in-test fake Kubernetes API server', () => {
  before(async () => {
    fake = await startFakeKubernetes();
    runner = makeRunner();
  });
  after(async () => { await fake?.close(); });
  beforeEach(() => { fake.behaviour = () => ({}); });

  it('happy path: input files in, logs streamed, output files out, pod and secret deleted', async () => {
    const { cb, lines } = callbacks();
    const s = spec({
      env: { GREETING: 'hello there' },
      inputFiles: { 'input.txt': enc('from input\n'), 'sub/dir/data.csv': enc('a,b\n') },
      outputFiles: ['out/*.csv', 'bin.dat', 'missing.txt'],
      timeoutMs: 60_000,
      command: [
        '/bin/sh',
        '-c',
        'cat input.txt; echo "$GREETING"; cat sub/dir/data.csv; mkdir -p out/deep; echo res > out/result.csv; ' +
          'echo deep > out/deep/x.csv; echo no > out/skip.txt; printf "\\001\\377" > bin.dat; printf "last"',
      ],
    });
    const res = await runner.run(s, cb);
    assert.equal(res.outcome, 'exited');
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines, [['from input', 'stdout'], ['hello there', 'stdout'], ['a,b', 'stdout'], ['last', 'stdout']]);
    assert.deepEqual(Object.keys(res.outputFiles).sort(), ['bin.dat', 'out/result.csv']);
    assert.equal(dec(res.outputFiles['out/result.csv']), 'res\n');
    assert.deepEqual([...res.outputFiles['bin.dat']!], [1, 255]);

    const podName = s.name;
    // the input secret: one key per file, mapped to the file's path in the volume
    const [secretReq] = fake.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/secrets$`)).filter((r) => r.body.metadata.name === `${podName}-in`);
    assert.ok(secretReq);
    assert.equal(secretReq.body.metadata.namespace, NS);
    assert.equal(Buffer.from(secretReq.body.data.f0, 'base64').toString(), 'from input\n');
    assert.equal(Buffer.from(secretReq.body.data.f1, 'base64').toString(), 'a,b\n');

    const [podReq] = fake.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/pods$`)).filter((r) => r.body.metadata.name === podName);
    assert.ok(podReq);
    const pod = podReq.body;
    assert.equal(pod.metadata.namespace, NS);
    assert.equal(pod.metadata.labels['svc.execution'], `ex${seq}`);
    assert.equal(pod.metadata.labels['svc.workspace'], 'default');
    assert.equal(pod.metadata.labels['svc.runner'], 'cluster');
    assert.equal(pod.metadata.labels['svc.kept'], 'false');
    assert.equal(pod.metadata.labels['svc.attempt'], podName);
    assert.equal(pod.spec.restartPolicy, 'Never');
    assert.equal(pod.spec.activeDeadlineSeconds, 60);
    assert.equal(pod.spec.automountServiceAccountToken, false);
    assert.deepEqual(pod.spec.imagePullSecrets, [{ name: 'regcred' }, { name: 'mirror-cred' }]);
    assert.deepEqual(pod.spec.securityContext, { runAsUser: 1000, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    const containers = [...pod.spec.initContainers, ...pod.spec.containers];
    assert.deepEqual(containers.map((c: any) => c.name), ['svc-input', 'svc-output', 'main']);
    for (const c of containers) {
      assert.equal(c.securityContext.runAsUser, 1000, c.name);
      assert.equal(c.securityContext.runAsNonRoot, true, c.name);
      assert.equal(c.securityContext.allowPrivilegeEscalation, false, c.name);
      assert.ok(c.volumeMounts.some((m: any) => m.name === 'svc-work' && m.mountPath === '/work'), c.name);
    }
    const [input, output] = pod.spec.initContainers;
    assert.equal(input.image, HELPER);
    assert.equal(input.restartPolicy, undefined);
    assert.equal(output.image, HELPER);
    assert.equal(output.restartPolicy, 'Always', 'the output helper is a native sidecar');
    const inVol = pod.spec.volumes.find((v: any) => v.name === 'svc-in');
    assert.equal(inVol.secret.secretName, `${podName}-in`);
    assert.deepEqual(inVol.secret.items, [{ key: 'f0', path: 'input.txt' }, { key: 'f1', path: 'sub/dir/data.csv' }]);
    const main = pod.spec.containers[0];
    assert.equal(main.image, 'registry.example/python:3.12');
    assert.deepEqual(main.command, s.command);
    assert.deepEqual(main.env, [{ name: 'GREETING', value: 'hello there' }]);
    assert.equal(main.workingDir, '/work');
    assert.deepEqual(main.resources, {
      requests: { cpu: '100m', memory: '128Mi', 'ephemeral-storage': '256Mi' },
      limits: { cpu: '1', memory: '512Mi', 'ephemeral-storage': '10Gi' },
    });

    // the secret is owned by the pod, then both are deleted
    const patch = fake.find('PATCH', new RegExp(`/secrets/${podName}-in$`))[0];
    assert.ok(patch);
    assert.match(patch.contentType, /merge-patch/);
    assert.equal(patch.body.metadata.ownerReferences[0].kind, 'Pod');
    assert.equal(patch.body.metadata.ownerReferences[0].name, podName);
    assert.ok(patch.body.metadata.ownerReferences[0].uid);
    assert.ok(fake.find('DELETE', podPath(podName)).length === 1);
    assert.ok(fake.find('DELETE', new RegExp(`/secrets/${podName}-in$`)).length === 1);
    assert.equal(fake.pods.size, 0);
    assert.equal(fake.secrets.size, 0);
    // the main log was followed with timestamps
    const logReq = fake.find('GET', new RegExp(`/pods/${podName}/log$`)).find((r) => r.query.container === 'main');
    assert.ok(logReq);
    assert.equal(logReq.query.timestamps, 'true');
  });

  it('reports a non-zero exit code; a pod without files has no helper containers and no secret', async () => {
    const { cb, lines } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'echo failing >&2; exit 4'] });
    const before = fake.requests.length;
    const res = await runner.run(s, cb);
    assert.equal(res.outcome, 'exited');
    assert.equal(res.exitCode, 4);
    assert.deepEqual(lines, [['failing', 'stdout']]);
    const reqs = fake.requests.slice(before);
    assert.equal(reqs.filter((r) => r.path.includes('/secrets')).length, 0);
    const pod = reqs.find((r) => r.method === 'POST')!.body;
    assert.equal(pod.spec.initContainers, undefined);
    assert.equal(pod.spec.activeDeadlineSeconds, undefined);
    assert.equal(fake.pods.size, 0);
  });

  it('resumes a dropped log connection without losing or repeating lines', async () => {
    // lines of one chunk share a timestamp; the first connection ends after two of them
    fake.behaviour = () => ({ dropFirstFollowAfterLines: 2 });
    const { cb, lines } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'sleep 0.3; printf "a\\nb\\nc\\n"; sleep 0.5; echo d; sleep 0.3; echo e'] });
    const res = await runner.run(s, cb);
    assert.equal(res.exitCode, 0);
    assert.deepEqual(lines.map(([l]) => l), ['a', 'b', 'c', 'd', 'e']);
    const logReqs = fake.find('GET', new RegExp(`/pods/${s.name}/log$`)).filter((r) => r.query.container === 'main');
    assert.ok(logReqs.length >= 2, 'reconnected');
    assert.ok(logReqs.slice(1).some((r) => r.query.sinceTime), 'resumed with sinceTime');
  });

  it('applies default resources to what the task leaves out and caps what exceeds the maximum', async () => {
    const { cb } = callbacks();
    const s = spec({ resources: { request: { cpu: '4', memory: '64Mi' }, limit: { memory: '8Gi' } } });
    await runner.run(s, cb);
    const pod = fake.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/pods$`)).find((r) => r.body.metadata.name === s.name)!.body;
    assert.deepEqual(pod.spec.containers[0].resources, {
      requests: { cpu: '2', memory: '64Mi', 'ephemeral-storage': '256Mi' },
      limits: { cpu: '2', memory: '2Gi', 'ephemeral-storage': '10Gi' },
    });
  });

  it('computes resources with proper quantity comparison', () => {
    assert.equal(parseQuantity('100m'), 0.1);
    assert.equal(parseQuantity('1'), 1);
    assert.equal(parseQuantity('1.5'), 1.5);
    assert.equal(parseQuantity('128Mi'), 128 * 2 ** 20);
    assert.equal(parseQuantity('2Gi'), 2 * 2 ** 30);
    assert.equal(parseQuantity('1G'), 1e9);
    assert.equal(parseQuantity('1e3'), 1000);
    assert.equal(parseQuantity('500k'), 500_000);
    assert.ok(parseQuantity('100m') < parseQuantity('1'));
    assert.ok(parseQuantity('1500Mi') < parseQuantity('2Gi'));
    assert.ok(parseQuantity('3000m') > parseQuantity('2'));
    assert.equal(normaliseQuantity('10GiB'), '10Gi');
    assert.throws(() => parseQuantity('lots'), RunnerSpecError);
    assert.throws(() => parseQuantity('-1'), RunnerSpecError);

    // nothing asked: the defaults
    assert.deepEqual(effectiveResources(undefined, defaultResources, maxResources), {
      requests: { cpu: '100m', memory: '128Mi', 'ephemeral-storage': '256Mi' },
      limits: { cpu: '1', memory: '512Mi', 'ephemeral-storage': '10Gi' },
    });
    // small asks kept as written (millicores vs cores, Mi vs Gi)
    assert.deepEqual(
      effectiveResources({ request: { cpu: '250m', memory: '1Gi' }, limit: { cpu: '1500m', memory: '1536Mi' } }, defaultResources, maxResources),
      {
        requests: { cpu: '250m', memory: '1Gi', 'ephemeral-storage': '256Mi' },
        limits: { cpu: '1500m', memory: '1536Mi', 'ephemeral-storage': '10Gi' },
      },
    );
    // a limit below the default request lowers the request to it
    assert.deepEqual(effectiveResources({ limit: { memory: '64Mi' } }, defaultResources, maxResources).requests!.memory, '64Mi');
    // request caps, when configured
    const capped = effectiveResources(
      { request: { memory: '1Gi' }, limit: { memory: '2Gi' } },
      defaultResources,
      { request: { memory: '256Mi' }, limit: { memory: '4Gi' } },
    );
    assert.equal(capped.requests!.memory, '256Mi');
    assert.equal(capped.limits!.memory, '2Gi');
    // empty strings (unset configuration values) mean nothing
    assert.deepEqual(effectiveResources({ request: { cpu: '' } }, { request: { cpu: '' } }, { limit: { cpu: '' } }), {});
  });

  it('refuses bad quantities and bad input paths before calling the API', async () => {
    const { cb } = callbacks();
    const before = fake.requests.length;
    await assert.rejects(runner.run(spec({ resources: { limit: { cpu: 'a lot' } } }), cb), RunnerSpecError);
    await assert.rejects(runner.run(spec({ inputFiles: { '../x': enc('x') } }), cb), RunnerSpecError);
    assert.equal(fake.requests.length, before);
    assert.throws(() => makeRunner({ maxResources: { limit: { memory: 'big' } } }), /max_resources\.limit\.memory/);
  });

  it('deletes the pod with the kill grace period after timeoutMs (outcome timeout)', async () => {
    const { cb, lines } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'echo started; sleep 30'], timeoutMs: 1500, killGraceSecs: 3 });
    const t0 = Date.now();
    const res = await runner.run(s, cb);
    const ms = Date.now() - t0;
    assert.equal(res.outcome, 'timeout');
    assert.ok(ms >= 1400 && ms < 10_000, `took ${ms} ms`);
    assert.deepEqual(lines, [['started', 'stdout']]);
    assert.deepEqual(fake.deletions.filter((d) => d.name === s.name), [{ name: s.name, gracePeriodSeconds: 3 }]);
    const pod = fake.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/pods$`)).find((r) => r.body.metadata.name === s.name)!.body;
    assert.equal(pod.spec.activeDeadlineSeconds, 2);
    assert.equal(fake.pods.size, 0);
  });

  it('deletes the pod with the kill grace period when the signal aborts (outcome killed)', async () => {
    const ac = new AbortController();
    const lines: string[] = [];
    const s = spec({ command: ['/bin/sh', '-c', 'echo ready; sleep 30'], killGraceSecs: 5, outputFiles: ['never.txt'] });
    const res = await runner.run(s, { signal: ac.signal, onLog: (l) => { lines.push(l); if (l === 'ready') ac.abort(); } });
    assert.equal(res.outcome, 'killed');
    assert.deepEqual(res.outputFiles, {});
    assert.deepEqual(lines, ['ready']);
    assert.deepEqual(fake.deletions.filter((d) => d.name === s.name), [{ name: s.name, gracePeriodSeconds: 5 }]);
    assert.equal(fake.pods.size, 0);
  });

  it('keeps the pod with delete:false (labelled, end time annotated); removeKept deletes it once it ended before the cut-off', async () => {
    const { cb } = callbacks();
    const s = spec({ command: ['/bin/sh', '-c', 'echo kept'], delete: false });
    const res = await runner.run(s, cb);
    assert.equal(res.exitCode, 0);
    const kept = fake.pods.get(`${NS}/${s.name}`);
    assert.ok(kept, 'pod kept');
    assert.equal(kept.obj.metadata.labels['svc.kept'], 'true');
    const endedAt = Date.parse(kept.obj.metadata.annotations['svc/ended-at']);
    assert.ok(Math.abs(endedAt - Date.now()) < 10_000);
    assert.equal(fake.find('DELETE', podPath(s.name)).length, 0);

    // a kept pod still running is never removed
    const ac = new AbortController();
    const running = spec({ command: ['/bin/sh', '-c', 'echo up; sleep 30'], delete: false, killGraceSecs: 1 });
    let up!: () => void;
    const isUp = new Promise<void>((r) => { up = r; });
    const runningRun = runner.run(running, { signal: ac.signal, onLog: (l) => { if (l === 'up') up(); } });
    await isUp;

    assert.equal(await runner.removeKept(new Date(Date.now() - 3600_000)), 0);
    assert.ok(fake.pods.has(`${NS}/${s.name}`));
    const list = fake.find('GET', new RegExp(`^/api/v1/namespaces/${NS}/pods$`)).at(-1)!;
    assert.equal(list.query.labelSelector, 'svc.runner=cluster,svc.kept=true');

    assert.equal(await runner.removeKept(new Date(Date.now() + 3600_000)), 1);
    assert.equal(fake.pods.has(`${NS}/${s.name}`), false);
    assert.equal(fake.find('DELETE', podPath(s.name)).length, 1);
    assert.ok(fake.pods.has(`${NS}/${running.name}`), 'the running pod stays');

    ac.abort();
    assert.equal((await runningRun).outcome, 'killed');
    assert.equal(fake.pods.size, 0);
  });

  it('fails clearly, naming the image, when the image cannot be pulled, and deletes the pod', async () => {
    fake.behaviour = () => ({ mode: 'imagePullError' });
    const r = makeRunner({ imagePullTimeoutMs: 300 });
    const { cb } = callbacks();
    const s = spec({ image: 'registry.example/nope:1', inputFiles: { 'a.txt': enc('a') } });
    await assert.rejects(r.run(s, cb), /image registry\.example\/nope:1 could not be pulled/);
    assert.equal(fake.pods.size, 0);
    assert.equal(fake.secrets.size, 0);
  });

  it('is built from the configuration (workflow.container_runner, workflow.cluster, retention days)', async () => {
    const config = defaultConfig();
    assert.equal(await createContainerRunner(config), null);
    config.workflow.container_runner = 'cluster';
    config.workflow.cluster.namespace = NS;
    config.workflow.cluster.max_resources.limit.cpu = '500m';
    const r = await createContainerRunner(config, { kubeConfig: fake.kubeConfig() });
    assert.equal(r?.kind, 'cluster');
    const s = spec({ resources: { limit: { cpu: '3' } } });
    await r!.run(s, callbacks().cb);
    const pod = fake.find('POST', new RegExp(`^/api/v1/namespaces/${NS}/pods$`)).find((q) => q.body.metadata.name === s.name)!.body;
    assert.deepEqual(pod.spec.containers[0].resources.limits, { cpu: '500m', memory: '512Mi', 'ephemeral-storage': '10Gi' });
    assert.equal(pod.spec.containers[0].resources.requests.cpu, '100m');
    assert.equal(pod.spec.containers[0].securityContext.runAsUser, 1000);
    assert.equal(pod.spec.initContainers, undefined);

    const now = new Date('2026-01-10T00:00:00Z');
    assert.equal(keptContainerCutoff(config, now)?.toISOString(), '2026-01-03T00:00:00.000Z');
    config.workflow.kept_container_retention_days = 0;
    assert.equal(keptContainerCutoff(config, now), null);
  });

  it('fails clearly when an init container fails, with its exit and log, and cleans up', async () => {
    fake.behaviour = () => ({ failFirstInitWith: 3 });
    const { cb, lines } = callbacks();
    const s = spec({ inputFiles: { 'x': enc('x') }, command: ['/bin/sh', '-c', 'echo never'] });
    await assert.rejects(
      runner.run(s, cb),
      /^Error: pod \S+ failed before its main container started: init container svc-input \(image registry\.example\/svc-task-helper:7\) exited 3 \(Error\): cat: \/svc\/in\/x: Permission denied$/,
    );
    assert.deepEqual(lines, []);
    assert.equal(fake.pods.size, 0);
    assert.equal(fake.secrets.size, 0);
  });

  it('names pods as DNS labels and glob-matches outputs like the helper', () => {
    assert.equal(podNameFor('svc-ex1-tr2-3'), 'svc-ex1-tr2-3');
    const long = podNameFor(`svc-${'x'.repeat(80)}-1`);
    assert.ok(long.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(long));
    const mixed = podNameFor('SVC_Exec.1');
    assert.match(mixed, /^svc-exec-1-[0-9a-f]{8}$/);
    assert.notEqual(podNameFor('svc_a'), podNameFor('svc.a'));
    const m = outputMatcher('out/*.csv');
    assert.ok(m('out/a.csv'));
    assert.ok(!m('out/deep/a.csv'));
    assert.ok(outputMatcher('**/*.csv')('out/deep/a.csv'));
    assert.ok(outputMatcher('**/*.csv')('a.csv'));
    assert.ok(outputMatcher('res')('res/x/y.bin'));
    assert.ok(outputMatcher('./file[0-9].txt')('file7.txt'));
    assert.ok(!outputMatcher('file[!0-9].txt')('file7.txt'));
  });
});
