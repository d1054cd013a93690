// The executions store: the SQL of an orchestration step. One statement reads an execution and
// its task runs (a snapshot); one statement applies a plan with the outcome that prompted it,
// guarded by the execution's version and the outcome's lease (see APPLY). Runs of settled
// iterations (planner/tasks/foreach.ts), at any depth, are left out of the read, so it does not
// grow with them; a template that may see some reads them back (readSettledRuns).
import { sql } from 'kysely';
import { queryPrepared, type Db } from '../db/index.js';
import type { Outcome, Plan, Run, Snapshot } from './planner/types.js';

const READ = `
  SELECT e.id, e.workspace_id, e.namespace, e.flow_id, e.flow_revision, e.inputs, e.created_at, e.state, e.version,
    e.kill_requested_at, e.ended_at,
    (SELECT json_agg(r) FROM (SELECT id, parent_id, task_id, path, state, outputs, iteration, error, attempt, ended_at, settled_iterations
       FROM task_runs WHERE execution_id = e.id AND NOT settled) r) AS runs
  FROM executions e WHERE e.id = $1`;

/** Reads an execution and its task runs in one statement (one snapshot); undefined when it is gone. */
export async function readSnapshot(db: Db, executionId: string): Promise<Snapshot | undefined> {
  const [row] = await queryPrepared<Snapshot['exec'] & { runs: Array<Omit<Run, 'ended_at'> & { ended_at: string | null }> | null }>(db, 'svc_step_read', READ, [executionId]);
  if (!row) return undefined;
  const { runs, ...exec } = row;
  return { exec, runs: (runs ?? []).map((r) => ({ ...r, outputs: r.outputs ?? {}, ended_at: r.ended_at ? new Date(r.ended_at) : null })) };
}

const SETTLED = `
  SELECT id, task_id, path, state, outputs, iteration FROM task_runs
  WHERE execution_id = $1 AND settled AND state = 'SUCCESS' AND starts_with(path, $2)`;

/**
 * The successful settled runs under an iteration (`path[k]`): what a template rendered in that
 * iteration may see of the foreach iterations inside it that earlier steps settled (RenderScope).
 */
export async function readSettledRuns(db: Db, executionId: string, iteration: string): Promise<Run[]> {
  const rows = await queryPrepared<Pick<Run, 'id' | 'task_id' | 'path' | 'state' | 'outputs' | 'iteration'>>(db, 'svc_step_settled', SETTLED, [executionId, `${iteration}/`]);
  return rows.map((r) => ({ ...r, outputs: r.outputs ?? {}, parent_id: null, error: null, attempt: 0, ended_at: null }));
}

/**
 * Applies a plan in one statement of fixed text (prepared once per connection). `lk` locks the
 * execution if its version is still the one the plan was made from (a lock that waited re-checks
 * the version on the row it got); `tr` locks the task run of the outcome, if there is one, while
 * its guard holds: its lease token ($4) or, for an instant run, its open state and attempt count
 * ($5). Every write runs only when both did. The execution is always locked first, so steps never
 * deadlock with each other.
 *   $1 execution  $2 version  $3 outcome's run  $6 outcome  $7 its last log lines
 *   $8 execution fields  $9 new task runs  $10 changed task runs (outputs null: unchanged)  $11 iterations settled (`path[k]/`)
 * A run under a settled iteration is marked settled by the write that touches it (oc, ins, upd)
 * or else by `st`, so no row is updated twice in the statement.
 */
