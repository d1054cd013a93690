// Server-side scan planning of the Iceberg REST specification (planTableScan, fetchPlanningResult,
// cancelPlanning, fetchScanTasks) over the planner the embedded engine uses (src/iceberg/planner.ts
// through scan.ts: one way to plan a table). A plan runs at most `catalog.plan_wait_ms` within
// its request; a longer one is answered `submitted` with its plan id and goes on in the
// background. A small table's plan holds its file scan tasks; a larger one (more than
// `catalog.plan_task_files` manifest entries) is answered with plan tasks, signed tokens any
// replica turns into file scan tasks (plan-tasks.ts), so the plan itself reads only the manifest list.
//
// Plans live in this replica's memory (a plan id is served by the replica that made it): at most
// MAX_PLANS and MAX_PLAN_BYTES of kept answers, each for PLAN_TTL_MS after it finished; when full
// the oldest finished plan goes, and with every slot planning a new plan is a 503; one workspace
// plans at most MAX_RUNNING_PER_WORKSPACE scans at once (others keep their share), and a plan
// still running after PLAN_DEADLINE_MS is stopped. Cancelling stops a running plan, frees its
// answer and refuses its plan tasks on this replica.
import { randomUUID } from 'node:crypto';
import type { Services } from '../services.js';
import { DomainError, unreachableDependency } from '../errors.js';
import { findField } from '../iceberg/types.js';
import type { ScanOptions } from '../iceberg/planner.js';
import { IcebergError } from './errors.js';
import { parseJson } from './json.js';
import { TtlCache } from '../util/ttl-cache.js';
import { planTableFiles, prepareTableScan } from './scan.js';
import { jsonText, scanTasksJson } from './scan-json.js';
import type { ScanRequest } from './scan-request.js';
import { PLAN_TASK_TTL_MS, fromClaimGroup, groupManifests, noSuchPlanTask, plannedEntries, signPlanTask, toClaimGroup, verifyPlanTask } from './plan-tasks.js';
import type { Warehouse } from './warehouse.js';

/** The table a request names: its catalog row and the metadata location it had when looked up. */
export interface TableRef { id: string; metadata_location: string }

export const MAX_PLANS = 1000;
export const MAX_PLAN_BYTES = 64 * 1024 * 1024;
export const PLAN_TTL_MS = 15 * 60_000;
export const MAX_RUNNING_PER_WORKSPACE = 64;
/** The Java client polls a submitted plan for 5 minutes, then gives up: so does the server. */
export const PLAN_DEADLINE_MS = 5 * 60_000;
const RECORD_BYTES = 512;

type Status = 'submitted' | 'completed' | 'failed' | 'cancelled';
interface ErrorAnswer { status: number; type: string; message: string }
interface Plan {
  id: string; workspaceId: string; tableId: string;
  status: Status;
  /** the CompletedPlanningResult's text, without the plan id */
  body?: string;
  error?: ErrorAnswer;
  bytes: number;
  /** ms since the epoch; running plans do not expire */
  expires: number;
  abort: AbortController;
}

const TYPES: Record<number, string> = { 400: 'BadRequestException', 403: 'ForbiddenException', 404: 'NotFoundException', 409: 'CommitFailedException', 503: 'ServiceUnavailableException' };

export const noSuchPlanId = (id: string) => new IcebergError(404, 'NoSuchPlanIdException', `The plan id does not exist: ${id.slice(0, 100)}`);
const toError = (e: ErrorAnswer) => new IcebergError(e.status, e.type, e.message);

/** The plans of one replica (one per Services). */
class Plans {
  private readonly map = new Map<string, Plan>();
  private bytes = 0;

  constructor(private readonly now: () => number) {}

  private drop(p: Plan) { this.map.delete(p.id); this.bytes -= p.bytes; }

  private sweep() {
    const t = this.now();
    for (const p of this.map.values()) if (p.status !== 'submitted' && p.expires <= t) this.drop(p);
  }

