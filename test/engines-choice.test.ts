// engines.provisioner: the pure choice (no cluster needed: environment and file check injected).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chooseProvisioner, resolveProvisioner } from '../src/engines/choice.js';

const cfg = (p: 'auto' | 'cluster' | 'local_container' | 'none') => ({ engines: { provisioner: p } });
const none = () => false;

describe('engines.provisioner', () => {
  test('explicit values choose themselves, whatever the environment', () => {
    for (const p of ['cluster', 'local_container', 'none'] as const) {
      assert.equal(resolveProvisioner(cfg(p), { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, () => true), p);
      assert.equal(resolveProvisioner(cfg(p), {}, none), p);
    }
  });

  test('auto inside a cluster (KUBERNETES_SERVICE_HOST) picks cluster', () => {
    assert.equal(resolveProvisioner(cfg('auto'), { KUBERNETES_SERVICE_HOST: '10.0.0.1' }, none), 'cluster');
  });

  test('auto with a kube config picks cluster: KUBECONFIG files, then ~/.kube/config', () => {
    const seen: string[] = [];
    const has = (want: string) => (p: string) => (seen.push(p), p === want);
    assert.equal(resolveProvisioner(cfg('auto'), { KUBECONFIG: '/a/missing:/b/kc' }, has('/b/kc')), 'cluster');
    assert.deepEqual(seen, ['/a/missing', '/b/kc']);
    assert.equal(resolveProvisioner(cfg('auto'), { HOME: '/home/u' }, has('/home/u/.kube/config')), 'cluster');
    const c = chooseProvisioner(cfg('auto'), { HOME: '/home/u' }, has('/home/u/.kube/config'));
    assert.match(c.reason, /\/home\/u\/\.kube\/config/);
  });

  test('auto with no cluster is none (never local_container), and says why', () => {
    const c = chooseProvisioner(cfg('auto'), { HOME: '/home/u', KUBECONFIG: '/x' }, none);
    assert.equal(c.provisioner, 'none');
    assert.match(c.reason, /no cluster/);
    assert.equal(resolveProvisioner(cfg('auto'), {}, none), 'none');
  });
});

describe('engine images and states (pure)', async () => {
  const { parseImageRef, resolveImage } = await import('../src/engines/images.js');
  const { requestTransition, workerAction } = await import('../src/engines/states.js');
  test('image references are normalised as the Docker CLI does', () => {
    assert.deepEqual(parseImageRef('trino'), { repository: 'docker.io/library/trino', tag: null, digest: null });
    assert.deepEqual(parseImageRef('trinodb/trino:476'), { repository: 'docker.io/trinodb/trino', tag: '476', digest: null });
    assert.deepEqual(parseImageRef('localhost:5000/a/b:1.2@sha256:' + 'f'.repeat(64)), { repository: 'localhost:5000/a/b', tag: '1.2', digest: 'sha256:' + 'f'.repeat(64) });
    assert.throws(() => parseImageRef('a/b@sha256:short'), /digest must be sha256/);
    assert.equal(resolveImage('olap', {}).image, 'docker.io/starrocks/allin1-ubuntu:3.4.5');
    assert.throws(() => resolveImage('olap', { image: 'starrocks/allin1-ubuntu:3' }), /bare major version/);
    assert.throws(() => resolveImage('trino', { image: 'trinodb/trino:400' }), /is not a pinned version of Trino/);
  });
  test('state machine: requests and what the worker does', () => {
    assert.deepEqual(requestTransition('running', 'running', 'stop'), { kind: 'change', state: 'stopping', desired: 'stopped' });
    assert.deepEqual(requestTransition('failed', 'running', 'start'), { kind: 'change', state: 'provisioning', desired: 'running' });
    assert.deepEqual(requestTransition('stopped', 'stopped', 'stop'), { kind: 'unchanged' });
    assert.deepEqual(requestTransition('provisioning', 'running', 'delete'), { kind: 'change', state: 'stopping', desired: 'deleted' });
    assert.equal(requestTransition('stopping', 'deleted', 'start').kind, 'refused');
    assert.equal(workerAction('provisioning', 'running'), 'up');
    assert.equal(workerAction('stopping', 'stopped'), 'stop');
    assert.equal(workerAction('stopping', 'deleted'), 'remove');
    assert.equal(workerAction('running', 'running'), 'none');
  });
});

test('SVC_ENGINE_TLS_INSECURE: 1, true and yes skip verification; anything else does not', async () => {
  const { engineTlsInsecure } = await import('../src/engines/tls.js');
  for (const v of ['1', 'true', 'yes']) assert.equal(engineTlsInsecure({ SVC_ENGINE_TLS_INSECURE: v }), true, v);
  for (const v of [undefined, '', '0', 'false', 'no', 'TRUE ']) assert.equal(engineTlsInsecure({ SVC_ENGINE_TLS_INSECURE: v }), false, String(v));
});
