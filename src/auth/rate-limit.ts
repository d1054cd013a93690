// In-memory rate limiter (per replica, SPEC 5.1.7): at most `max` attempts per `windowMs` per key;
// the attempt that exceeds it blocks the key for `lockoutMs` (HTTP 429). Used by local sign-in
// (per address and per email) and the token endpoint (per address and client id).
import type { Clock } from '../clock.js';

export interface RateLimitPolicy { max: number; windowMs: number; lockoutMs: number }

interface Entry { windowStart: number; count: number; blockedUntil: number }

export type RateDecision = { allowed: true } | { allowed: false; retryAfterSecs: number };

const MAX_KEYS = 100_000;

export class RateLimiter {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly policy: RateLimitPolicy, private readonly clock: Clock) {}

  /** Is the key blocked right now? Does not count an attempt. */
  blocked(key: string): RateDecision {
    const now = this.clock.now().getTime();
    const e = this.entries.get(key);
    if (e && e.blockedUntil > now) return { allowed: false, retryAfterSecs: Math.ceil((e.blockedUntil - now) / 1000) };
    return { allowed: true };
  }

  /** Counts one attempt for every key; refused when any key is (or becomes) blocked. */
  hit(keys: string[]): RateDecision {
    const now = this.clock.now().getTime();
    let worst = 0;
    for (const key of keys) {
      let e = this.entries.get(key);
      if (e && e.blockedUntil > now) { worst = Math.max(worst, e.blockedUntil - now); continue; }
      if (!e || now - e.windowStart >= this.policy.windowMs || e.blockedUntil !== 0) {
        e = { windowStart: now, count: 0, blockedUntil: 0 };
      }
      e.count += 1;
      if (e.count > this.policy.max) {
        e.blockedUntil = now + this.policy.lockoutMs;
        worst = Math.max(worst, this.policy.lockoutMs);
      }
      this.put(key, e);
    }
    return worst > 0 ? { allowed: false, retryAfterSecs: Math.max(1, Math.ceil(worst / 1000)) } : { allowed: true };
  }

  private put(key: string, e: Entry): void {
    this.entries.delete(key);
    if (this.entries.size >= MAX_KEYS) this.evict();
    this.entries.set(key, e);
  }

  /** Drops entries whose window and block have both ended; if still full, the oldest. */
  private evict(): void {
    const now = this.clock.now().getTime();
    for (const [k, e] of this.entries) {
      if (e.blockedUntil <= now && now - e.windowStart >= this.policy.windowMs) this.entries.delete(k);
    }
    while (this.entries.size >= MAX_KEYS) this.entries.delete(this.entries.keys().next().value as string);
  }
}

/** The client address: first hop of X-Forwarded-For (the front proxy overwrites it), else the socket. */
export function clientAddress(headers: Record<string, string | string[] | undefined>, socketAddress: string | undefined): string {
  const xff = headers['x-forwarded-for'];
  const first = (Array.isArray(xff) ? xff[0] : xff)?.split(',')[0]?.trim();
  return first || socketAddress || 'unknown';
}