  /** Makes room for `bytes`, oldest finished plans first; false when only running plans are left. */
  private room(bytes: number): boolean {
    this.sweep();
    for (const p of this.map.values()) {
      if (this.map.size < MAX_PLANS && this.bytes + bytes <= MAX_PLAN_BYTES) return true;
      if (p.status !== 'submitted') this.drop(p);
    }
    return this.map.size < MAX_PLANS && this.bytes + bytes <= MAX_PLAN_BYTES;
  }

  add(workspaceId: string, tableId: string): Plan {
    let running = 0;
    for (const p of this.map.values()) if (p.workspaceId === workspaceId && p.status === 'submitted') running++;
    if (running >= MAX_RUNNING_PER_WORKSPACE) throw new IcebergError(503, 'ServiceUnavailableException', `${MAX_RUNNING_PER_WORKSPACE} scans of this workspace are being planned on this replica; retry shortly`);
    if (!this.room(RECORD_BYTES)) throw new IcebergError(503, 'ServiceUnavailableException', `${MAX_PLANS} scans are being planned on this replica; retry shortly`);
    const p: Plan = { id: randomUUID(), workspaceId, tableId, status: 'submitted', bytes: RECORD_BYTES, expires: Infinity, abort: new AbortController() };
    this.map.set(p.id, p);
    this.bytes += p.bytes;
    return p;
  }

  /** Records how a running plan ended (nothing when it was cancelled meanwhile). */
  finish(p: Plan, status: 'completed' | 'failed', body?: string, error?: ErrorAnswer) {
    if (this.map.get(p.id) !== p || p.status !== 'submitted') return;
    const size = RECORD_BYTES + 2 * (body?.length ?? 0) + (error?.message.length ?? 0);
    this.drop(p);
    Object.assign(p, { status, body, error, bytes: size, expires: this.now() + PLAN_TTL_MS });
    // An answer too large to keep is dropped: fetching it is then a 404 (plan again).
    if (size <= MAX_PLAN_BYTES && this.room(size)) { this.map.set(p.id, p); this.bytes += size; }
  }

  get(id: string, workspaceId: string, tableId: string): Plan | undefined {
    this.sweep();
    const p = this.map.get(id);
    return p && p.workspaceId === workspaceId && p.tableId === tableId ? p : undefined;
  }

  /** Whether plan `id` was cancelled here (its plan tasks are then refused). */
  cancelled(id: string): boolean { return this.map.get(id)?.status === 'cancelled'; }

  forget(p: Plan) { if (this.map.get(p.id) === p) this.drop(p); }

  cancel(p: Plan) {
    p.abort.abort();
    this.drop(p);
    Object.assign(p, { status: 'cancelled', body: undefined, error: undefined, bytes: RECORD_BYTES, expires: this.now() + PLAN_TTL_MS });
    this.map.set(p.id, p);
    this.bytes += p.bytes;
  }

  get size() { return this.map.size; }
  get byteSize() { return this.bytes; }
}

// Parsed metadata by location (a metadata file is written once): a client fetching ten plan tasks
// parses a table of many snapshots once. At most 32 MiB (a parsed document counted 3x its text).
const parsed = new WeakMap<Services, TtlCache<string, { doc: Record<string, unknown>; chars: number }>>();
async function metadataOf(s: Services, t: TableRef): Promise<Record<string, unknown>> {
  let cache = parsed.get(s);
  if (!cache) {
    cache = new TtlCache(1000, 10 * 60_000, () => s.clock.now().getTime(), { max: 32 * 1024 * 1024, sizeOf: (k, v) => 3 * v.chars + k.length });
    parsed.set(s, cache);
  }
  const hit = cache.get(t.metadata_location);
  if (hit) return hit.doc;
  // Read by row and location: a commit since the lookup makes it another document, planned next time.
  const row = await s.db.selectFrom('catalog_tables').select(['metadata', 'metadata_location']).where('id', '=', t.id).executeTakeFirst();
  if (!row) throw new IcebergError(404, 'NoSuchTableException', 'Table does not exist: it was dropped while the scan was planned');
  const text = row.metadata as string;
  const doc = parseJson(text) as Record<string, unknown>;
  cache.set(row.metadata_location, { doc, chars: text.length });
  return doc;
}

