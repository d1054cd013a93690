// A `PlanTableScanRequest` of the Iceberg REST specification read into the planner's options,
// with a clear 400 for anything malformed. What the specification decided is followed:
// - no snapshot: the current snapshot of `main`; `snapshot-id`: that snapshot (time travel);
//   `use-snapshot-schema` defaults to false (the Java client sends true when it time-travels);
// - `start-snapshot-id` with `end-snapshot-id`: an incremental append scan (the data files that
//   `append` snapshots after start, up to and including end, added), never together with
//   `snapshot-id`; a start without an end is refused, as Java's request validation refuses it;
// - `min-rows-requested` is a hint and is ignored.
import { badRequest } from './errors.js';
import { isLong } from './json.js';

type Json = Record<string, unknown>;

/** Bounds on what a request names: columns in `select` and `stats-fields`, and a name's length. */
export const MAX_FIELDS = 10_000;
const MAX_NAME = 1024;

/** What a plan is asked for: kept whole in each plan-task token, so any replica can run the task. */
export interface ScanRequest {
  snapshotId?: string;
  select?: string[];
  filter?: unknown;
  caseSensitive: boolean;
  useSnapshotSchema: boolean;
  incremental?: { start: string; end: string };
  statsFields?: string[];
}

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function long(body: Json, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (!isLong(v)) throw badRequest(`${key} must be a 64-bit integer (a snapshot id)`);
  return String(v);
}

function bool(body: Json, key: string, dflt: boolean): boolean {
  const v = body[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'boolean') throw badRequest(`${key} must be true or false`);
  return v;
}

function names(body: Json, key: string): string[] | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw badRequest(`${key} must be an array of field names`);
  if (v.length > MAX_FIELDS) throw badRequest(`${key} names at most ${MAX_FIELDS} fields`);
  for (const n of v) {
    if (typeof n !== 'string' || n === '' || n.length > MAX_NAME) throw badRequest(`${key} must hold field names (strings of 1 to ${MAX_NAME} characters)`);
  }
  return v as string[];
}

export function parseScanRequest(raw: unknown): ScanRequest {
  const body = raw === undefined || raw === null ? {} : raw;
  if (!isObj(body)) throw badRequest('the body must be a PlanTableScanRequest object');
  const snapshotId = long(body, 'snapshot-id');
  const start = long(body, 'start-snapshot-id');
  const end = long(body, 'end-snapshot-id');
  if (start !== undefined && end === undefined) throw badRequest('end-snapshot-id is required with start-snapshot-id (an incremental scan names both)');
  if (end !== undefined && start === undefined) throw badRequest('start-snapshot-id is required with end-snapshot-id (an incremental scan names both; for one snapshot use snapshot-id)');
  if (snapshotId !== undefined && start !== undefined) throw badRequest('a scan names either snapshot-id (a point in time) or start-snapshot-id and end-snapshot-id (incremental), not both');
  const min = body['min-rows-requested'];
  if (min !== undefined && min !== null && (!isLong(min) || BigInt(min) < 0n)) throw badRequest('min-rows-requested must be a non-negative integer');
  const req: ScanRequest = {
    caseSensitive: bool(body, 'case-sensitive', true),
    useSnapshotSchema: bool(body, 'use-snapshot-schema', false),
  };
  if (snapshotId !== undefined) req.snapshotId = snapshotId;
  if (start !== undefined && end !== undefined) req.incremental = { start, end };
  const select = names(body, 'select');
  if (select) req.select = select;
  const stats = names(body, 'stats-fields');
  if (stats) req.statsFields = stats;
  if (body.filter !== undefined && body.filter !== null) req.filter = body.filter;
  return req;
}
