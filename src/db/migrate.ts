// Ordered SQL migrations from migrations/ applied by `serve` and `migrate`. A session-level
// advisory lock on a dedicated connection serialises processes that start at once; kysely's
// migrator then records each file once, inside its own transaction.
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { Migrator, sql, type Migration, type MigrationProvider, type MigrationResultSet } from 'kysely';
import pg from 'pg';
import type { Db } from './index.js';

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));
const LOCK_KEY = 0x5356_4d47; // "SVMG"

class SqlFileProvider implements MigrationProvider {
  constructor(private readonly dir: string) {}
  async getMigrations(): Promise<Record<string, Migration>> {
    const files = (await readdir(this.dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).sort();
    const out: Record<string, Migration> = {};
    for (const file of files) {
      const text = await readFile(path.join(this.dir, file), 'utf8');
      out[file.replace(/\.sql$/, '')] = { up: async (db) => { await sql.raw(text).execute(db); } };
    }
    return out;
  }
}

export interface MigrateOutcome { applied: string[] }

/**
 * Whether every migration file is recorded as applied, and nothing else is: one query on the pool,
 * no lock, no file read. Every command and every start of `svc serve` asks; almost always the
 * answer is yes, and then the lock, its connection, the migrator's own checks and the files are
 * not needed (issue 27 point 8). Anything else (a new file, no table yet, a record without its
 * file) goes the full way, whose checks and errors are kysely's.
 */
async function upToDate(db: Db, dir: string): Promise<boolean> {
  const files = (await readdir(dir)).filter((f) => /^\d{4}_[\w-]+\.sql$/.test(f)).map((f) => f.replace(/\.sql$/, '')).sort();
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(db);
    return rows.length === files.length && rows.every((r, i) => r.name === files[i]);
  } catch {
    return false;
  }
}

export async function migrateToLatest(db: Db, databaseUrl: string, dir = MIGRATIONS_DIR): Promise<MigrateOutcome> {
  if (await upToDate(db, dir)) return { applied: [] };
  const lockClient = new pg.Client({ connectionString: databaseUrl, application_name: 'svc-migrate-lock' });
  await lockClient.connect();
  try {
    await lockClient.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    const migrator = new Migrator({ db, provider: new SqlFileProvider(dir) });
    const { error, results }: MigrationResultSet = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error')?.migrationName;
      const msg = error instanceof Error ? error.message : String(error);
      throw new Error(`migration ${failed ?? ''} failed: ${msg}`.replace(/\s+/g, ' '));
    }
    return { applied: (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName) };
  } finally {
    // Either failing leaves nothing behind: the advisory lock ends with the session.
    await lockClient.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY])
      .catch((err: Error) => process.emitWarning(`migration lock not released explicitly (${err.message}); it is released when the session ends`));
    await lockClient.end()
      .catch((err: Error) => process.emitWarning(`closing the migration lock connection failed: ${err.message}`));
  }
}
