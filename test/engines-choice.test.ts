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
