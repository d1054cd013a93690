// Recorded queries (the query API, SPEC 8 engine.*): each query is a row with a state machine
//   QUEUED -> RUNNING -> SUCCEEDED | FAILED | CANCELLED      (QUEUED -> CANCELLED directly)
// run through runQuery with engine.max_rows and engine.query_timeout_secs, its first
// engine.preview_rows rows kept inline and the full result written to the object store.
//
// Two paths, one outcome. A request that is willing to wait (wait_ms > 0) for the embedded
// engine runs the query in this process at once, because the engine lives here anyway: a query
// that ends within wait_ms is answered at once and its record written right behind the answer
// (QueryRecords); one that does not is recorded RUNNING and finishes in the background. Every other query (named engines, wait_ms = 0) is recorded QUEUED
// and run by the `queries` job worker on whichever replica takes it; the request waits for its
// `done` signal up to wait_ms. A run whose replica died is failed by the sweep.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';
import { jobOptions, QUEUES, type Queues } from '../queue/queues.js';
import type { QueryRow, QueryState } from '../db/query-types.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config/index.js';
import { conflict, DomainError, notFound, UNAVAILABLE_RETRY_AFTER_SECS } from '../errors.js';
import { endsWithin } from '../util/deadline.js';
import { EMBEDDED, runQuery, type QueryEngines } from './run.js';
import { QueryFailure, type EngineResult, type QueryParams, type QueryRole } from './types.js';
import type { ResultFormat, ResultStore } from './results.js';
import type { QuerySignals } from './signals.js';
import type { QueryRecord, QueryRecords } from './records.js';

export interface QueryServiceDeps {
  db: Db;
  /** Records of queries that ended in the request, written behind the answer. */
  records: QueryRecords;
  clock: Clock;
  config: Config;
  engines: QueryEngines;
  results: ResultStore;
  signals: QuerySignals;
  /** The job queues: the `queries` queue (opened on first use), and whether Redis is connected. */
  queues: Queues;
  log: Logger;
}

export interface Submit {
  workspace: { id: string; slug: string };
  engine: string;
  sql: string;
  params: QueryParams;
  principal: { userId: string; name: string; role: QueryRole; groups?: string[] };
  waitMs: number;
}

type NewQuery = {
  id: string; workspace_id: string; engine: string; sql: string; params: string; principal: string;
  principal_role: QueryRole; max_rows: number; timeout_ms: number;
};
type Outcome = { state: 'SUCCEEDED'; result: EngineResult } | { state: 'FAILED' | 'CANCELLED'; error: string };

/** After its timeout, how long a RUNNING query may go without ending before the sweep fails it. */
export const SWEEP_GRACE_MS = 120_000;
const LOST = 'the replica running this query stopped before it ended';

export class QueryService {
  /** Queries running in this process, by id: aborting cancels them on the engine. */
  private readonly running = new Map<string, AbortController>();
  private readonly cancelOff = new Map<string, () => void>();

  constructor(private readonly d: QueryServiceDeps) {}

  private queue() { return this.d.queues.get(QUEUES.queries); }

  /** Refuses at once (a 4xx, nothing recorded) when the engine is not there. */
  private async checkEngine(workspaceId: string, engine: string): Promise<void> {
    try {
      await this.d.engines.driver(workspaceId, engine);
    } catch (err) {
      if (err instanceof QueryFailure && err.kind === 'disabled') throw new DomainError('disabled', err.message);
      if (err instanceof QueryFailure && err.kind === 'not_found') throw notFound(err.message);
      throw err;
    }
  }

  async submit(s: Submit): Promise<{ query: QueryRow; ended: boolean }> {
    await this.checkEngine(s.workspace.id, s.engine);
    const cfg = this.d.config.engine;
    const base: NewQuery = {
      id: randomUUID(), workspace_id: s.workspace.id, engine: s.engine, sql: s.sql, params: JSON.stringify(s.params),
      principal: s.principal.userId, principal_role: s.principal.role, max_rows: cfg.max_rows, timeout_ms: cfg.query_timeout_secs * 1000,
    };
    if (s.engine === EMBEDDED && s.waitMs > 0) return this.runHere(base, s);
    const row = await this.d.db.insertInto('queries').values({ ...base, state: 'QUEUED', created_at: this.d.clock.now() }).returningAll().executeTakeFirstOrThrow();
    try {
      // refused at once while Redis is away, bounded otherwise (a job it takes later finds the query FAILED and does nothing)
      await this.d.queues.forRequest(() => this.queue().add('run', { queryId: row.id }, jobOptions(QUEUES.queries, { jobId: row.id })), 'the query');
    } catch (err) {
      this.d.log.warn({ query: row.id, dependency: 'Redis', err: (err as Error).message }, 'query not enqueued');
      await this.finish(row.id, { state: 'FAILED', error: 'the query could not be queued (the job queue is unavailable)' }, row);
      throw new DomainError('unavailable', 'the query could not be queued: the job queue is unavailable; retry shortly', UNAVAILABLE_RETRY_AFTER_SECS);
    }
    if (s.waitMs > 0) {
      await this.d.signals.ready();
      await this.d.signals.waitDone(row.id, s.waitMs);
    }
    const now = await this.find(row.id);
    return { query: now, ended: ended(now.state) };
  }

