// One-time tickets and app tokens of the data-apps origin (SPEC 3, docs/apps.md "Opening an app").
// Both live in Redis so every replica's apps listener sees them; keys hold a SHA-256 of the
// value, never the value. Lifetimes are judged on the injected clock (Redis expiry only bounds
// the memory they hold), so a moved clock in tests ends them exactly as time would.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Clock } from '../clock.js';

/** What a ticket and the token minted from it are bound to. */
export interface AppBinding {
  userId: string;
  workspaceId: string;
  workspace: string;
  appId: string;
  version: number | null;
  mode: 'run' | 'edit';
}

export interface TicketLimits { ticketTtlSecs: number; idleSecs: number; absoluteSecs: number }

interface TicketRecord { b: AppBinding; secret: string; exp: number }
interface TokenRecord { b: AppBinding; minted: number; used: number }

const sha = (s: string) => createHash('sha256').update(s).digest('base64url');
/** How a token is named outside Redis's token records (rate limits, pod seats): its SHA-256. */
export const tokenHash = sha;
const fresh = () => randomBytes(32).toString('base64url');
const sameHash = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};
/** A ticket or token is 43 base64url characters; anything else is refused before Redis. */
export const TOKEN_SHAPE = /^[A-Za-z0-9_-]{43}$/;
const MAX_BINDING_BYTES = 4_096;

export class AppTickets {
  constructor(private readonly redis: Redis, private readonly clock: Clock, private readonly lim: TicketLimits, private readonly ns = 'svc:apps') {}

  /** A ticket and the secret the parent page hands to the iframe; both are needed to redeem. */
  async issue(b: AppBinding): Promise<{ ticket: string; secret: string; expiresAt: Date }> {
    const ticket = fresh();
    const secret = fresh();
    const exp = this.clock.now().getTime() + this.lim.ticketTtlSecs * 1000;
    const rec: TicketRecord = { b, secret: sha(secret), exp };
    await this.redis.set(`${this.ns}:ticket:${sha(ticket)}`, JSON.stringify(rec), 'PX', this.lim.ticketTtlSecs * 1000 + 60_000);
    return { ticket, secret, expiresAt: new Date(exp) };
  }

  /**
   * Redeems a ticket once: the record is taken with GETDEL before anything is checked, so a
   * second attempt (or a guess of the secret) finds nothing. Answers the new token, or why not.
   */
  async redeem(ticket: string, secret: string): Promise<{ token: string; binding: AppBinding } | { refused: string }> {
    if (!TOKEN_SHAPE.test(ticket) || !TOKEN_SHAPE.test(secret)) return { refused: 'malformed ticket' };
    const raw = await this.redis.getdel(`${this.ns}:ticket:${sha(ticket)}`);
    if (!raw || raw.length > MAX_BINDING_BYTES) return { refused: 'unknown or already redeemed ticket' };
    const rec = JSON.parse(raw) as TicketRecord;
    if (this.clock.now().getTime() > rec.exp) return { refused: 'ticket expired' };
    if (!sameHash(rec.secret, sha(secret))) return { refused: 'wrong ticket secret' };
    return { token: await this.mint(rec.b), binding: rec.b };
  }

  private async mint(b: AppBinding): Promise<string> {
    const token = fresh();
    const now = this.clock.now().getTime();
    const rec: TokenRecord = { b, minted: now, used: now };
    await this.redis.set(`${this.ns}:token:${sha(token)}`, JSON.stringify(rec), 'PX', this.lim.absoluteSecs * 1000 + 60_000);
    return token;
  }

  /** The binding of a live token, marking it used; null once it idled out or passed its absolute end. */
  async resolve(token: string): Promise<AppBinding | null> {
    if (!TOKEN_SHAPE.test(token)) return null;
    const key = `${this.ns}:token:${sha(token)}`;
    const raw = await this.redis.get(key);
    if (!raw || raw.length > MAX_BINDING_BYTES) return null;
    const rec = JSON.parse(raw) as TokenRecord;
    const now = this.clock.now().getTime();
    if (now - rec.minted > this.lim.absoluteSecs * 1000 || now - rec.used > this.lim.idleSecs * 1000) {
      await this.redis.del(key);
      return null;
    }
    await this.redis.set(key, JSON.stringify({ ...rec, used: now }), 'KEEPTTL');
    return rec.b;
  }
}