const APPLY = `
  WITH lk AS MATERIALIZED (SELECT id FROM executions WHERE id = $1 AND version = $2::bigint FOR UPDATE),
  tr AS MATERIALIZED (
    SELECT id FROM task_runs WHERE id = $3::uuid AND EXISTS (SELECT 1 FROM lk)
      AND CASE WHEN $4::text IS NOT NULL THEN lease_token = $4::text
               ELSE ended_at IS NULL AND state IN ('QUEUED', 'RETRYING') AND attempt = $5::int END
    FOR UPDATE),
  go AS MATERIALIZED (SELECT 1 FROM lk WHERE $3::uuid IS NULL OR EXISTS (SELECT 1 FROM tr)),
  o AS MATERIALIZED (SELECT * FROM jsonb_to_record($6::jsonb) AS o(state text, attempt_state text, outputs jsonb, error text, attempt int,
    started_at timestamptz, ended_at timestamptz, run_ended_at timestamptz, worker text, reason text, log_lines int, log_bytes bigint, withheld int)),
  oc AS (UPDATE task_runs t SET state = o.state, outputs = o.outputs, error = o.error, attempt = o.attempt,
      started_at = COALESCE(t.started_at, o.started_at), ended_at = o.run_ended_at, lease_token = NULL, lease_until = NULL,
      settled = EXISTS (SELECT 1 FROM unnest($11::text[]) s WHERE starts_with(t.path, s))
    FROM tr, o WHERE t.id = tr.id RETURNING t.id),
  att AS (INSERT INTO task_run_attempts (task_run_id, attempt, state, worker, reason, started_at, ended_at, log_lines, log_bytes, withheld)
    SELECT oc.id, o.attempt, o.attempt_state, o.worker, o.reason, o.started_at, o.ended_at, o.log_lines, o.log_bytes, o.withheld FROM oc, o
    ON CONFLICT (task_run_id, attempt) DO NOTHING),
  lg AS (INSERT INTO task_logs (execution_id, task_run_id, attempt, at, level, line)
    SELECT $1, oc.id, o.attempt, l.at, l.level, l.line FROM oc, o, jsonb_to_recordset($7::jsonb) AS l(at timestamptz, level text, line text)),
  ex AS (UPDATE executions e SET version = e.version + 1, state = COALESCE(p.state, e.state), started_at = COALESCE(e.started_at, p.started_at),
      ended_at = COALESCE(p.ended_at, e.ended_at), outputs = COALESCE(p.outputs, e.outputs), error = CASE WHEN p.ended_at IS NULL THEN e.error ELSE p.error END
    FROM go, jsonb_to_record($8::jsonb) AS p(state text, started_at timestamptz, ended_at timestamptz, outputs jsonb, error text) WHERE e.id = $1),
  ins AS (INSERT INTO task_runs (id, execution_id, parent_id, task_id, path, state, iteration, outputs, error, created_at, started_at, dispatched_at, ended_at,
      settled, settled_iterations)
    SELECT n.id, $1, n.parent_id, n.task_id, n.path, n.state, n.iteration, COALESCE(n.outputs, '{}'::jsonb), n.error, n.created_at, n.started_at, n.dispatched_at, n.ended_at,
      EXISTS (SELECT 1 FROM unnest($11::text[]) s WHERE starts_with(n.path, s)), COALESCE(n.settled_iterations, 0)
    FROM go, jsonb_to_recordset($9::jsonb) AS n(id uuid, parent_id uuid, task_id text, path text, state text, iteration jsonb, outputs jsonb, error text,
      created_at timestamptz, started_at timestamptz, dispatched_at timestamptz, ended_at timestamptz, settled_iterations int)),
  upd AS (UPDATE task_runs t SET state = u.state, outputs = COALESCE(u.outputs, t.outputs), error = u.error, ended_at = u.ended_at,
      lease_token = CASE WHEN u.ended_at IS NULL THEN t.lease_token END, lease_until = CASE WHEN u.ended_at IS NULL THEN t.lease_until END,
      settled_iterations = COALESCE(u.settled_iterations, t.settled_iterations),
      settled = EXISTS (SELECT 1 FROM unnest($11::text[]) s WHERE starts_with(t.path, s))
    FROM go, jsonb_to_recordset($10::jsonb) AS u(id uuid, state text, outputs jsonb, error text, ended_at timestamptz, settled_iterations int) WHERE t.id = u.id),
  st AS (UPDATE task_runs t SET settled = true FROM go
    WHERE cardinality($11::text[]) > 0 AND t.execution_id = $1 AND NOT t.settled AND EXISTS (SELECT 1 FROM unnest($11::text[]) s WHERE starts_with(t.path, s))
      AND t.id IS DISTINCT FROM $3::uuid AND t.id NOT IN (SELECT c.id FROM jsonb_to_recordset($10::jsonb) AS c(id uuid)))
  SELECT EXISTS (SELECT 1 FROM lk) AS locked, EXISTS (SELECT 1 FROM go) AS claimed`;

/** The task runs a plan creates, as the statements insert them ($9 of APPLY, $10 of CREATE). */
function newRuns(plan: Plan) {
  const now = plan.now;
  return plan.inserts.map((r) => ({
    id: r.id, parent_id: r.parent_id, task_id: r.task_id, path: r.path, state: r.state, iteration: r.iteration, outputs: r.outputs, error: r.error,
    settled_iterations: r.settled_iterations,
    // new runs are queued leaves or flowable tasks, which start at once
    created_at: now, started_at: r.state === 'QUEUED' ? null : now, dispatched_at: r.state === 'QUEUED' ? now : null, ended_at: r.ended_at,
  }));
}