  private async runHere(base: NewQuery, s: Submit): Promise<{ query: QueryRow; ended: boolean }> {
    const startedAt = this.d.clock.now();
    const ac = new AbortController();
    this.running.set(base.id, ac);
    const run = this.execute(base.id, base.workspace_id, s.engine, s.sql, s.params, s.principal, ac.signal);
    if (await endsWithin(run, s.waitMs)) {
      this.running.delete(base.id);
      const fields = await this.outcomeFields(base.id, base.workspace_id, await run);
      // The query has run: answer now and let its record follow (QueryRecords: written at once,
      // together with others that end meanwhile; reads on this replica wait for it).
      const record = { ...base, created_at: startedAt, started_at: startedAt, ...fields };
      const written = this.d.records.add(record);
      if (this.d.records.full()) await written;
      return { query: asRow(record), ended: true };
    }
    // Past wait_ms: record it RUNNING, answer 202, finish in the background (cancellable by id).
    const row = await this.d.db.insertInto('queries').values({ ...base, state: 'RUNNING', created_at: startedAt, started_at: startedAt }).returningAll().executeTakeFirstOrThrow();
    this.listenCancel(base.id, ac);
    void run.then((outcome) => this.finish(base.id, outcome, row))
      .catch((err: Error) => this.d.log.error({ query: base.id, err: err.message }, 'recording the end of a query failed'))
      .finally(() => this.running.delete(base.id));
    return { query: row, ended: false };
  }

  /** Runs a QUEUED query (the `queries` job): claims it, runs it, records how it ended. */
  async runQueued(id: string): Promise<QueryState | 'gone'> {
    const row = await this.d.db.updateTable('queries').set({ state: 'RUNNING', started_at: this.d.clock.now() })
      .where('id', '=', id).where('state', '=', 'QUEUED').returningAll().executeTakeFirst();
    if (!row) return 'gone';
    const ac = new AbortController();
    this.running.set(id, ac);
    try {
      this.listenCancel(id, ac);
      if (row.cancel_requested_at) ac.abort();
      // Who asked, as they are now: their groups decide which policy items name them.
      const user = row.principal ? await this.d.db.selectFrom('users').select('email').where('id', '=', row.principal).executeTakeFirst() : undefined;
      const groups = row.principal ? (await this.d.db.selectFrom('group_members as m').innerJoin('groups as g', 'g.id', 'm.group_id').select('g.name').where('m.user_id', '=', row.principal).execute()).map((g) => g.name) : [];
      const outcome = await this.execute(id, row.workspace_id, row.engine, row.sql, row.params as QueryParams,
        { name: user?.email ?? 'svc', role: row.principal_role, groups }, ac.signal);
      return (await this.finish(id, outcome, row)).state;
    } finally {
      this.running.delete(id);
      this.cancelOff.get(id)?.();
      this.cancelOff.delete(id);
    }
  }

  /** Aborts ac when a cancel signal for id arrives from any replica, until finish(). */
  private listenCancel(id: string, ac: AbortController): void {
    this.cancelOff.set(id, this.d.signals.on('cancel', id, () => ac.abort()));
    this.d.signals.ready().catch((err: Error) => this.d.log.warn({ query: id, err: err.message }, 'no cancel signals from other replicas for this query'));
  }

  private async execute(id: string, workspaceId: string, engine: string, sql: string, params: QueryParams, principal: { name: string; role: QueryRole; groups?: string[] }, signal: AbortSignal): Promise<Outcome> {
    try {
      const result = await runQuery(this.d.engines, this.d.config, { workspace: workspaceId, engine, sql, params, principal, signal });
      return { state: 'SUCCEEDED', result };
    } catch (err) {
      if (err instanceof QueryFailure) return { state: err.kind === 'cancelled' ? 'CANCELLED' : 'FAILED', error: err.message };
      this.d.log.error({ query: id, err: (err as Error).message }, 'query failed unexpectedly');
      return { state: 'FAILED', error: 'the query failed unexpectedly' };
    }
  }

