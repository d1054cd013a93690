// Issue 26 point 2, for every request that queues a job (engine changes, catalog purges, besides
// workflow starts and kills): a request never waits on Redis for an outage. Queues.forRequest
// refuses at once when the connection is down, and bounds a command Redis does not answer, both as
// DependencyUnavailable (503 with Retry-After); a fresh connection still connecting is not down.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { Queues } from '../src/queue/queues.js';
import { DependencyUnavailable } from '../src/errors.js';
import { startPrivateRedis, type PrivateRedis } from './helpers/private-services.js';
import { waitFor } from './helpers/workflow.js';

let redis: PrivateRedis;
let conn: Redis;
let queues: Queues;

before(async () => {
  redis = await startPrivateRedis();
  conn = new Redis(redis.url, { maxRetriesPerRequest: null });
  queues = new Queues(() => conn, `t${process.pid}`);
});
after(async () => { await queues.close().catch(() => undefined); conn.disconnect(); await redis.destroy(); });

test('a fresh connection counts as up; once ready and then gone, an enqueue is refused at once, and after it returns it goes through', async () => {
  assert.equal(queues.available(), true, 'still making its first connect');
  await waitFor(async () => conn.status === 'ready', 'the first connect');
  assert.equal(await queues.forRequest(async () => 'added', 'a job'), 'added');
  await redis.stop();
  await waitFor(async () => conn.status !== 'ready', 'the connection to notice');
  let ran = false;
  await assert.rejects(queues.forRequest(async () => { ran = true; }, 'the purge'), (err: unknown) => err instanceof DependencyUnavailable && /the purge cannot be queued/.test((err as Error).message));
  assert.equal(ran, false, 'nothing is sent to a connection that is down');
  await redis.start();
  await waitFor(async () => conn.status === 'ready', 'the reconnect', 20_000);
  assert.equal(await queues.forRequest(async () => 'again', 'a job'), 'again');
});

test('a command Redis takes but does not answer is given up after the bound, as unavailable', async () => {
  await assert.rejects(queues.forRequest(() => new Promise(() => undefined), 'the engine change'),
    (err: unknown) => err instanceof DependencyUnavailable && new RegExp(`within ${Queues.REQUEST_WAIT_MS} ms`).test((err as Error).message));
});
