// The kysely instance over a pg pool. Callers pass `db` (or a transaction) explicitly.
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './types.js';

export type Db = Kysely<Database>;
export * from './types.js';
export { describeUrl } from './url.js';

// Return bigint/int8 columns as strings (ids) and keep timestamps as Date.
export function createDb(opts: { url: string; maxConnections: number; appName?: string; onError?: (err: Error) => void }): Db {
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.maxConnections,
    application_name: opts.appName ?? 'svc',
    connectionTimeoutMillis: 5_000,
  });
  // A client losing its server must never crash the process: the failing query rejects, the pool
  // drops the client, and /readyz reports the database down.
  pool.on('error', (err) => opts.onError?.(err));
  pool.on('connect', (client) => { client.on('error', (err) => opts.onError?.(err)); });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

const pools = new WeakMap<Db, pg.Pool>();

/**
 * Runs a hot statement of fixed text as a named prepared statement: each connection parses and
 * plans it once instead of on every call (kysely sends unnamed statements). Inside a transaction
 * (or any Db not made by createDb) it runs as an ordinary statement.
 */
export async function queryPrepared<R>(db: Db, name: string, text: string, values: unknown[]): Promise<R[]> {
  const pool = pools.get(db);
  if (!pool) return (await db.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
  return (await pool.query({ name, text, values })).rows as R[];
}

