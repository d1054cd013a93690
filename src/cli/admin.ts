// `svc admin reset-password --email <email>`: prints a new password for a local administrator,
// once (src/bootstrap/reset-password.ts says who qualifies and what else it does).
import { loadCheckedConfig } from './config.js';
import { withChangeDeps } from './invalidation.js';
import { resetAdministratorPassword } from '../bootstrap/reset-password.js';

export async function resetPasswordCommand(opts: { email: string }): Promise<void> {
  const cfg = loadCheckedConfig();
  await withChangeDeps(cfg, async (deps) => {
    const r = await resetAdministratorPassword(deps, opts.email);
    process.stdout.write(`email: ${r.email}\npassword: ${r.password}\nsessions ended: ${r.sessionsEnded}\n`);
  });
}