const registries = new WeakMap<Services, Plans>();
export function plansOf(s: Services): Plans {
  let r = registries.get(s);
  if (!r) { r = new Plans(() => s.clock.now().getTime()); registries.set(s, r); }
  return r;
}

/** The planner's options for a request, pinned to a snapshot and schema when a plan task replays it. */
function optionsOf(q: ScanRequest, pin?: { snapshotId: string; schemaId: number }, signal?: AbortSignal): ScanOptions {
  const o: ScanOptions = { filter: q.filter, select: q.select, caseSensitive: q.caseSensitive, signal };
  if (q.incremental) return { ...o, incremental: q.incremental, ...(pin ? { schemaId: pin.schemaId } : { useSnapshotSchema: q.useSnapshotSchema }) };
  if (pin) return { ...o, snapshotId: pin.snapshotId, schemaId: pin.schemaId };
  return { ...o, ...(q.snapshotId !== undefined ? { snapshotId: q.snapshotId } : {}), useSnapshotSchema: q.useSnapshotSchema };
}

function statsIds(q: ScanRequest, schema: Parameters<typeof findField>[0]): Set<number> {
  const ids = new Set<number>();
  for (const name of q.statsFields ?? []) {
    const f = findField(schema, name, q.caseSensitive);
    if (!f) throw new IcebergError(400, 'BadRequestException', `stats-fields: no field named ${JSON.stringify(name).slice(0, 200)} in the schema`);
    ids.add(f.id);
  }
  return ids;
}

/** Plans `q` on the table: the CompletedPlanningResult's text (without `plan-id`). */
async function runPlan(s: Services, wh: Warehouse, row: TableRef, planId: string, q: ScanRequest, signal: AbortSignal): Promise<string> {
  const prepared = await prepareTableScan(s, wh, await metadataOf(s, row), optionsOf(q, undefined, signal));
  const stats = statsIds(q, prepared.schema);
  const per = Math.max(1, s.config.catalog.plan_task_files);
  if (prepared.snapshotId === null || plannedEntries(prepared.dataManifests) <= per) {
    const plan = await planTableFiles(s, wh, prepared, undefined, signal);
    return jsonText({ status: 'completed', ...scanTasksJson(plan, stats) });
  }
  const base = { v: 1 as const, p: planId, w: wh.id, t: row.id, s: String(prepared.snapshotId), c: prepared.schema.schemaId, q, e: s.clock.now().getTime() + PLAN_TASK_TTL_MS };
  const tokens = groupManifests(prepared.dataManifests, per).map((g) => signPlanTask(s, { ...base, g: toClaimGroup(g) }));
  return jsonText({ status: 'completed', 'plan-tasks': tokens });
}

function answerOf(err: unknown): ErrorAnswer | null {
  if (err instanceof IcebergError) return { status: err.status, type: err.type, message: err.message };
  // the object store or the database not answering a plan that runs on in the background: the
  // same 503 a request waiting for it gets (the dependency is named in the log only)
  if (unreachableDependency(err)) return { status: 503, type: 'ServiceUnavailableException', message: 'temporarily unavailable; retry shortly' };
  if (err instanceof DomainError && err.status < 500) return { status: err.status, type: TYPES[err.status] ?? 'BadRequestException', message: err.message };
  if (err instanceof DomainError && err.status === 503) return { status: 503, type: 'ServiceUnavailableException', message: err.message };
  return null;
}

