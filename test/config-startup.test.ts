// Configuration layer: the startup checks that span sections, run in order after a load.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError, defaultConfig, startupChecks, type Config } from '../src/config/index.js';
import { load } from './helpers/config.js';

describe('startup checks', () => {
  const key64 = Buffer.alloc(64, 7).toString('base64');
  const key32 = Buffer.alloc(32, 9).toString('base64');
  const APPS_PREFIX = 'apps.origin must differ from apps.service_origin, both must be scheme://host[:port] and the apps TTLs >= 1: ';
  const LAUNCHER_PREFIX = 'apps.pod.launcher must be none, subprocess or cluster with the keys each needs: ';

  /** Defaults plus the always-required storage credentials: passes every check. */
  function good(): Config {
    const c = defaultConfig();
    c.storage.access_key = 'ak';
    c.storage.secret_key = 'sk';
    return c;
  }

  function checkError(c: Config): string {
    try {
      startupChecks(c);
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.ok(!err.message.includes('\n'));
      return err.message;
    }
    assert.fail('expected startupChecks to throw');
  }

  test('a complete configuration passes', () => {
    assert.doesNotThrow(() => startupChecks(good()));
  });

  test('1. oidc.enabled requires security.secret_key of >= 64 base64 bytes', () => {
    const msg = 'oidc.enabled requires security.secret_key (base64, >=64 bytes)';
    const c = good();
    c.oidc.enabled = true;
    c.oidc.issuer_url = 'https://idp.example.com';
    c.oidc.client_id = 'svc';
    assert.equal(checkError(c), msg);
    for (const bad of [
      Buffer.alloc(63).toString('base64'), // too short
      `${key64}=`, // wrong padding
      Buffer.alloc(64, 0xff).toString('base64').replace(/=+$/, ''), // standard alphabet ('/') without its padding
      `${key64.slice(0, 10)}*${key64.slice(11)}`, // outside the alphabet
      ` ${key64}`,
      `${key64.slice(0, 40)}+${key64.slice(41, 50)}_${key64.slice(51)}`, // mixed alphabets
    ]) {
      c.security.secret_key = bad;
      assert.equal(checkError(c), msg, bad);
    }
    c.security.secret_key = key64;
    assert.doesNotThrow(() => startupChecks(c));
    c.security.secret_key = Buffer.alloc(64, 0xfb).toString('base64url'); // url-safe, unpadded
    assert.doesNotThrow(() => startupChecks(c));
    c.security.secret_key = '';
    c.oidc.enabled = false;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('2. oidc.enabled requires issuer_url and client_id', () => {
    const msg = 'oidc.enabled requires issuer_url and client_id';
    const c = good();
    c.oidc.enabled = true;
    c.security.secret_key = key64;
    assert.equal(checkError(c), msg);
    c.oidc.issuer_url = 'https://idp.example.com';
    assert.equal(checkError(c), msg);
    c.oidc.client_id = 'svc';
    c.oidc.issuer_url = '';
    assert.equal(checkError(c), msg);
    c.oidc.issuer_url = 'https://idp.example.com';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('3. catalog.enabled requires warehouse and auth_token', () => {
    const msg = 'catalog.enabled requires warehouse and auth_token';
    const c = good();
    c.catalog.enabled = true;
    assert.equal(checkError(c), msg);
    c.catalog.auth_token = 't';
    c.catalog.warehouse = '';
    assert.equal(checkError(c), msg);
    c.catalog.warehouse = 's3://w';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('4. catalog.enabled requires storage access_key/secret_key/bucket', () => {
    const msg = 'catalog.enabled requires storage access_key/secret_key/bucket';
    for (const k of ['access_key', 'secret_key', 'bucket'] as const) {
      const c = good();
      c.catalog.enabled = true;
      c.catalog.auth_token = 't';
      c.storage[k] = '';
      assert.equal(checkError(c), msg, k);
    }
  });

  test('5. secrets.master_key must be base64 of >= 32 bytes', () => {
    const msg = 'secrets.master_key must be base64 of >=32 bytes';
    const c = good();
    for (const bad of ['not base64!', Buffer.alloc(31).toString('base64'), 'abc']) {
      c.secrets.master_key = bad;
      assert.equal(checkError(c), msg, bad);
    }
    c.secrets.master_key = key32;
    assert.doesNotThrow(() => startupChecks(c));
    c.secrets.master_key = '';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('6. always: storage bucket, access_key, secret_key', () => {
    const msg =
      'the apps API requires [storage] bucket, access_key, secret_key (it stores content in the bucket); set them in svc.toml or SVC_STORAGE__*';
    assert.equal(checkError(defaultConfig()), msg);
    assert.ok(msg.startsWith('the apps API requires [storage] bucket, access_key, secret_key'));
    for (const k of ['access_key', 'secret_key', 'bucket'] as const) {
      const c = good();
      c.storage[k] = '';
      assert.equal(checkError(c), msg, k);
    }
  });

  test('7. engine limits', () => {
    const msg = 'engine.max_rows and engine.query_timeout_secs must be >= 1';
    let c = good();
    c.engine.max_rows = 0;
    assert.equal(checkError(c), msg);
    c = good();
    c.engine.query_timeout_secs = 0;
    assert.equal(checkError(c), msg);
    c = good();
    c.engine.max_rows = 50;
    assert.equal(checkError(c), 'engine.preview_rows must be <= engine.max_rows');
    c.engine.preview_rows = 50;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('8. workflow.kill_poll_ms minimum 100', () => {
    const c = good();
    c.workflow.kill_poll_ms = 99;
    assert.equal(checkError(c), 'workflow.kill_poll_ms is 99, below the minimum 100');
    c.workflow.kill_poll_ms = 100;
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('9. container_runner other than none needs storage and plugin_host.image', () => {
    const msg =
      'workflow.container_runner other than none requires [storage] bucket, access_key, secret_key and [workflow.plugin_host] image';
    for (const runner of ['cluster', 'local_container'] as const) {
      const c = good();
      c.workflow.container_runner = runner;
      assert.equal(checkError(c), msg);
      assert.ok(checkError(c).startsWith('workflow.container_runner other than none requires [storage]'));
      c.workflow.plugin_host.image = '';
      assert.equal(checkError(c), msg);
      c.workflow.plugin_host.image = 'svc-plugin-host:1';
      assert.doesNotThrow(() => startupChecks(c));
    }
  });

  test('10. apps.origin: origins and TTLs', () => {
    const ok = (): Config => {
      const c = good();
      c.apps.origin = 'https://apps.example.com';
      c.apps.service_origin = 'https://svc.example.com:8443';
      return c;
    };
    assert.doesNotThrow(() => startupChecks(ok()));
    const cases: Array<[string, (c: Config) => void, string]> = [
      ['service_origin empty', (c) => { c.apps.service_origin = ''; }, 'apps.service_origin is empty'],
      ['same origin', (c) => { c.apps.service_origin = 'https://APPS.example.com:443'; },
        'apps.origin and apps.service_origin are both https://apps.example.com'],
      ['origin with a path', (c) => { c.apps.origin = 'https://apps.example.com/x'; },
        'apps.origin "https://apps.example.com/x" is not scheme://host[:port] (http or https, no path)'],
      ['origin with a trailing slash', (c) => { c.apps.origin = 'https://apps.example.com/'; },
        'apps.origin "https://apps.example.com/" is not scheme://host[:port] (http or https, no path)'],
      ['service origin with a query', (c) => { c.apps.service_origin = 'https://svc.example.com?a=1'; },
        'apps.service_origin "https://svc.example.com?a=1" is not scheme://host[:port] (http or https, no path)'],
      ['other scheme', (c) => { c.apps.origin = 'ftp://apps.example.com'; },
        'apps.origin "ftp://apps.example.com" is not scheme://host[:port] (http or https, no path)'],
      ['bad port', (c) => { c.apps.origin = 'http://apps.example.com:99999'; },
        'apps.origin "http://apps.example.com:99999" is not scheme://host[:port] (http or https, no path)'],
      ['ticket ttl', (c) => { c.apps.ticket_ttl_secs = 0; }, 'apps.ticket_ttl_secs is 0'],
      ['cookie ttl', (c) => { c.apps.cookie_ttl_secs = 0; }, 'apps.cookie_ttl_secs is 0'],
      ['idle ttl', (c) => { c.apps.session_idle_secs = 0; }, 'apps.session_idle_secs is 0'],
      ['absolute ttl', (c) => { c.apps.session_idle_secs = 0; c.apps.session_absolute_secs = 0; },
        'apps.session_idle_secs is 0'],
    ];
    for (const [name, mutate, problem] of cases) {
      const c = ok();
      mutate(c);
      const m = checkError(c);
      assert.ok(m.startsWith('apps.origin must differ from apps.service_origin'), name);
      assert.equal(m, APPS_PREFIX + problem, name);
    }
    // TTLs are only checked with apps.origin set
    const off = good();
    off.apps.ticket_ttl_secs = 0;
    assert.doesNotThrow(() => startupChecks(off));
  });

  test('11. apps.pod.launcher', () => {
    const cases: Array<[string, (c: Config) => void, string]> = [
      ['unknown launcher', (c) => { c.apps.pod.launcher = 'docker'; }, 'apps.pod.launcher is "docker"'],
      ['subprocess without command', (c) => { c.apps.pod.launcher = 'subprocess'; }, 'subprocess needs apps.pod.command'],
      ['subprocess without origin', (c) => { c.apps.pod.launcher = 'subprocess'; c.apps.pod.command = ['python']; },
        'subprocess needs apps.origin'],
      ['cluster without origin', (c) => { c.apps.pod.launcher = 'cluster'; }, 'cluster needs apps.origin'],
      ['cluster without callback_url', (c) => {
        c.apps.pod.launcher = 'cluster';
        c.apps.origin = 'https://apps.example.com';
        c.apps.service_origin = 'https://svc.example.com';
      }, 'cluster needs apps.pod.callback_url'],
    ];
    for (const [name, mutate, problem] of cases) {
      const c = good();
      mutate(c);
      const m = checkError(c);
      assert.ok(m.startsWith('apps.pod.launcher must be none, subprocess or cluster'), name);
      assert.equal(m, LAUNCHER_PREFIX + problem, name);
    }
    for (const launcher of ['subprocess', 'cluster']) {
      const c = good();
      c.apps.pod.launcher = launcher;
      c.apps.pod.command = ['python', '-m', 'apps'];
      c.apps.origin = 'https://apps.example.com';
      c.apps.service_origin = 'https://svc.example.com';
      c.apps.pod.callback_url = 'http://svc:8080';
      assert.doesNotThrow(() => startupChecks(c));
    }
  });

  test('12. data_api.replicas above 1 requires shared_store_url', () => {
    const c = good();
    c.data_api.replicas = 2;
    assert.equal(checkError(c), 'data_api.replicas above 1 requires data_api.shared_store_url');
    c.data_api.shared_store_url = 'redis://kv:6379';
    assert.doesNotThrow(() => startupChecks(c));
  });

  test('checks run in order and report the first failure', () => {
    const c = defaultConfig(); // storage credentials missing (6)
    c.oidc.enabled = true; // (1)
    c.data_api.replicas = 3; // (12)
    c.workflow.kill_poll_ms = 1; // (8)
    assert.equal(checkError(c), 'oidc.enabled requires security.secret_key (base64, >=64 bytes)');
    c.oidc.enabled = false;
    assert.match(checkError(c), /^the apps API requires/);
    c.storage.access_key = 'a';
    c.storage.secret_key = 'b';
    assert.equal(checkError(c), 'workflow.kill_poll_ms is 1, below the minimum 100');
    c.workflow.kill_poll_ms = 100;
    assert.equal(checkError(c), 'data_api.replicas above 1 requires data_api.shared_store_url');
  });

  test('a configuration from file and environment passes end to end', () => {
    const c = load('[storage]\naccess_key = "ak"\n', {
      SVC_STORAGE__SECRET_KEY: 'sk',
      SVC_OIDC__ENABLED: 'true',
      SVC_OIDC__ISSUER_URL: 'https://idp.example.com',
      SVC_OIDC__CLIENT_ID: 'svc',
      SVC_SECURITY__SECRET_KEY: key64,
      SVC_SECRETS__MASTER_KEY: key32,
    });
    assert.doesNotThrow(() => startupChecks(c));
  });
});
