// `svc catalog import --workspace <slug> --namespace <ns> --table <name> [--metadata <file>] <folder>`:
// copies a table written elsewhere (a local copy of its folder) into the workspace's warehouse,
// rewriting its paths, and registers it (src/catalog/import.ts). Recorded as done by `svc-cli`.
import { loadCheckedConfig } from './config.js';
import { fail, oneLine } from './errors.js';
import { createServices } from '../services.js';
import { migrateToLatest } from '../db/migrate.js';
import { findWarehouse } from '../catalog/warehouse.js';
import { importTable } from '../catalog/import.js';
import type { CatalogCaller } from '../catalog/access.js';

/** The command line acts as an administrator of every workspace, as `svc client` and `svc workspace` do. */
const cliCaller: CatalogCaller = {
  actorId: null, actor: 'svc-cli',
  roleIn: async () => ({ role: 'ws_admin', why: 'the svc command line' }),
  subject: async () => null,
};

export async function importCommand(folder: string, opts: { workspace: string; namespace: string; table: string; metadata?: string }): Promise<void> {
  const cfg = loadCheckedConfig();
  const s = createServices(cfg);
  let line: string;
  try {
    await migrateToLatest(s.db, cfg.database.url);
    const wh = await findWarehouse(s, opts.workspace);
    const levels = opts.namespace.split('.');
    const r = await importTable(s, wh, cliCaller, levels, opts.table, folder, opts.metadata);
    line = `imported: ${[...levels, opts.table].join('.')} in workspace ${wh.slug}\nmetadata: ${r.metadataLocation}\nfiles: ${r.files} (${r.bytes} bytes)\n`;
  } catch (err) {
    await s.close().catch(() => undefined);
    fail(oneLine(err, cfg.database.url));
  }
  await s.close();
  process.stdout.write(line);
}
