// Retention as jobs (task logs, execution files, audit rows, Data API access log, kept containers),
// "0 keeps for ever" with the declined log line, the schedulers run through BullMQ, and audit
// batches handed over through the `audit` queue (they survive the API process dying; a direct
// INSERT when Redis is unreachable).
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { startTestAppWithS3, type TestApp } from './helpers/app.js';
import { signInAdmin, replica, captureLogging, waitFor, type Admin } from './helpers/workflow.js';
import { runMaintenanceJob, startMaintenance, pruneExecutionFiles, type MaintenanceDeps } from '../src/jobs/maintenance.js';
import { createAuditHandOver, startAuditWorker } from '../src/jobs/audit-queue.js';
import { pruneOlderThan } from '../src/audit/retention.js';
import { executionPrefix } from '../src/workflows/files.js';
import { QUEUE } from '../src/queue/queues.js';
import type { ContainerRunner } from '../src/runners/index.js';
import type { Services } from '../src/services.js';

const DAY = 86_400_000;
let t: TestApp;
let admin: Admin;

function fakeRunner(removed = 3): ContainerRunner & { calls: Date[] } {
  const calls: Date[] = [];
  return {
    kind: 'local_container', calls,
    async run() { throw new Error('not used'); },
    async removeKept(olderThan: Date) { calls.push(olderThan); return removed; },
  };
}
const noRunner: MaintenanceDeps = { runner: async () => null };
const ago = (days: number, s: Services = t.services) => new Date(s.clock.now().getTime() - days * DAY);

async function execution(endedDaysAgo: number | null): Promise<string> {
  const id = randomUUID();
  await t.services.db.insertInto('executions').values({
    id, workspace_id: admin.workspaceId, namespace: 'ret', flow_id: 'f', flow_revision: 1,
    state: endedDaysAgo === null ? 'RUNNING' : 'SUCCESS', created_at: ago((endedDaysAgo ?? 0) + 1), ended_at: endedDaysAgo === null ? null : ago(endedDaysAgo),
  }).execute();
  return id;
}

before(async () => {
  t = await startTestAppWithS3({
  });
  admin = await signInAdmin(t);
});
after(async () => { await t.close(); });

