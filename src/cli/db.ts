// Opens the database for a one-shot command, applies migrations, runs `fn`, closes.
import type { Config } from '../config/index.js';
import { createDb, type Db } from '../db/index.js';
import { migrateToLatest, type MigrateOutcome } from '../db/migrate.js';
import { fail, oneLine } from './errors.js';

/** Closes the pool; a failure to close is reported on stderr (the command's work is done). */
async function close(db: Db): Promise<void> {
  await db.destroy().catch((err: Error) => process.stderr.write(`warning: closing the database connections failed: ${oneLine(err)}\n`));
}

export async function withMigratedDb<T>(cfg: Config, fn: (db: Db, outcome: MigrateOutcome) => Promise<T>): Promise<T> {
  const db = createDb({ url: cfg.database.url, maxConnections: Math.min(cfg.database.max_connections, 4) });
  let result: T;
  try {
    const outcome = await migrateToLatest(db, cfg.database.url);
    result = await fn(db, outcome);
  } catch (err) {
    await close(db);
    fail(oneLine(err, cfg.database.url));
  }
  await close(db);
  return result;
}
