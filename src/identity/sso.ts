// People who sign in through the identity provider: the user is found (or created) by `sub`, email
// and name are refreshed, the names in the groups claim become identity-provider groups, and the
// user's memberships of identity-provider groups are made equal to the claim. Local groups are
// never touched, even when one has the same name as a claimed group. Everything lands in one
// transaction with its governance records; then the user's cached access is cleared everywhere.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';
import type { ChangeDeps } from '../util/invalidation.js';
import { recordGovernance } from '../audit/governance.js';
import { ensureIdpGroup } from './groups.js';
import { isUniqueViolation } from '../errors.js';
import { assertEmail } from './users.js';
import { hashToken, type SessionStore } from '../auth/sessions.js';

export interface SsoProfile {
  sub: string;
  email: string;
  name: string | null;
  /** Group names from the claim: strings only, deduplicated, each a valid group name. */
  groups: string[];
}

/** The claims cannot make a user: the sentence says what is missing (shown to the person). */
export class SsoClaimsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SsoClaimsError';
  }
}

/**
 * Another account already has the email the provider sent. Accounts are never merged by email:
 * a provider account that could claim an existing email would take over that account.
 */
export class SsoAccountConflict extends Error {
  constructor(readonly email: string) {
    super('an account with this email already exists');
    this.name = 'SsoAccountConflict';
  }
}

export interface ProfileFromClaims { profile: SsoProfile; ignoredGroups: number }

/**
 * The profile in an ID token's claims. Group entries that are not strings, or not valid group
 * names (empty, over 255 characters, control characters), are ignored and counted. Names with a
 * leading `/` (Keycloak's "full group path") are kept as given.
 */
export function profileFromClaims(claims: Record<string, unknown>, groupsClaim: string): ProfileFromClaims {
  const sub = claims.sub;
  if (typeof sub !== 'string' || sub.length === 0) throw new SsoClaimsError('The identity provider sent no subject (sub).');
  const rawEmail = claims.email;
  if (typeof rawEmail !== 'string' || rawEmail.trim() === '') {
    throw new SsoClaimsError('The identity provider sent no email address. Ask your administrator to release the email claim (scope "email").');
  }
  const email = rawEmail.trim();
  try {
    assertEmail(email);
  } catch {
    throw new SsoClaimsError('The identity provider sent an email address this service cannot use.');
  }
  const name = nameOf(claims);
  const raw = claims[groupsClaim];
  const groups: string[] = [];
  let ignoredGroups = 0;
  if (Array.isArray(raw)) {
    const seen = new Set<string>();
    for (const g of raw) {
      if (typeof g !== 'string' || g.length === 0 || g.length > 255 || /[\u0000-\u001f\u007f]/.test(g)) { ignoredGroups++; continue; }
      if (seen.has(g)) continue;
      seen.add(g);
      groups.push(g);
    }
  } else if (raw !== undefined && raw !== null) {
    // A single string is not the array of names the spec asks for; ignore rather than guess.
    ignoredGroups++;
  }
  return { profile: { sub, email, name, groups }, ignoredGroups };
}

function nameOf(claims: Record<string, unknown>): string | null {
  const pick = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim().slice(0, 512) : null);
  const full = pick(claims.name);
  if (full) return full;
  const parts = [pick(claims.given_name), pick(claims.family_name)].filter(Boolean);
  if (parts.length) return parts.join(' ');
  return pick(claims.preferred_username);
}

export interface SsoSyncResult {
  userId: string;
  email: string;
  created: boolean;
  updated: Array<'email' | 'name'>;
  groupsCreated: string[];
  groupsAdded: string[];
  groupsRemoved: string[];
}

/**
 * Creates or updates the user of `profile.sub` and synchronises their identity-provider groups;
 * when anything changed, the user's cached access is cleared on every replica.
 */
export async function syncSsoUser(deps: ChangeDeps, profile: SsoProfile): Promise<SsoSyncResult> {
  const r = await syncWithRetry(deps, profile);
  if (r.created || r.updated.length || r.groupsAdded.length || r.groupsRemoved.length || r.groupsCreated.length) {
    await deps.invalidator.invalidate('access', [r.userId]);
  }
  return r;
}

async function syncWithRetry({ db, clock }: ChangeDeps, profile: SsoProfile): Promise<SsoSyncResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction().execute((tx) => syncIn(tx, clock.now(), profile));
    } catch (err) {
      if (!isUniqueViolation(err)) throw err;
      // A concurrent first sign-in of the same subject can win the race past the checks above;
      // once more, and this one finds the user by sub.
      if (attempt < 2) continue;
      // Two different accounts cannot share an email (lower(email) is unique).
      if (/email/.test(String((err as { constraint?: string }).constraint ?? ''))) throw new SsoAccountConflict(profile.email);
      throw err;
    }
  }
}

