// `svc workspace add-group --workspace <slug> --group <idp_group> [--role <role>]`.
import { loadCheckedConfig } from './config.js';
import { withChangeDeps } from './invalidation.js';
import { addGroupToWorkspace } from '../bootstrap/add-group.js';
import { DEFAULT_ADMIN_EMAIL } from '../bootstrap/init.js';
import type { WorkspaceRole } from '../db/index.js';

export async function addGroupCommand(opts: { workspace: string; group: string; role: string }): Promise<void> {
  const cfg = loadCheckedConfig();
  const adminEmail = process.env.SVC_ADMIN_EMAIL?.trim() || DEFAULT_ADMIN_EMAIL;
  await withChangeDeps(cfg, async (deps) => {
    const change = await addGroupToWorkspace(deps, { adminEmail, workspace: opts.workspace, group: opts.group, role: opts.role as WorkspaceRole });
    const what = change === 'unchanged' ? 'unchanged' : change === 'created' ? 'granted' : 'changed';
    process.stdout.write(`${what}: group "${opts.group}" is ${opts.role} in workspace "${opts.workspace}"\n`);
  });
}
