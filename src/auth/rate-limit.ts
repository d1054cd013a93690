// In-memory rate limiter (per replica, SPEC 5.1.7): at most `max` attempts per `windowMs` per key;
// the attempt that exceeds it blocks the key for `lockoutMs` (HTTP 429). Used by local sign-in
// (per address and per email) and the token endpoint (per address and client id).
// - The arithmetic of one key (`countAttempt`, `blockedFor`) is pure and unit-tested with a moved clock.
// - Keys are bounded: one longer than MAX_KEY_CHARS (a 16 KB X-Forwarded-For, a 1 MB client_id) is
//   kept as its SHA-256, so an entry costs at most ENTRY_BYTES + 2 * MAX_KEY_CHARS.
// - The table is bounded in bytes: when a new key does not fit, entries whose window and block
//   have ended go first, then the oldest.
// - A request refused outright (one of its keys is blocked) changes nothing: no key is counted and
//   no new key is stored, so a blocked address cannot fill the table with fresh client ids.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';

export interface RateLimitPolicy { max: number; windowMs: number; lockoutMs: number }

export interface RateEntry { windowStart: number; count: number; blockedUntil: number }

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSecs: number };

/** Keys up to this length are kept as they are (an IPv6 address, an email, a client id). */
export const MAX_KEY_CHARS = 128;
/** What one entry costs besides its key: the Map slot, the entry object and its three numbers. */
export const ENTRY_BYTES = 160;
/** Default byte budget of one limiter's table (about 50 000 entries of long keys). */
export const DEFAULT_MAX_BYTES = 16 * 1024 * 1024;

/** Milliseconds the key stays blocked at `now` (0: not blocked). */
export function blockedFor(e: RateEntry | undefined, now: number): number {
  return e && e.blockedUntil > now ? e.blockedUntil - now : 0;
}

/**
 * One attempt on a key that is not blocked: a new window when the last one ended (or a block
 * expired), one more in the current window otherwise; exceeding `max` blocks for `lockoutMs`.
 */
export function countAttempt(e: RateEntry | undefined, now: number, p: RateLimitPolicy): RateEntry {
  const fresh = !e || now - e.windowStart >= p.windowMs || e.blockedUntil !== 0;
  const next: RateEntry = fresh ? { windowStart: now, count: 1, blockedUntil: 0 } : { ...e, count: e.count + 1 };
  if (next.count > p.max) next.blockedUntil = now + p.lockoutMs;
  return next;
}

/** Neither counting nor blocking any more: the entry can go. */
export function expired(e: RateEntry, now: number, p: RateLimitPolicy): boolean {
  return e.blockedUntil <= now && now - e.windowStart >= p.windowMs;
}

/** The stored form of a key: as given when short, else `sha256:` and its hash. */
export function boundedKey(key: string): string {
  return key.length <= MAX_KEY_CHARS ? key : `sha256:${createHash('sha256').update(key, 'utf8').digest('base64url')}`;
}

const entryBytes = (key: string) => ENTRY_BYTES + 2 * key.length;
const ALLOWED: RateDecision = Object.freeze({ allowed: true });
const retryAfter = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

export class RateLimiter {
  private readonly entries = new Map<string, RateEntry>();
  private used = 0;

  constructor(private readonly policy: RateLimitPolicy, private readonly clock: Clock, private readonly maxBytes = DEFAULT_MAX_BYTES) {}

  /** Keys held and the bytes they are counted as (for tests and metrics). */
  get size(): number { return this.entries.size; }
  get bytes(): number { return this.used; }

  /** Is any of the keys blocked right now? Counts nothing, stores nothing. */
  blocked(keys: string | string[]): RateDecision {
    const now = this.clock.now().getTime();
    let worst = 0;
    for (const key of typeof keys === 'string' ? [keys] : keys) worst = Math.max(worst, blockedFor(this.entries.get(boundedKey(key)), now));
    return worst > 0 ? { allowed: false, retryAfterSecs: retryAfter(worst) } : ALLOWED;
  }

  /**
   * Counts one attempt for every key; refused when any key is (or becomes) blocked. A request
   * refused because a key is already blocked is not an attempt: nothing is counted or stored.
   */
  hit(keys: string[]): RateDecision {
    const outright = this.blocked(keys);
    if (!outright.allowed) return outright;
    const now = this.clock.now().getTime();
    let worst = 0;
    for (const key of new Set(keys.map(boundedKey))) {
      const e = countAttempt(this.entries.get(key), now, this.policy);
      worst = Math.max(worst, blockedFor(e, now));
      this.put(key, e, now);
    }
    return worst > 0 ? { allowed: false, retryAfterSecs: retryAfter(worst) } : ALLOWED;
  }

  private put(key: string, e: RateEntry, now: number): void {
    if (this.entries.delete(key)) this.used -= entryBytes(key);
    const cost = entryBytes(key);
    if (this.used + cost > this.maxBytes) this.evict(cost, now);
    this.entries.set(key, e);
    this.used += cost;
  }

  /** Drops entries whose window and block have both ended; while still over budget, the oldest. */
  private evict(needed: number, now: number): void {
    for (const [k, e] of this.entries) {
      if (expired(e, now, this.policy)) { this.entries.delete(k); this.used -= entryBytes(k); }
    }
    for (const k of this.entries.keys()) {
      if (this.used + needed <= this.maxBytes) break;
      this.entries.delete(k);
      this.used -= entryBytes(k);
    }
  }
}

/** The client address: first hop of X-Forwarded-For (the front proxy overwrites it), else the socket. */
export function clientAddress(headers: Record<string, string | string[] | undefined>, socketAddress: string | undefined): string {
  const xff = headers['x-forwarded-for'];
  const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',', 1)[0]?.trim();
  return first || socketAddress || 'unknown';
}