describe('retention jobs (processors called directly, clock moved)', () => {
  test('task log lines older than workflow.log_retention_days (30) are deleted', async () => {
    const id = await execution(40);
    const line = (daysAgo: number, text: string) => ({ execution_id: id, attempt: 0, at: ago(daysAgo), level: 'INFO', line: text });
    await t.services.db.insertInto('task_logs').values([line(31, 'old-1'), line(30.5, 'old-2'), line(29, 'kept-1'), line(1, 'kept-2')]).execute();
    const r = await runMaintenanceJob(t.services, 'task-log-retention', noRunner);
    assert.deepEqual(r, { pruned: 2 });
    const left = await t.services.db.selectFrom('task_logs').select('line').where('execution_id', '=', id).orderBy('id').execute();
    assert.deepEqual(left.map((l) => l.line), ['kept-1', 'kept-2']);
  });

  test('pruning goes in batches and still removes everything due', async () => {
    const id = await execution(40);
    await t.services.db.insertInto('task_logs').values(Array.from({ length: 25 }, (_, i) => ({ execution_id: id, attempt: 0, at: ago(60), level: 'INFO', line: `l${i}` }))).execute();
    assert.equal(await pruneOlderThan(t.services.db, 'task_logs', ago(30), 10), 25);
  });

  test('execution files are deleted storage_retention_days (30) after the execution ended, once', async () => {
    await pruneExecutionFiles(t.services, 30); // executions of the tests above
    const old = await execution(31);
    const recent = await execution(29);
    const running = await execution(null);
    for (const id of [old, recent, running]) {
      for (const name of ['a.txt', 'dir/b.csv']) await t.services.s3.put(`${executionPrefix(t.services, admin.workspaceId, id)}tr/1/${name}`, `data of ${id}`);
    }
    const nsFile = `${t.config.workflow.storage.prefix}${admin.workspaceId}/namespaces/ret/files/keep.txt`;
    await t.services.s3.put(nsFile, 'namespace file');
    const r = await runMaintenanceJob(t.services, 'execution-file-retention', noRunner);
    assert.deepEqual(r, { executions: 1, objects: 2 });
    assert.equal((await t.services.s3.list(executionPrefix(t.services, admin.workspaceId, old))).length, 0);
    assert.equal((await t.services.s3.list(executionPrefix(t.services, admin.workspaceId, recent))).length, 2);
    assert.equal((await t.services.s3.list(executionPrefix(t.services, admin.workspaceId, running))).length, 2);
    assert.ok(await t.services.s3.head(nsFile));
    const rows = await t.services.db.selectFrom('executions').select(['id', 'files_pruned_at']).where('id', 'in', [old, recent, running]).execute();
    const pruned = new Map(rows.map((x) => [x.id, x.files_pruned_at]));
    assert.equal(pruned.get(old)!.toISOString(), t.clock.now().toISOString());
    assert.equal(pruned.get(recent), null);
    assert.equal(pruned.get(running), null);
    assert.deepEqual(await pruneExecutionFiles(t.services, 30), { executions: 0, objects: 0 }, 'marked executions are not visited again');
    // two days later the recent one is due too
    t.clock.advance(2 * DAY);
    assert.deepEqual(await pruneExecutionFiles(t.services, 30), { executions: 1, objects: 2 });
  });

  test('audit rows older than audit.retention_days (90) are deleted', async () => {
    const mark = `retention-test-${randomUUID()}`;
    const row = (daysAgo: number) => ({ at: ago(daysAgo), kind: 'authz' as const, action: mark, actor_id: null, actor: null, target: null, workspace: null, decision: 'allow', details: '{}' });
    await t.services.db.insertInto('audit_events').values([row(91), row(89)]).execute();
    await runMaintenanceJob(t.services, 'audit-retention', noRunner);
    const left = await t.services.db.selectFrom('audit_events').select('at').where('action', '=', mark).execute();
    assert.equal(left.length, 1);
    assert.equal(left[0].at.toISOString(), ago(89).toISOString());
  });

  test('Data API access-log rows older than data_api.access_log_retention_days (90) are deleted', async () => {
    const row = (daysAgo: number, path: string) => ({ at: ago(daysAgo), workspace_id: admin.workspaceId, client: 'c', method: 'GET', path, status: 200 });
    await t.services.db.insertInto('data_api_access_log').values([row(120, '/old'), row(91, '/old'), row(10, '/new')]).execute();
    assert.deepEqual(await runMaintenanceJob(t.services, 'access-log-retention', noRunner), { pruned: 2 });
    assert.deepEqual((await t.services.db.selectFrom('data_api_access_log').select('path').execute()).map((r) => r.path), ['/new']);
  });

  test('kept containers: runner.removeKept(now - kept_container_retention_days) when a runner is configured', async () => {
    const runner = fakeRunner(3);
    assert.deepEqual(await runMaintenanceJob(t.services, 'kept-container-retention', { runner: async () => runner }), { removed: 3 });
    assert.deepEqual(runner.calls.map((d) => d.toISOString()), [ago(7).toISOString()]);
    assert.deepEqual(await runMaintenanceJob(t.services, 'kept-container-retention', noRunner), { removed: 0 }, 'no runner: nothing to do');
  });
});