/** An outcome as APPLY's $6 (and APPLY_OUTCOMES' `o`) reads it. */
function outcomeRecord(outcome: Outcome) {
  return {
    state: outcome.state, attempt_state: outcome.attemptState, outputs: outcome.outputs, error: outcome.error, attempt: outcome.attempt,
    started_at: outcome.startedAt, ended_at: outcome.endedAt, run_ended_at: outcome.state === 'RETRYING' ? null : outcome.endedAt,
    worker: outcome.worker, reason: outcome.reason, log_lines: outcome.log.lines, log_bytes: outcome.log.bytes, withheld: outcome.log.withheld,
  };
}

export async function applyStep(db: Db, snap: Snapshot, plan: Plan, outcome?: Outcome): Promise<{ locked: boolean; claimed: boolean }> {
  const o = outcome && outcomeRecord(outcome);
  const inserts = newRuns(plan);
  // Outputs the step did not replace are not sent back: a foreach run changes with every settled
  // iteration, and its outputs hold all its values (the planner copies a run, keeping the object).
  const read = new Map(snap.runs.map((r) => [r.id, r.outputs]));
  const changed = [...plan.changed].filter((r) => r.id !== outcome?.runId)
    .map((r) => ({ id: r.id, state: r.state, outputs: read.get(r.id) === r.outputs ? null : r.outputs, error: r.error, ended_at: r.ended_at, settled_iterations: r.settled_iterations }));
  const [res] = await queryPrepared<{ locked: boolean; claimed: boolean }>(db, 'svc_step_apply', APPLY, [
    snap.exec.id, snap.exec.version, outcome?.runId ?? null,
    outcome && 'lease' in outcome.guard ? outcome.guard.lease : null, outcome && 'prevAttempt' in outcome.guard ? outcome.guard.prevAttempt : null,
    JSON.stringify(o ?? {}), JSON.stringify(outcome?.log.rows ?? []), JSON.stringify(plan.exec), JSON.stringify(inserts), JSON.stringify(changed), plan.settled,
  ]);
  return res;
}

/**
 * APPLY for steps that only record an outcome and change their execution (no task run created,
 * changed other than the outcome's, or settled: an execution's last task ending, a step with
 * nothing else to start), several executions in one statement. The same guards per step: `lk`
 * locks each execution still at the step's version, in id order (two batches never deadlock);
 * `tr` the outcome's run while its guard holds; a step writes only when both did.
 *   $1 the steps: execution, version, outcome's run, its lease or previous attempt, the outcome,
 *   its last log lines, the execution's fields
 */
const APPLY_OUTCOMES = `
  WITH s AS MATERIALIZED (SELECT * FROM jsonb_to_recordset($1::jsonb) AS s(exec uuid, version bigint, run uuid, lease text, prev int, o jsonb, logs jsonb, p jsonb)),
  lk AS MATERIALIZED (SELECT e.id FROM executions e JOIN s ON e.id = s.exec AND e.version = s.version ORDER BY e.id FOR UPDATE OF e),
  tr AS MATERIALIZED (
    SELECT t.id FROM task_runs t JOIN s ON t.id = s.run
    WHERE s.exec IN (SELECT id FROM lk)
      AND CASE WHEN s.lease IS NOT NULL THEN t.lease_token = s.lease
               ELSE t.ended_at IS NULL AND t.state IN ('QUEUED', 'RETRYING') AND t.attempt = s.prev END
    ORDER BY t.id FOR UPDATE OF t),
  go AS MATERIALIZED (SELECT s.* FROM s WHERE s.exec IN (SELECT id FROM lk) AND s.run IN (SELECT id FROM tr)),
  oc AS (UPDATE task_runs t SET state = o.state, outputs = o.outputs, error = o.error, attempt = o.attempt,
      started_at = COALESCE(t.started_at, o.started_at), ended_at = o.run_ended_at, lease_token = NULL, lease_until = NULL, settled = false
    FROM go, jsonb_to_record(go.o) AS o(state text, attempt_state text, outputs jsonb, error text, attempt int, started_at timestamptz, ended_at timestamptz,
      run_ended_at timestamptz, worker text, reason text, log_lines int, log_bytes bigint, withheld int)
    WHERE t.id = go.run
    RETURNING t.id, go.exec, go.logs, o.attempt AS o_attempt, o.attempt_state, o.worker, o.reason, o.started_at AS o_started_at, o.ended_at AS o_ended_at,
      o.log_lines, o.log_bytes, o.withheld),
  att AS (INSERT INTO task_run_attempts (task_run_id, attempt, state, worker, reason, started_at, ended_at, log_lines, log_bytes, withheld)
    SELECT oc.id, oc.o_attempt, oc.attempt_state, oc.worker, oc.reason, oc.o_started_at, oc.o_ended_at, oc.log_lines, oc.log_bytes, oc.withheld FROM oc
    ON CONFLICT (task_run_id, attempt) DO NOTHING),
  lg AS (INSERT INTO task_logs (execution_id, task_run_id, attempt, at, level, line)
    SELECT oc.exec, oc.id, oc.o_attempt, l.at, l.level, l.line FROM oc, jsonb_to_recordset(oc.logs) AS l(at timestamptz, level text, line text)),
  ex AS (UPDATE executions e SET version = e.version + 1, state = COALESCE(p.state, e.state), started_at = COALESCE(e.started_at, p.started_at),
      ended_at = COALESCE(p.ended_at, e.ended_at), outputs = COALESCE(p.outputs, e.outputs), error = CASE WHEN p.ended_at IS NULL THEN e.error ELSE p.error END
    FROM go, jsonb_to_record(go.p) AS p(state text, started_at timestamptz, ended_at timestamptz, outputs jsonb, error text) WHERE e.id = go.exec)
  SELECT s.exec AS id, s.exec IN (SELECT id FROM lk) AS locked, s.exec IN (SELECT exec FROM go) AS claimed FROM s`;

