// `svc workspace add-group`: grant an identity-provider group a workspace role, recorded as made
// by the administrator named in SVC_ADMIN_EMAIL. Idempotent; a different role replaces the old one.
// Like every grant, a change clears cached access on every running server at once.
import type { WorkspaceRole } from '../db/index.js';
import { DomainError, notFound } from '../errors.js';
import { findUserByEmail } from '../identity/users.js';
import { ensureIdpGroup } from '../identity/groups.js';
import { grantWorkspaceRoleToGroup, isPlatformAdmin, type GrantChange } from '../access/grants.js';
import { auditActor } from '../access/actor.js';
import { findWorkspace } from '../workspaces/workspaces.js';
import { recordGovernance } from '../audit/governance.js';
import type { ChangeDeps } from '../util/invalidation.js';

export async function addGroupToWorkspace(deps: ChangeDeps, opts: { adminEmail: string; workspace: string; group: string; role: WorkspaceRole }): Promise<GrantChange> {
  const change = await deps.db.transaction().execute(async (tx) => {
    const admin = await findUserByEmail(tx, opts.adminEmail);
    if (!admin) throw notFound(`administrator does not exist: ${opts.adminEmail} (set SVC_ADMIN_EMAIL to an existing administrator, or run svc init)`);
    if (!(await isPlatformAdmin(tx, admin.id))) {
      throw new DomainError('forbidden', `not a platform administrator: ${admin.email}`);
    }
    const actor = auditActor({ id: admin.id, email: admin.email });
    const ws = await findWorkspace(tx, opts.workspace);
    if (!ws) throw notFound(`workspace does not exist: ${opts.workspace}`);
    const group = await ensureIdpGroup(tx, opts.group);
    if (group.created) {
      await recordGovernance(tx, { action: 'group.create', ...actor, target: `group:${opts.group}`, details: { idp_managed: true } });
    }
    const change = await grantWorkspaceRoleToGroup(tx, ws.id, group.id, opts.role, admin.id, deps.clock.now());
    if (change !== 'unchanged') {
      await recordGovernance(tx, { action: 'workspace.grant', ...actor, target: `group:${opts.group}`, workspace: ws.slug, details: { role: opts.role, change } });
    }
    return change;
  });
  if (change !== 'unchanged') await deps.invalidator.invalidate('access', ['*']);
  return change;
}
