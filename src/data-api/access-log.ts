// The Data API access log: one row per call (client, endpoint, version, status, rows, bytes,
// time), kept in memory and written in batches of at most BATCH rows per INSERT at least every
// FLUSH_MS, off the request path. The buffer holds at most CAPACITY rows; beyond it rows are
// dropped and counted (best effort, as the audit queue: a slow database never slows or fails
// calls). Pruned hourly by the retention job (data_api.access_log_retention_days).
import type { Logger } from 'pino';
import type { Db } from '../db/index.js';

export const BATCH = 256;
export const FLUSH_MS = 1_000;
export const CAPACITY = 8_192;

export interface AccessRow {
  at: Date;
  workspace_id: string | null;
  client: string | null;
  method: string;
  path: string;
  status: number;
  endpoint: string | null;
  version: number | null;
  rows: number | null;
  bytes: number | null;
  duration_ms: number | null;
}

export class AccessLogWriter {
  private buffer: AccessRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  dropped = 0;

  constructor(private readonly db: Db, private readonly log: Logger) {}

  record(row: AccessRow): void {
    if (this.buffer.length >= CAPACITY) {
      if (this.dropped++ % 1000 === 0) this.log.warn({ dropped: this.dropped }, 'Data API access-log buffer is full: rows dropped');
      return;
    }
    this.buffer.push(row);
    if (this.buffer.length >= BATCH) void this.flush();
    else this.timer ??= setTimeout(() => { this.timer = undefined; void this.flush(); }, FLUSH_MS).unref();
  }

  /** Writes what is buffered; resolves once it is in the database (or logged as lost). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.timer) { clearTimeout(this.timer); this.timer = undefined; }
    if (this.buffer.length === 0) return;
    const rows = this.buffer;
    this.buffer = [];
    this.flushing = (async () => {
      for (let i = 0; i < rows.length; i += BATCH) {
        try {
          await this.db.insertInto('data_api_access_log').values(rows.slice(i, i + BATCH)).execute();
        } catch (err) {
          this.log.warn({ err: (err as Error).message, rows: Math.min(BATCH, rows.length - i) }, 'Data API access-log rows not written');
        }
      }
    })();
    try { await this.flushing; } finally { this.flushing = undefined; }
  }
}

export async function listAccessLog(db: Db, workspaceId: string, opts: { limit: number; before?: string; endpoint?: string; client?: string }) {
  // The client's name beside its id (a deleted client keeps its id only).
  let q = db.selectFrom('data_api_access_log as l').leftJoin('oauth_clients as c', 'c.client_id', 'l.client')
    .select(['l.id', 'l.at', 'l.client', 'c.name as client_name', 'l.method', 'l.path', 'l.status', 'l.endpoint', 'l.version', 'l.rows', 'l.bytes', 'l.duration_ms'])
    .where('l.workspace_id', '=', workspaceId).orderBy('l.id', 'desc').limit(opts.limit);
  if (opts.before) q = q.where('l.id', '<', opts.before);
  if (opts.endpoint) q = q.where('l.endpoint', '=', opts.endpoint);
  if (opts.client) q = q.where('l.client', '=', opts.client);
  return q.execute();
}
