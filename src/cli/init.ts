// `svc init [--force]`: prints the administrator email, the password (once) and the workspace.
import { loadCheckedConfig } from './config.js';
import { withMigratedDb } from './db.js';
import { initAdministrator, DEFAULT_ADMIN_EMAIL } from '../bootstrap/init.js';

export async function initCommand(force: boolean): Promise<void> {
  const cfg = loadCheckedConfig();
  const email = process.env.SVC_ADMIN_EMAIL?.trim() || DEFAULT_ADMIN_EMAIL;
  const password = process.env.SVC_ADMIN_PASSWORD;
  await withMigratedDb(cfg, async (db) => {
    const result = await initAdministrator(db, { email, password, force });
    if (result.kind === 'skipped') {
      process.stdout.write('a platform administrator already exists; nothing done (use --force to create another)\n');
      return;
    }
    process.stdout.write(`email: ${result.email}\n`);
    // A password the operator supplied is not echoed back; a generated one is shown this once.
    process.stdout.write(`password: ${result.password ?? '(as given in SVC_ADMIN_PASSWORD)'}\n`);
    process.stdout.write(`workspace: ${result.workspace}\n`);
  });
}