/** A step for applyOutcomes; `res` or `error` is set when it is applied. */
export interface Applying { snap: Snapshot; plan: Plan; outcome: Outcome; res?: { locked: boolean; claimed: boolean }; error?: unknown }

/** Whether a step only records its outcome and changes its execution (APPLY_OUTCOMES can apply it). */
export const outcomeOnly = (plan: Plan, outcome: Outcome | undefined): outcome is Outcome =>
  !!outcome && plan.inserts.length === 0 && plan.settled.length === 0 && [...plan.changed].every((r) => r.id === outcome.runId);

/**
 * Applies outcome-only steps of several executions in one statement (group commit: outcomes that
 * reach it in the same turn share one round trip and one commit). A second step of an execution
 * already in the statement, a step alone, and every step of a statement that failed are applied
 * one by one with APPLY, so each keeps its own result and error.
 */
export async function applyOutcomes(db: Db, items: Applying[]): Promise<void> {
  const seen = new Set<string>();
  const batch: Applying[] = []; const alone: Applying[] = [];
  for (const it of items) {
    (seen.has(it.snap.exec.id) ? alone : batch).push(it);
    seen.add(it.snap.exec.id);
  }
  if (batch.length === 1) alone.unshift(batch.pop()!);
  if (batch.length > 0) {
    try {
      const rows = await queryPrepared<{ id: string; locked: boolean; claimed: boolean }>(db, 'svc_step_apply_outcomes', APPLY_OUTCOMES, [JSON.stringify(batch.map(({ snap, plan, outcome }) => ({
        exec: snap.exec.id, version: snap.exec.version, run: outcome.runId, lease: 'lease' in outcome.guard ? outcome.guard.lease : null,
        prev: 'prevAttempt' in outcome.guard ? outcome.guard.prevAttempt : null, o: outcomeRecord(outcome), logs: outcome.log.rows, p: plan.exec,
      })))]);
      const byId = new Map(rows.map((r) => [r.id, { locked: r.locked, claimed: r.claimed }]));
      for (const it of batch) it.res = byId.get(it.snap.exec.id)!;
    } catch {
      alone.push(...batch);
    }
  }
  for (const it of alone) {
    try { it.res = await applyStep(db, it.snap, it.plan, it.outcome); } catch (err) { it.error = err; }
  }
}

/**
 * Fails an execution that has not ended, with `reason`: the run of the outcome fails with it, runs
 * not started (no lease) are killed, running ones are asked to stop (the kill request). False
 * when the execution had already ended.
 */
