// The gateway's rate limit (SPEC 7): more than apps.rate_max calls per token in a window of
// apps.rate_window_secs answer 429 and hold that token for one full window from the refusal, so
// a client hammering through the limit stays refused rather than getting a call in each window.
// In memory per replica like the other limiters (SPEC 5.1.7); bounded in entries.
import type { Clock } from '../clock.js';

interface Slot { start: number; count: number; heldUntil: number }

/** Tokens tracked at once (~100 bytes each: keys are SHA-256 hashes); the oldest entry goes first beyond it. */
export const MAX_TRACKED = 100_000;

export class TokenRateLimiter {
  private readonly slots = new Map<string, Slot>();
  constructor(private readonly clock: Clock, private readonly max: number, private readonly windowSecs: number) {}

  /** null when the call may go ahead, else the seconds to wait (Retry-After). */
  take(key: string): number | null {
    const now = this.clock.now().getTime();
    const win = this.windowSecs * 1000;
    let s = this.slots.get(key);
    if (s && now < s.heldUntil) return Math.ceil((s.heldUntil - now) / 1000);
    if (!s || now - s.start >= win) {
      s = { start: now, count: 0, heldUntil: 0 };
      this.slots.delete(key);
      if (this.slots.size >= MAX_TRACKED) this.slots.delete(this.slots.keys().next().value!);
      this.slots.set(key, s);
    }
    s.count += 1;
    if (s.count <= this.max) return null;
    s.heldUntil = now + win;
    return this.windowSecs;
  }
}