describe('retention schedulers through BullMQ', () => {
  test('every retention job is scheduled and runs on the maintenance queue', { timeout: 30_000 }, async () => {
    const id = await execution(40);
    await t.services.db.insertInto('task_logs').values({ execution_id: id, attempt: 0, at: ago(45), level: 'INFO', line: 'through the queue' }).execute();
    const runner = fakeRunner(1);
    const loop = await startMaintenance(t.services, { everyMs: 300, runner, audit: false });
    try {
      const names = (await loop.queue.getJobSchedulers()).map((s) => s.key).sort();
      assert.deepEqual(names, ['access-log-retention', 'audit-retention', 'execution-file-retention', 'idempotency-key-retention', 'kept-container-retention', 'session-cleanup', 'task-log-retention']);
      await waitFor(async () => {
        const done = await loop.queue.getJobs(['completed']);
        const ran = new Set(done.map((j) => j.name));
        return names.every((n) => ran.has(n));
      }, 'each scheduled job to complete once');
      assert.equal((await t.services.db.selectFrom('task_logs').select('id').where('line', '=', 'through the queue').execute()).length, 0);
      assert.ok(runner.calls.length >= 1);
    } finally {
      await loop.close();
    }
  });

  test('0 keeps for ever: no scheduler, a log line saying the pruning was declined, nothing deleted', async () => {
    const logs = captureLogging('info');
    const r = replica(t, {
      logging: logs.logging,
      config: (c) => {
        c.audit.retention_days = 0; c.data_api.access_log_retention_days = 0;
        c.workflow.log_retention_days = 0; c.workflow.storage_retention_days = 0; c.workflow.kept_container_retention_days = 0;
        return c;
      },
    });
    try {
      const loop = await startMaintenance(r, { runner: fakeRunner(), audit: false });
      try {
        const names = (await loop.queue.getJobSchedulers()).map((s) => s.key).sort();
        assert.deepEqual(names, ['idempotency-key-retention', 'session-cleanup']);
      } finally {
        await loop.close();
      }
      const declined = logs.lines().filter((l) => String(l.msg).startsWith('declined to schedule')).map((l) => String(l.msg));
      assert.equal(declined.length, 5, declined.join('\n'));
      for (const key of ['audit.retention_days', 'data_api.access_log_retention_days', 'workflow.log_retention_days', 'workflow.storage_retention_days', 'workflow.kept_container_retention_days']) {
        assert.ok(declined.some((m) => m.includes(key)), key);
      }
      assert.ok(declined.some((m) => /audit rows are kept for ever/.test(m)));

      const id = await execution(400);
      await r.db.insertInto('task_logs').values({ execution_id: id, attempt: 0, at: ago(400), level: 'INFO', line: 'forever' }).execute();
      await r.db.insertInto('data_api_access_log').values({ at: ago(400), workspace_id: null, client: null, method: 'GET', path: '/forever', status: 200 }).execute();
      const runner = fakeRunner();
      for (const job of ['task-log-retention', 'access-log-retention', 'audit-retention', 'execution-file-retention', 'kept-container-retention']) {
        const res = await runMaintenanceJob(r, job, { runner: async () => runner });
        assert.ok(Object.values(res).every((v) => v === 0), `${job}: ${JSON.stringify(res)}`);
      }
      assert.equal(runner.calls.length, 0);
      assert.equal((await r.db.selectFrom('task_logs').select('id').where('line', '=', 'forever').execute()).length, 1);
      assert.equal((await r.db.selectFrom('data_api_access_log').select('id').where('path', '=', '/forever').execute()).length, 1);
    } finally {
      await r.close();
    }
  });
});