  /** The columns of a query's end: preview inline, the full result in the object store unless the preview holds it all. */
  private async outcomeFields(id: string, workspaceId: string, o: Outcome) {
    const endedAt = this.d.clock.now();
    if (o.state !== 'SUCCEEDED') return { state: o.state, error: o.error, ended_at: endedAt };
    const { columns, rows, truncated } = o.result;
    const previewRows = this.d.config.engine.preview_rows;
    let result_key: string | null = null;
    let result_bytes: number | null = null;
    if (truncated || rows.length > previewRows) {
      try {
        result_key = this.d.results.key(workspaceId, id);
        result_bytes = await this.d.results.write(workspaceId, result_key, columns, rows);
      } catch (err) {
        this.d.log.warn({ query: id, err: (err as Error).message }, 'query result not written to the object store');
        return { state: 'FAILED' as const, error: 'the result could not be written to the object store', ended_at: endedAt };
      }
    }
    return {
      state: 'SUCCEEDED' as const, error: null, ended_at: endedAt, rows: rows.length, truncated, columns: JSON.stringify(columns),
      preview: JSON.stringify(rows.slice(0, previewRows)), result_key, result_bytes,
    };
  }

  /** Records the end of a QUEUED or RUNNING query once, and wakes whoever waits for it. */
  private async finish(id: string, o: Outcome, row: { workspace_id: string }): Promise<QueryRow> {
    this.cancelOff.get(id)?.();
    this.cancelOff.delete(id);
    const fields = await this.outcomeFields(id, row.workspace_id, o);
    const done = await this.d.db.updateTable('queries').set(fields).where('id', '=', id).where('state', 'in', ['QUEUED', 'RUNNING']).returningAll().executeTakeFirst();
    await this.d.signals.emit('done', id);
    return done ?? this.find(id);
  }

  async find(id: string): Promise<QueryRow> {
    await this.d.records.settled();
    const row = await this.d.db.selectFrom('queries').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw notFound(`query does not exist: ${id}`);
    return row;
  }

