// A bed for tests that run `svc serve` as real processes (a worker killed with SIGKILL, a second
// one taking over): a database, an S3 server, a Redis database of the test's own (flushed before
// and after, so no other suite's workers meet these jobs) and `svc init` already run.
import assert from 'node:assert/strict';
import { flushRedis as flush } from './redis-dbs.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { startS3, type TestS3 } from './s3.js';
import { runSvc, serviceEnv, signInHttp } from './cli.js';

export const BED_ADMIN = { email: 'admin@example.test', password: 'admin-password-1' };

export interface ServeBed { db: TestDatabase; s3: TestS3; env: Record<string, string>; signIn(base: string): ReturnType<typeof signInHttp>; close(): Promise<void> }

/** `redisUrl` names a Redis database no other test file uses; `extra` adds to the service's settings. */
export async function startServeBed(redisUrl: string, extra: Record<string, string>): Promise<ServeBed> {
  const db = await createTestDatabase();
  const s3 = await startS3();
  await flush(redisUrl);
  const env = serviceEnv(db.url, s3, {
    SVC_REDIS__URL: redisUrl, SVC_SERVER__HOST: '127.0.0.1', SVC_LOG__JSON: 'true',
    SVC_ADMIN_EMAIL: BED_ADMIN.email, SVC_ADMIN_PASSWORD: BED_ADMIN.password, ...extra,
  });
  const init = await runSvc(['init'], { env });
  assert.equal(init.code, 0, init.stderr);
  return {
    db, s3, env,
    signIn: (base) => signInHttp(base, BED_ADMIN.email, BED_ADMIN.password),
    async close() { await flush(redisUrl); await db.drop(); await s3.stop(); },
  };
}
