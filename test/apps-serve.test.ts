// `svc serve` as a real process starts the apps listener on apps.listen only when apps.origin is
// set, and that listener answers with the apps origin's framing policy.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { startS3, type TestS3 } from './helpers/s3.js';
import { spawnSvc, serviceEnv, waitExit } from './helpers/cli.js';
import { freePorts } from './helpers/net.js';
import { COOKIE_TOSSING_WARNING, SAME_HOST_WARNING } from '../src/cli/serve.js';
import { redisUrl } from './helpers/redis-dbs.js';

let db: TestDatabase;
let s3: TestS3;
before(async () => { db = await createTestDatabase(); s3 = await startS3(); });
after(async () => { await db.drop(); await s3.stop(); });

async function serve(extra: Record<string, string>) {
  const [port, appsPort] = await freePorts(2);
  const env = serviceEnv(db.url, s3, { SVC_REDIS__URL: redisUrl('appsServe'), SVC_SERVER__HOST: '127.0.0.1', SVC_SERVER__PORT: String(port), SVC_LOG__JSON: 'true', SVC_APPS__LISTEN: `127.0.0.1:${appsPort}`, ...extra });
  const { child, output } = await spawnSvc(['serve'], { env, ready: /"msg":"listening"/ });
  return { child, output, base: `http://127.0.0.1:${port}`, apps: `http://127.0.0.1:${appsPort}` };
}

describe('svc serve and the apps listener', () => {
  test('with apps.origin set, the apps listener answers on apps.listen, framed only by apps.service_origin', async () => {
    const s = await serve({ SVC_APPS__ORIGIN: 'https://apps.example.test', SVC_APPS__SERVICE_ORIGIN: 'https://svc.example.test' });
    try {
      // The API's "listening" comes first; the apps listener logs its own line right after.
      let res: Response | undefined;
      for (let i = 0; i < 100 && !res; i++) res = await fetch(`${s.apps}/_svc/session`).catch(() => new Promise<undefined>((r) => setTimeout(() => r(undefined), 100)));
      assert.ok(res, s.output());
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('content-security-policy'), 'frame-ancestors https://svc.example.test');
      assert.match(s.output(), /"msg":"apps listener listening"/);
      assert.doesNotMatch(s.output(), /shares its host/, 'sibling subdomains are the intended setup');
      // The SPEC's cookie names carry no __Host- prefix: a sibling host could overwrite them.
      const tossing = s.output().split('\n').find((l) => l.includes('cookie tossing'));
      assert.ok(tossing, s.output());
      assert.deepEqual([JSON.parse(tossing).msg, JSON.parse(tossing).level], [COOKIE_TOSSING_WARNING, 40]);
      assert.equal((await fetch(`${s.base}/_svc/session`)).status, 404, 'the API does not serve the apps origin');
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await waitExit(s.child), 0, s.output());
    }
  });

  test('an apps.origin on another port of the service\'s host starts, with a warning that it is not isolated', async () => {
    const s = await serve({
      SVC_APPS__ORIGIN: 'https://svc.example.test:8443', SVC_APPS__SERVICE_ORIGIN: 'https://svc.example.test',
      SVC_SESSION__COOKIE_NAME: '__Host-svc_session', SVC_CSRF__COOKIE_NAME: '__Host-svc_csrf',
    });
    try {
      for (let i = 0; i < 100 && !/apps listener listening/.test(s.output()); i++) await new Promise((r) => setTimeout(r, 100));
      const line = s.output().split('\n').find((l) => l.includes('shares its host'));
      assert.ok(line, s.output());
      assert.equal(JSON.parse(line).msg, SAME_HOST_WARNING);
      assert.equal(JSON.parse(line).level, 40, 'the warn level');
      assert.doesNotMatch(s.output(), /cookie tossing/, '__Host- cookie names cannot be set from another host');
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await waitExit(s.child), 0, s.output());
    }
  });

  test('without apps.origin nothing listens on apps.listen', async () => {
    const s = await serve({});
    try {
      await assert.rejects(fetch(`${s.apps}/_svc/session`), 'connection refused');
      assert.doesNotMatch(s.output(), /apps listener listening/);
    } finally {
      s.child.kill('SIGTERM');
      assert.equal(await waitExit(s.child), 0, s.output());
    }
  });
});