  /** A query of the workspace the caller may see (their own; ws_admin any); 404 otherwise. */
  async get(workspaceId: string, id: string, viewer: { userId: string; admin: boolean }): Promise<QueryRow> {
    await this.d.records.settled();
    const row = await this.d.db.selectFrom('queries').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).executeTakeFirst();
    if (!row || (!viewer.admin && row.principal !== viewer.userId)) throw notFound(`query does not exist: ${id}`);
    return row;
  }

  /** History, newest first: the caller's own queries, or all of the workspace's for ws_admin. */
  async list(workspaceId: string, viewer: { userId: string; admin: boolean }, opts: { limit: number; offset: number; state?: QueryState }): Promise<QueryRow[]> {
    await this.d.records.settled();
    let q = this.d.db.selectFrom('queries').selectAll().where('workspace_id', '=', workspaceId);
    if (!viewer.admin) q = q.where('principal', '=', viewer.userId);
    if (opts.state) q = q.where('state', '=', opts.state);
    return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(opts.limit).offset(opts.offset).execute();
  }

  /** Cancels a QUEUED query at once, asks the replica running a RUNNING one to stop it; 409 once ended. */
  async cancel(workspaceId: string, id: string, viewer: { userId: string; admin: boolean }): Promise<QueryRow> {
    const row = await this.get(workspaceId, id, viewer);
    if (ended(row.state)) throw conflict(`query has already ended: ${row.state}`);
    const now = this.d.clock.now();
    const queued = await this.d.db.updateTable('queries').set({ state: 'CANCELLED', error: 'query was cancelled', ended_at: now, cancel_requested_at: now })
      .where('id', '=', id).where('state', '=', 'QUEUED').returningAll().executeTakeFirst();
    if (queued) {
      // with Redis away the removal would wait for its return: the job's worker skips a CANCELLED query anyway
      if (this.d.queues.available()) await this.queue().remove(id).catch((err: Error) => this.d.log.info({ query: id, err: err.message }, 'cancelled query\'s job not removed: its worker skips it'));
      await this.d.signals.emit('done', id);
      return queued;
    }
    const running = await this.d.db.updateTable('queries').set({ cancel_requested_at: now }).where('id', '=', id).where('state', '=', 'RUNNING').returningAll().executeTakeFirst();
    this.running.get(id)?.abort();
    await this.d.signals.emit('cancel', id);
    return running ?? this.find(id);
  }

  /** Fails RUNNING queries past their timeout and a grace period (their replica stopped) and QUEUED ones whose job was lost. */
  async sweep(): Promise<number> {
    const now = this.d.clock.now().getTime();
    const live = await this.d.db.selectFrom('queries').select(['id', 'state', 'started_at', 'created_at', 'timeout_ms'])
      .where('state', 'in', ['QUEUED', 'RUNNING']).orderBy('created_at').limit(500).execute();
    let failed = 0;
    for (const q of live) {
      if (this.running.has(q.id)) continue;
      const since = (q.started_at ?? q.created_at).getTime();
      if (now - since < q.timeout_ms + SWEEP_GRACE_MS) continue;
      if (q.state === 'QUEUED' && (await this.jobExists(q.id))) continue;
      const r = await this.d.db.updateTable('queries').set({ state: 'FAILED', error: q.state === 'RUNNING' ? LOST : 'the query\'s job was lost before it ran', ended_at: new Date(now) })
        .where('id', '=', q.id).where('state', '=', q.state).executeTakeFirst();
      if (Number(r.numUpdatedRows) > 0) { failed++; await this.d.signals.emit('done', q.id); }
    }
    return failed;
  }

  private async jobExists(id: string): Promise<boolean> {
    try {
      return (await this.queue().getJob(id)) !== undefined;
    } catch (err) {
      this.d.log.warn({ query: id, err: (err as Error).message }, 'sweep could not look up a queued query\'s job: left for the next sweep');
      return true;
    }
  }

  /** Called when a job ends without recording its query (a stalled or crashed worker). */
  async failLost(id: string, why: string): Promise<void> {
    const r = await this.d.db.updateTable('queries').set({ state: 'FAILED', error: why, ended_at: this.d.clock.now() })
      .where('id', '=', id).where('state', 'in', ['QUEUED', 'RUNNING']).executeTakeFirst();
    if (Number(r.numUpdatedRows) > 0) await this.d.signals.emit('done', id);
  }

  /** A result download (see ResultStore.download); null when the stored object is gone. */
  download(workspaceId: string, source: Parameters<ResultStore['download']>[1], format: ResultFormat) {
    return this.d.results.download(workspaceId, source, format);
  }

  /** Drops results of queries that ended more than engine.results_retention_days ago (0 keeps them). */
  async pruneResults(): Promise<{ expired: number }> {
    const days = this.d.config.engine.results_retention_days;
    if (days <= 0) return { expired: 0 };
    const cutoff = new Date(this.d.clock.now().getTime() - days * 86_400_000);
    await this.d.records.settled();
    let expired = 0;
    for (;;) {
      const batch = await this.d.db.selectFrom('queries').select(['id', 'workspace_id', 'result_key']).where('state', '=', 'SUCCEEDED').where('ended_at', '<', cutoff)
        .where((eb) => eb.or([eb('result_key', 'is not', null), eb('preview', 'is not', null)])).limit(200).execute();
      if (batch.length === 0) return { expired };
      for (const q of batch) {
        if (q.result_key) await this.d.results.delete(q.workspace_id, q.result_key);
        await this.d.db.updateTable('queries').set({ result_key: null, preview: null }).where('id', '=', q.id).execute();
        expired++;
      }
    }
  }
}

/** The row a record reads back as (JSON parsed, bigint columns as strings), for the answer before it is written. */
function asRow(r: QueryRecord & { state: QueryState }): QueryRow {
  const json = <T>(v: string | null | undefined): T | null => (v === null || v === undefined ? null : JSON.parse(v) as T);
  const big = (v: number | null | undefined) => (v === null || v === undefined ? null : String(v));
  const ts = (v: Date | string | null | undefined) => (v === null || v === undefined ? null : new Date(v));
  return {
    id: r.id, workspace_id: r.workspace_id, engine: r.engine, sql: r.sql, params: json(r.params) ?? [], principal: r.principal ?? null,
    principal_role: r.principal_role, state: r.state, error: r.error ?? null, rows: big(r.rows), truncated: r.truncated ?? false,
    columns: json(r.columns), preview: json(r.preview), result_key: r.result_key ?? null, result_bytes: big(r.result_bytes),
    max_rows: r.max_rows, timeout_ms: r.timeout_ms, cancel_requested_at: ts(r.cancel_requested_at), created_at: ts(r.created_at)!,
    started_at: ts(r.started_at), ended_at: ts(r.ended_at),
  };
}

export const ended = (s: QueryState) => s === 'SUCCEEDED' || s === 'FAILED' || s === 'CANCELLED';
