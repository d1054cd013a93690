// Server-side sessions. The cookie carries 256 random bits; only their SHA-256 is stored. A session
// ends `absolute_ttl_hours` after sign-in however active, and after `idle_ttl_minutes` without a
// request. Checking one is cheap: a short in-process cache answers repeated requests, the idle
// clock is written back at most once per `touchMs`, and revocations clear the cache at once
// (locally, and on other replicas through the invalidation channel).
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import { TtlCache } from '../util/ttl-cache.js';
import { sha256 } from '../util/sha256.js';
import type { CacheInvalidator } from '../util/invalidation.js';

export interface SessionPolicy {
  absoluteTtlMs: number;
  idleTtlMs: number;
}

export interface ActiveSession {
  idHash: Buffer;
  userId: string;
  sub: string | null;
  createdAt: Date;
  expiresAt: Date;
  lastSeenAt: Date;
  /** The session's CSRF token (csrfTokenFor), made once per read of the row rather than an HMAC per request. */
  csrf: Buffer;
}

export interface NewSession { token: string; csrf: string; expiresAt: Date }

const CACHE_MS = 5_000;

export function hashToken(token: string): Buffer {
  return sha256(token);
}

/** The CSRF token bound to a session: an HMAC of the session token, so it cannot be planted. */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('svc-csrf').digest('base64url');
}

export function csrfMatches(sessionToken: string, presented: string | undefined): boolean {
  return csrfEquals(Buffer.from(csrfTokenFor(sessionToken)), presented);
}

/** Whether `presented` is `expected` (a session's CSRF token), in constant time. */
export function csrfEquals(expected: Buffer, presented: string | undefined): boolean {
  if (!presented) return false;
  const got = Buffer.from(presented);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

export class SessionStore {
  private readonly cache: TtlCache<string, ActiveSession>;
  private readonly touchMs: number;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly policy: SessionPolicy,
    private readonly invalidator?: Pick<CacheInvalidator, 'publish'>,
  ) {
    // Bounded by count: a 64-character key, fixed fields and a `sub` of at most 255 characters
    // (oidc.ts) are under 1 KB an entry, and only sessions that exist are kept.
    this.cache = new TtlCache(50_000, CACHE_MS, () => this.clock.now().getTime());
    this.touchMs = Math.max(1_000, Math.min(60_000, Math.floor(policy.idleTtlMs / 10)));
  }

  async create(userId: string, sub: string | null, meta: { ip?: string; userAgent?: string } = {}): Promise<NewSession> {
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const expiresAt = new Date(now.getTime() + this.policy.absoluteTtlMs);
    await this.db.insertInto('sessions').values({
      id_hash: hashToken(token), user_id: userId, sub, created_at: now, last_seen_at: now, expires_at: expiresAt,
      ip: meta.ip?.slice(0, 64) ?? null, user_agent: meta.userAgent?.slice(0, 512) ?? null,
    }).execute();
    return { token, csrf: csrfTokenFor(token), expiresAt };
  }

  /** The active session of a cookie value, or null; ends (deletes) it when a lifetime elapsed. */
  async resolve(token: string): Promise<ActiveSession | null> {
    if (token.length !== 43) return null; // 32 bytes, base64url
    const idHash = hashToken(token);
    const key = idHash.toString('hex');
    const now = this.clock.now();
    let s = this.cache.get(key);
    let fresh = false;
    if (!s) {
      const row = await this.db.selectFrom('sessions')
        .select(['id_hash', 'user_id', 'sub', 'created_at', 'expires_at', 'last_seen_at'])
        .where('id_hash', '=', idHash).executeTakeFirst();
      if (!row) return null;
      s = { idHash, userId: row.user_id, sub: row.sub, createdAt: row.created_at, expiresAt: row.expires_at, lastSeenAt: row.last_seen_at, csrf: Buffer.from(csrfTokenFor(token)) };
      fresh = true;
    }
    if (now >= s.expiresAt || now.getTime() - s.lastSeenAt.getTime() >= this.policy.idleTtlMs) {
      this.cache.delete(key);
      await this.db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
      return null;
    }
    if (now.getTime() - s.lastSeenAt.getTime() >= this.touchMs) {
      // Writing the idle clock back also re-checks the row: a session revoked elsewhere is gone.
      const res = await this.db.updateTable('sessions').set({ last_seen_at: now }).where('id_hash', '=', idHash).executeTakeFirst();
      if (Number(res.numUpdatedRows) === 0) { this.cache.delete(key); return null; }
      s = { ...s, lastSeenAt: now };
      fresh = true;
    }
    // A cached entry is never refreshed by a hit, only by a read or write of the row, so the
    // cache can hide a revocation made on another replica for at most CACHE_MS.
    if (fresh) this.cache.set(key, s);
    return s;
  }

  async revoke(token: string): Promise<void> {
    const idHash = hashToken(token);
    await this.db.deleteFrom('sessions').where('id_hash', '=', idHash).execute();
    this.forget([idHash.toString('hex')], true);
  }

  /** Ends every session of a subject (back-channel logout); returns how many. */
  async revokeAllForSub(sub: string): Promise<number> {
    const rows = await this.db.deleteFrom('sessions').where('sub', '=', sub).returning('id_hash').execute();
    this.forget(rows.map((r) => r.id_hash.toString('hex')), true);
    return rows.length;
  }

  async revokeAllForUser(userId: string): Promise<number> {
    const rows = await this.db.deleteFrom('sessions').where('user_id', '=', userId).returning('id_hash').execute();
    this.forget(rows.map((r) => r.id_hash.toString('hex')), true);
    return rows.length;
  }

  /** Drops cached sessions; `broadcast` tells the other replicas too. */
  forget(keys: string[], broadcast = false): void {
    for (const k of keys) this.cache.delete(k);
    if (broadcast && keys.length) this.invalidator?.publish('session', keys);
  }

  /** Deletes sessions whose absolute lifetime ended (housekeeping; idle ones end on next use). */
  async pruneExpired(): Promise<number> {
    const res = await this.db.deleteFrom('sessions').where('expires_at', '<=', this.clock.now()).executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}