describe('audit batches through the audit queue', () => {
  const count = async (action: string) => Number((await t.services.db.selectFrom('audit_events').select((eb) => eb.fn.countAll().as('n')).where('action', '=', action).executeTakeFirstOrThrow()).n);
  const event = (action: string, i = 0) => ({ action, actorId: null, actor: `tester-${i}`, target: 'platform', decision: 'allow' as const, details: { i } });

  test('events handed over survive the API process dying: a worker of a fresh process writes them', { timeout: 30_000 }, async () => {
    const action = `handed-over-${randomUUID()}`;
    // the "API process": batches go to the queue, no worker runs anywhere
    const api = replica(t, { config: (c) => { c.audit.batch_size = 2; return c; } });
    const handOver = await createAuditHandOver(api, { settleMs: 0 });
    api.audit.attachHandOver(handOver);
    for (let i = 0; i < 5; i++) assert.equal(api.audit.record(event(action, i)), true);
    await api.audit.flush();
    assert.equal(api.audit.pending, 0);
    const queued = await t.services.queues.get(QUEUE.audit).getJobs(['waiting']);
    assert.deepEqual(queued.filter((j) => j.data.events[0].action === action).map((j) => j.data.events.length).sort(), [1, 2, 2], 'batches of at most audit.batch_size');
    assert.equal(await count(action), 0, 'nothing written yet');
    // it dies (its connections go away without another flush)
    await handOver.close();
    api.audit.attachHandOver(null);
    await api.close();

    const fresh = replica(t);
    const worker = startAuditWorker(fresh);
    try {
      await waitFor(async () => (await count(action)) === 5, 'the fresh worker to write the 5 events');
      const rows = await t.services.db.selectFrom('audit_events').selectAll().where('action', '=', action).orderBy('id').execute();
      assert.deepEqual(rows.map((r) => r.actor), ['tester-0', 'tester-1', 'tester-2', 'tester-3', 'tester-4']);
      assert.ok(rows.every((r) => r.kind === 'authz' && r.decision === 'allow'));
      assert.deepEqual(rows.map((r) => (r.details as { i: number }).i), [0, 1, 2, 3, 4]);
    } finally {
      await worker.close();
      await fresh.close();
    }
    assert.equal(await count(action), 5, 'each batch written once');
  });

  test('with the maintenance loop running, flush() hands over and returns once the rows are written', { timeout: 30_000 }, async () => {
    const r = replica(t);
    const loop = await startMaintenance(r, { runner: null });
    try {
      const action = `read-your-writes-${randomUUID()}`;
      r.audit.record(event(action));
      r.audit.record(event(action, 1));
      await r.audit.flush();
      assert.equal(await count(action), 2);
      const metrics = await r.metrics.registry.metrics();
      assert.match(metrics, /svc_audit_events_written_total 2/);
    } finally {
      await loop.close();
      await r.close();
    }
  });

  test('a batch delivered again after it was committed is not written twice', async () => {
    const action = `redelivered-${randomUUID()}`;
    const at = t.clock.now().toISOString();
    const batch = { id: randomUUID(), events: [{ ...event(action), at }, { ...event(action, 1), at }] };
    const q = t.services.queues.get(QUEUE.audit);
    // written once already: the worker died after COMMIT, before BullMQ recorded the completion
    await t.services.db.insertInto('audit_events').values(batch.events.map((e) => ({ at: new Date(e.at), kind: 'authz' as const, action: e.action, actor_id: null, actor: e.actor, target: e.target, workspace: null, decision: e.decision, details: JSON.stringify(e.details) }))).execute();
    await q.add('batch', batch, { jobId: batch.id, attempts: 3 });
    // the stalled job's earlier start, as BullMQ counts it (attemptsStarted)
    await t.services.redis().hincrby(`${t.services.queues.prefix}:${QUEUE.audit}:${batch.id}`, 'ats', 1);
    const r = replica(t);
    const worker = startAuditWorker(r);
    try {
      await waitFor(async () => (await q.getJobState(batch.id)) === 'completed', 'the redelivered batch to complete');
      const job = await q.getJob(batch.id);
      assert.equal(job!.attemptsStarted, 2);
      assert.deepEqual(job!.returnvalue, { written: 0, repeated: true });
      assert.equal(await count(action), 2);
    } finally {
      await worker.close();
      await r.close();
    }
  });

  test('Redis unreachable: the batch is written directly and counted', { timeout: 30_000 }, async () => {
    const action = `direct-${randomUUID()}`;
    const r = replica(t, { config: (c) => { c.redis.url = 'redis://127.0.0.1:1'; return c; } });
    try {
      const handOver = await createAuditHandOver(r, { readyTimeoutMs: 200, settleMs: 0 });
      r.audit.attachHandOver(handOver);
      r.audit.record(event(action));
      r.audit.record(event(action, 1));
      const started = Date.now();
      await r.audit.flush();
      assert.ok(Date.now() - started < 4_000, 'does not wait for Redis');
      assert.equal(await count(action), 2);
      assert.match(await r.metrics.registry.metrics(), /svc_audit_events_direct_total 2/);
      r.audit.attachHandOver(null);
      await handOver.close();
    } finally {
      await r.close();
    }
  });

  test('the in-memory queue keeps its capacity: events past it are dropped and counted', async () => {
    const action = `dropped-${randomUUID()}`;
    const r = replica(t, { config: (c) => { c.audit.channel_capacity = 2; c.audit.batch_size = 10; return c; } });
    try {
      assert.equal(r.audit.record(event(action)), true);
      assert.equal(r.audit.record(event(action, 1)), true);
      assert.equal(r.audit.record(event(action, 2)), false);
      assert.match(await r.metrics.registry.metrics(), /svc_audit_events_dropped_total 1/);
      await r.audit.flush();
      assert.equal(await count(action), 2);
    } finally {
      await r.close();
    }
  });
});
