import { loadCheckedConfig } from './config.js';
import { withMigratedDb } from './db.js';

export async function migrateCommand(): Promise<void> {
  const cfg = loadCheckedConfig();
  await withMigratedDb(cfg, async (_db, { applied }) => {
    if (applied.length === 0) process.stdout.write('migrations: up to date\n');
    for (const name of applied) process.stdout.write(`applied: ${name}\n`);
  });
}