export async function failExecution(db: Db, executionId: string, outcome: Pick<Outcome, 'runId' | 'attempt'> | undefined, reason: string, now: Date): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    WITH r AS (
      UPDATE task_runs SET state = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN 'FAILED' ELSE 'KILLED' END,
        error = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN ${reason} ELSE 'killed: the execution failed' END,
        attempt = CASE WHEN id = ${outcome?.runId ?? null}::uuid THEN ${outcome?.attempt ?? 0}::int ELSE attempt END,
        ended_at = ${now}::timestamptz, lease_token = NULL, lease_until = NULL
      WHERE execution_id = ${executionId} AND ended_at IS NULL
        AND (id = ${outcome?.runId ?? null}::uuid OR lease_token IS NULL)
      RETURNING id)
    UPDATE executions SET state = 'FAILED', ended_at = ${now}::timestamptz, error = ${reason}, version = version + 1,
      kill_requested_at = COALESCE(kill_requested_at, ${now}::timestamptz)
    WHERE id = ${executionId} AND ended_at IS NULL RETURNING id`.execute(db);
  return rows.length > 0;
}

/**
 * Inserts executions together with their first steps (a start in the create path, see
 * orchestrator.ts startCreated), in one statement: each execution with the fields its plan gives it
 * and version 1, as the start step would have left it, and the task runs the plan creates. The
 * first step of an execution has no earlier runs, so the plan changes none (only inserts).
 *   $1 the executions (as created, with their fields after the step)  $2 their new task runs
 */
const CREATE = `
  WITH ex AS (INSERT INTO executions (id, workspace_id, namespace, flow_id, flow_revision, state, inputs, trigger, created_at, version, started_at, ended_at, outputs, error)
    SELECT x.id, x.workspace_id, x.namespace, x.flow_id, x.flow_revision, x.state, x.inputs, x.trigger, x.created_at, 1, x.started_at, x.ended_at,
      COALESCE(x.outputs, '{}'::jsonb), x.error
    FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, workspace_id uuid, namespace text, flow_id text, flow_revision int, inputs jsonb, trigger jsonb,
      created_at timestamptz, state text, started_at timestamptz, ended_at timestamptz, outputs jsonb, error text) RETURNING id)
  INSERT INTO task_runs (id, execution_id, parent_id, task_id, path, state, iteration, outputs, error, created_at, started_at, dispatched_at, ended_at,
      settled, settled_iterations)
    SELECT n.id, ex.id, n.parent_id, n.task_id, n.path, n.state, n.iteration, COALESCE(n.outputs, '{}'::jsonb), n.error, n.created_at, n.started_at, n.dispatched_at, n.ended_at,
      n.settled, COALESCE(n.settled_iterations, 0)
    FROM jsonb_to_recordset($2::jsonb) AS n(id uuid, execution_id uuid, parent_id uuid, task_id text, path text, state text, iteration jsonb, outputs jsonb, error text,
      created_at timestamptz, started_at timestamptz, dispatched_at timestamptz, ended_at timestamptz, settled boolean, settled_iterations int)
    JOIN ex ON ex.id = n.execution_id`;

export interface NewExecution {
  id: string; workspace_id: string; namespace: string; flow_id: string; flow_revision: number;
  inputs: Record<string, unknown>; trigger: Record<string, unknown>; created_at: Date;
}

/** An execution to insert with its first step; `error` is set when its insert failed. */
export interface Started { e: NewExecution; plan: Plan; error?: unknown }

/**
 * Inserts executions with their first steps in one statement (group commit: executions created
 * together share one round trip and one commit). When the statement fails, each is inserted alone,
 * so one refused execution does not take the others with it; its own error is left in `error`.
 */
export async function insertStarted(db: Db, items: Started[]): Promise<void> {
  for (const it of items) {
    if (it.plan.changed.size > 0) it.error = new Error(`the first step of execution ${it.e.id} changes runs that existed before it`);
  }
  const ok = items.filter((it) => !it.error);
  if (ok.length === 0) return;
  try {
    await insertMany(db, ok);
  } catch (err) {
    if (ok.length === 1) { ok[0].error = err; return; }
    for (const it of ok) await insertMany(db, [it]).catch((e: unknown) => { it.error = e; });
  }
}

function insertMany(db: Db, items: Started[]) {
  const execs = items.map(({ e, plan }) => ({
    id: e.id, workspace_id: e.workspace_id, namespace: e.namespace, flow_id: e.flow_id, flow_revision: e.flow_revision, inputs: e.inputs, trigger: e.trigger,
    created_at: e.created_at, state: plan.exec.state, started_at: plan.exec.started_at, ended_at: plan.exec.ended_at, outputs: plan.exec.outputs, error: plan.exec.error,
  }));
  const runs = items.flatMap(({ e, plan }) => newRuns(plan).map((r) => ({ ...r, execution_id: e.id, settled: plan.settled.some((s) => r.path.startsWith(s)) })));
  return queryPrepared(db, 'svc_step_create', CREATE, [JSON.stringify(execs), JSON.stringify(runs)]);
}