async function syncIn(tx: Db, now: Date, p: SsoProfile): Promise<SsoSyncResult> {
  const result: SsoSyncResult = { userId: '', email: p.email, created: false, updated: [], groupsCreated: [], groupsAdded: [], groupsRemoved: [] };
  const emailHolder = () => tx.selectFrom('users').select(['id', 'sub'])
    .where(sql<string>`lower(email)`, '=', p.email.toLowerCase()).executeTakeFirst();

  let user = await tx.selectFrom('users').select(['id', 'email', 'name']).where('sub', '=', p.sub).forUpdate().executeTakeFirst();
  if (!user) {
    const holder = await emailHolder();
    if (holder) throw new SsoAccountConflict(p.email);
    // A concurrent first sign-in of the same subject waits here on the unique index, then finds
    // the row the other one inserted.
    const inserted = await tx.insertInto('users')
      .values({ sub: p.sub, email: p.email, name: p.name, password_hash: null, is_local: false, last_login_at: now, updated_at: now })
      .onConflict((oc) => oc.column('sub').doNothing())
      .returning(['id', 'email', 'name']).executeTakeFirst();
    if (inserted) {
      result.created = true;
      user = inserted;
      await recordGovernance(tx, { action: 'user.create', actorId: inserted.id, actor: p.email, target: `user:${p.email}`, details: { via: 'sso', sub: p.sub } });
    } else {
      user = await tx.selectFrom('users').select(['id', 'email', 'name']).where('sub', '=', p.sub).forUpdate().executeTakeFirstOrThrow();
    }
  }
  result.userId = user.id;

  if (!result.created) {
    if (user.email !== p.email) {
      const holder = await emailHolder();
      if (holder && holder.id !== user.id) throw new SsoAccountConflict(p.email);
      result.updated.push('email');
    }
    if (user.name !== p.name) result.updated.push('name');
    await tx.updateTable('users')
      .set({ email: p.email, name: p.name, last_login_at: now, ...(result.updated.length ? { updated_at: now } : {}) })
      .where('id', '=', user.id).execute();
    if (result.updated.length) {
      await recordGovernance(tx, {
        action: 'user.update', actorId: user.id, actor: p.email, target: `user:${p.email}`,
        details: { via: 'sso', fields: result.updated, ...(result.updated.includes('email') ? { previous_email: user.email } : {}) },
      });
    }
  }

  // Identity-provider groups named in the claim (created on first sight).
  const wanted = new Map<string, string>(); // group id -> name
  for (const name of p.groups) {
    const g = await ensureIdpGroup(tx, name);
    wanted.set(g.id, name);
    if (g.created) {
      result.groupsCreated.push(name);
      await recordGovernance(tx, { action: 'group.create', actorId: user.id, actor: p.email, target: `group:${name}`, details: { idp_managed: true, via: 'sso' } });
    }
  }

  // Current memberships of identity-provider groups only: local groups are not ours to change.
  const current = await tx.selectFrom('group_members as m').innerJoin('groups as g', 'g.id', 'm.group_id')
    .select(['g.id', 'g.name']).where('m.user_id', '=', user.id).where('g.idp_managed', '=', true).execute();
  const have = new Set(current.map((r) => r.id));

  const toAdd = [...wanted.keys()].filter((id) => !have.has(id));
  if (toAdd.length) {
    const added = await tx.insertInto('group_members')
      .values(toAdd.map((group_id) => ({ group_id, user_id: user!.id })))
      .onConflict((oc) => oc.columns(['group_id', 'user_id']).doNothing())
      .returning('group_id').execute();
    for (const { group_id } of added) {
      const name = wanted.get(group_id)!;
      result.groupsAdded.push(name);
      await recordGovernance(tx, { action: 'group.member.add', actorId: user.id, actor: p.email, target: `group:${name}`, details: { user: p.email, via: 'sso' } });
    }
  }

  const stale = current.filter((r) => !wanted.has(r.id));
  if (stale.length) {
    await tx.deleteFrom('group_members').where('user_id', '=', user.id).where('group_id', 'in', stale.map((r) => r.id)).execute();
    for (const r of stale) {
      result.groupsRemoved.push(r.name);
      await recordGovernance(tx, { action: 'group.member.remove', actorId: user.id, actor: p.email, target: `group:${r.name}`, details: { user: p.email, via: 'sso' } });
    }
  }
  return result;
}

/** Remembers the provider's session id (`sid`) on the session just created for it. */
export async function recordSessionSid(db: Db, sessionToken: string, sid: string): Promise<void> {
  await db.updateTable('sessions').set({ sid }).where('id_hash', '=', hashToken(sessionToken)).execute();
}

/** Ends the sessions started in the provider session `sid` (logout tokens without `sub`). */
export async function revokeSessionsBySid(db: Db, sessions: SessionStore, sid: string): Promise<number> {
  const rows = await db.deleteFrom('sessions').where('sid', '=', sid).returning('id_hash').execute();
  sessions.forget(rows.map((r) => r.id_hash.toString('hex')), true);
  return rows.length;
}