/** planTableScan: the PlanTableScanResult's text (completed with a plan id, or submitted). */
export async function planTableScan(s: Services, wh: Warehouse, row: TableRef, q: ScanRequest): Promise<string> {
  const plans = plansOf(s);
  const p = plans.add(wh.id, row.id);
  const deadline = setTimeout(() => p.abort.abort(new IcebergError(503, 'ServiceUnavailableException', `planning took longer than ${PLAN_DEADLINE_MS / 60_000} minutes and was stopped; retry`)), PLAN_DEADLINE_MS);
  deadline.unref();
  const running = runPlan(s, wh, row, p.id, q, p.abort.signal).finally(() => clearTimeout(deadline)).then(
    (body) => { plans.finish(p, 'completed', body); return { body }; },
    (err: unknown) => {
      const answer = answerOf(err);
      const dependency = unreachableDependency(err);
      if (dependency) s.logging.module('svc::catalog').warn({ dependency, err: (err as Error).message, plan: p.id }, `${dependency} cannot be reached: the plan answers 503`);
      else if (!answer && p.status !== 'cancelled') s.logging.module('svc::catalog').error({ err, plan: p.id }, 'scan planning failed');
      plans.finish(p, 'failed', undefined, answer ?? { status: 500, type: 'ServerErrorException', message: 'internal error' });
      return { err };
    },
  );
  const wait = s.config.catalog.plan_wait_ms;
  if (wait > 0) {
    let timer: NodeJS.Timeout | undefined;
    const done = await Promise.race([running, new Promise<null>((r) => { timer = setTimeout(() => r(null), wait); })]);
    clearTimeout(timer);
    if (done && 'body' in done) return `{"plan-id":${JSON.stringify(p.id)},${done.body.slice(1)}`;
    if (done) {
      // Failed within the request: the error is the answer, and nothing is kept.
      plans.forget(p);
      throw done.err;
    }
  }
  return jsonText({ status: 'submitted', 'plan-id': p.id });
}

/** fetchPlanningResult: a FetchPlanningResult's text, or the failed plan's error. */
export function fetchPlanningResult(s: Services, wh: Warehouse, row: TableRef, id: string): string {
  const p = plansOf(s).get(id, wh.id, row.id);
  if (!p) throw noSuchPlanId(id);
  if (p.status === 'completed') return p.body!;
  if (p.status === 'failed') throw toError(p.error!);
  return jsonText({ status: p.status });
}

/** cancelPlanning: stops and forgets the plan. */
export function cancelPlanning(s: Services, wh: Warehouse, row: TableRef, id: string): void {
  const plans = plansOf(s);
  const p = plans.get(id, wh.id, row.id);
  if (!p) throw noSuchPlanId(id);
  plans.cancel(p);
}

/** fetchScanTasks: the ScanTasks of one plan task, planned again from its token on any replica. */
export async function fetchScanTasks(s: Services, wh: Warehouse, row: TableRef, token: string, signal?: AbortSignal): Promise<string> {
  const c = verifyPlanTask(s, token);
  if (c.w !== wh.id || c.t !== row.id) throw noSuchPlanTask('it belongs to another table');
  if (plansOf(s).cancelled(c.p)) throw noSuchPlanTask('its plan was cancelled');
  let plan;
  try {
    const prepared = await prepareTableScan(s, wh, await metadataOf(s, row), optionsOf(c.q, { snapshotId: c.s, schemaId: c.c }, signal));
    plan = await planTableFiles(s, wh, prepared, fromClaimGroup(c.g), signal);
  } catch (err) {
    // The snapshot (or schema) the plan read was expired from the table since.
    if (err instanceof DomainError && /Cannot find (snapshot|schema)/.test(err.message)) throw noSuchPlanTask(`${err.message}; plan the scan again`);
    throw err;
  }
  return jsonText(scanTasksJson(plan, statsIds(c.q, plan.schema)));
}
