// The kysely instance over a pg pool. Callers pass `db` (or a transaction) explicitly.
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export * from './types.js';

// Return bigint/int8 columns as strings (ids) and keep timestamps as Date.
export function createDb(opts: { url: string; maxConnections: number; appName?: string }): Db {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.maxConnections,
    application_name: opts.appName ?? 'svc',
    connectionTimeoutMillis: 5_000,
  });
  // A client losing its server must never crash the process: the failing query rejects, the pool
  // drops the client, and /readyz reports the database down.
  pool.on('error', () => {});
  pool.on('connect', (client) => { client.on('error', () => {}); });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/** A connection URL for messages: the password replaced by ***. */
export function describeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparsable url>';
  }
}
