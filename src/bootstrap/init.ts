// `svc init`: the first local administrator (platform_admin), workspace `default`, and the
// administrator as its ws_admin. All in one transaction with its governance records. Every grant
// goes to the user created here, whose access no server has cached: nothing to invalidate.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import { systemClock, type Clock } from '../clock.js';
import { createLocalUser } from '../identity/users.js';
import { generatePassword } from '../identity/passwords.js';
import { grantPlatformAdminToUser, grantWorkspaceRoleToUser, platformAdminExists } from '../access/grants.js';
import { ensureWorkspace } from '../workspaces/workspaces.js';
import { recordGovernance } from '../audit/governance.js';

export const DEFAULT_ADMIN_EMAIL = 'admin@svc.local';
export const DEFAULT_WORKSPACE = 'default';
const INIT_LOCK_KEY = 0x5356_494e; // "SVIN"

export type InitResult =
  | { kind: 'skipped' }
  | { kind: 'created'; email: string; password: string | null; workspace: string; workspaceCreated: boolean };

export async function initAdministrator(db: Db, opts: { email: string; password?: string; force: boolean }, clock: Clock = systemClock): Promise<InitResult> {
  return db.transaction().execute(async (tx) => {
    // Serialise concurrent `init` runs so two first runs cannot both create an administrator.
    await sql`SELECT pg_advisory_xact_lock(${INIT_LOCK_KEY})`.execute(tx);
    if (!opts.force && (await platformAdminExists(tx))) return { kind: 'skipped' } as const;
    const generated = opts.password === undefined || opts.password === '';
    const password = generated ? generatePassword() : opts.password!;
    const user = await createLocalUser(tx, { email: opts.email, password, name: 'Administrator' });
    await grantPlatformAdminToUser(tx, user.id, null);
    const { workspace, created } = await ensureWorkspace(tx, DEFAULT_WORKSPACE, user.id);
    await grantWorkspaceRoleToUser(tx, workspace.id, user.id, 'ws_admin', user.id, clock.now());
    await recordGovernance(tx, { action: 'user.create', actorId: null, actor: 'svc init', target: `user:${user.email}`, details: { platform_role: 'platform_admin' } });
    if (created) await recordGovernance(tx, { action: 'workspace.create', actorId: user.id, actor: user.email, target: `workspace:${workspace.slug}`, workspace: workspace.slug });
    await recordGovernance(tx, { action: 'workspace.grant', actorId: user.id, actor: user.email, target: `user:${user.email}`, workspace: workspace.slug, details: { role: 'ws_admin' } });
    return { kind: 'created', email: user.email, password: generated ? password : null, workspace: workspace.slug, workspaceCreated: created } as const;
  });
}
