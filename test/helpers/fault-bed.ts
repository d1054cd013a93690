// A real `svc serve` (workflow worker on, a sweep every second) on a private PostgreSQL cluster,
// a private redis-server and s3rver, which a fault test stops and starts at will; the
// administrator is signed in and the given flows are saved.
import assert from 'node:assert/strict';
import { runSvc, serviceEnv, signInHttp, spawnSvc, waitExit } from './cli.js';
import { startS3, type TestS3 } from './s3.js';
import { freePort } from './net.js';
import { startPrivatePostgres, startPrivateRedis, type PrivatePostgres, type PrivateRedis } from './private-services.js';

const ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

export interface FaultBed {
  pg: PrivatePostgres; redis: PrivateRedis; s3: TestS3;
  /** The server's environment (for another `svc` process on the same services). */
  env: Record<string, string>;
  svc: Awaited<ReturnType<typeof spawnSvc>>;
  base: string;
  /** The administrator's session headers. */
  headers: Record<string, string>;
  close(): Promise<void>;
}

export async function startFaultBed(extraEnv: Record<string, string>, flows: string[]): Promise<FaultBed> {
  const bed: Partial<FaultBed> = {};
  const close = async () => {
    if (bed.svc) { bed.svc.child.kill('SIGTERM'); await waitExit(bed.svc.child).catch(() => bed.svc!.child.kill('SIGKILL')); }
    await bed.redis?.destroy();
    await bed.pg?.destroy();
    await bed.s3?.stop().catch(() => undefined); // a test may have stopped it
  };
  try {
    bed.pg = await startPrivatePostgres();
    bed.redis = await startPrivateRedis();
    bed.s3 = await startS3();
    bed.env = serviceEnv(bed.pg.url, bed.s3, {
      SVC_REDIS__URL: bed.redis.url, SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true',
      SVC_ADMIN_EMAIL: ADMIN.email, SVC_ADMIN_PASSWORD: ADMIN.password,
      SVC_WORKFLOW__WORKER_ENABLED: 'true', SVC_WORKFLOW__REAPER_INTERVAL_SECS: '1',
      ...extraEnv,
    });
    const init = await runSvc(['init'], { env: bed.env });
    assert.equal(init.code, 0, init.stderr);
    const port = await freePort();
    bed.svc = await spawnSvc(['serve'], { env: { ...bed.env, SVC_SERVER__PORT: String(port) }, ready: /"msg":"listening"/ });
    bed.base = `http://127.0.0.1:${port}`;
    ({ headers: bed.headers } = await signInHttp(bed.base, ADMIN.email, ADMIN.password));
    for (const flow of flows) {
      const saved = await fetch(`${bed.base}/workflows/v1/default/flows`, { method: 'POST', headers: { ...bed.headers, 'content-type': 'application/x-yaml' }, body: flow });
      assert.equal(saved.status, 201, await saved.text());
    }
    return { ...(bed as FaultBed), close };
  } catch (err) {
    await close();
    throw err;
  }
}
