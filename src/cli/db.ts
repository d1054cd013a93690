// Opens the database for a one-shot command, applies migrations, runs `fn`, closes.
import type { Config } from '../config/index.js';
import { createDb, type Db } from '../db/index.js';
import { migrateToLatest, type MigrateOutcome } from '../db/migrate.js';
import { fail, oneLine } from './errors.js';

export async function withMigratedDb<T>(cfg: Config, fn: (db: Db, outcome: MigrateOutcome) => Promise<T>): Promise<T> {
  const db = createDb({ url: cfg.database.url, maxConnections: Math.min(cfg.database.max_connections, 4) });
  try {
    const outcome = await migrateToLatest(db, cfg.database.url);
    return await fn(db, outcome);
  } catch (err) {
    await db.destroy().catch(() => {});
    fail(oneLine(err, cfg.database.url));
  } finally {
    await db.destroy().catch(() => {});
  }
}
