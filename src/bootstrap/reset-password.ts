// `svc admin reset-password`: the break-glass way back in when the local administrator's password
// (printed once by `svc init`) is lost. Only a local user holding platform_admin qualifies: SSO
// users have no password here, and other local users ask an administrator. The new password
// replaces the hash, every session of that user ends (whoever held the old password is signed
// out), and the change is recorded as governance, in the same transaction.
import type { ChangeDeps } from '../util/invalidation.js';
import { badRequest, notFound } from '../errors.js';
import { findUserByEmail } from '../identity/users.js';
import { generatePassword, hashPassword } from '../identity/passwords.js';
import { isPlatformAdmin } from '../access/grants.js';
import { recordGovernance } from '../audit/governance.js';

export interface ResetResult { email: string; password: string; sessionsEnded: number }

export async function resetAdministratorPassword(deps: ChangeDeps, email: string): Promise<ResetResult> {
  const password = generatePassword();
  const hash = await hashPassword(password);
  const { result, sessions } = await deps.db.transaction().execute(async (tx) => {
    const user = await findUserByEmail(tx, email);
    if (!user) throw notFound(`user does not exist: ${email}`);
    if (!user.is_local) throw badRequest(`${user.email} signs in through single sign-on: its password is the identity provider's`);
    if (!(await isPlatformAdmin(tx, user.id))) throw badRequest(`${user.email} is not a platform administrator: an administrator resets other users' passwords`);
    await tx.updateTable('users').set({ password_hash: hash, updated_at: deps.clock.now() }).where('id', '=', user.id).execute();
    const ended = await tx.deleteFrom('sessions').where('user_id', '=', user.id).returning('id_hash').execute();
    await recordGovernance(tx, {
      action: 'user.reset_password', actorId: null, actor: 'svc admin reset-password', target: `user:${user.email}`,
      details: { sessions_ended: ended.length },
    });
    return { result: { email: user.email, password, sessionsEnded: ended.length }, sessions: ended };
  });
  // Servers cache sessions for a moment: tell them the ended ones are gone.
  await deps.invalidator.invalidate('session', sessions.map((s) => s.id_hash.toString('hex')));
  return result;
}
