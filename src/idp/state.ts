// The per-Services state of the machine capability: the sealer built from secrets.master_key,
// this replica's signing-key cache, the set of recently verified client secrets (for the rate
// limiter) and the OpenID provider's key set. Kept in a WeakMap keyed by the Services object, so
// each Services (each test) has its own and nothing outlives it.
import { createHash } from 'node:crypto';
import type { Services } from '../services.js';
import { idpIssuer } from '../config/index.js';
import { Sealer } from '../secrets/seal.js';
import { SigningKeys } from './keys.js';
import { ProviderVerifier } from './provider.js';
import { TtlCache } from '../util/ttl-cache.js';

const RECENT_MAX = 10_000;

/**
 * Client id and secret pairs verified in the last `token_window_secs` on this replica. A request
 * presenting such a pair is not counted by the token rate limiter (SPEC 8, rate_limit.token_*):
 * a well-behaved client fetching tokens often never locks itself out, while guesses always count.
 * Only SHA-256(client_id, secret) is kept, never the secret.
 */
export class VerifiedSecrets {
  private readonly cache: TtlCache<string, true>;
  constructor(windowMs: number, now: () => number) {
    this.cache = new TtlCache(RECENT_MAX, Math.max(windowMs, 1_000), now);
  }
  static key(clientId: string, secret: string): string {
    return createHash('sha256').update(clientId, 'utf8').update('\0').update(secret, 'utf8').digest('base64url');
  }
  has(k: string): boolean { return this.cache.get(k) === true; }
  add(k: string): void { this.cache.set(k, true); }
  delete(k: string): void { this.cache.delete(k); }
}

export interface MachineState {
  issuer: string;
  sealer: Sealer;
  keys: SigningKeys;
  verified: VerifiedSecrets;
  provider: ProviderVerifier;
}

const states = new WeakMap<Services, MachineState>();

export function machines(s: Services): MachineState {
  let st = states.get(s);
  if (!st) {
    const sealer = new Sealer(s.config.secrets.master_key);
    st = {
      issuer: idpIssuer(s.config),
      sealer,
      keys: new SigningKeys(s.db, sealer, s.clock),
      verified: new VerifiedSecrets(s.config.rate_limit.token_window_secs * 1000, () => s.clock.now().getTime()),
      provider: new ProviderVerifier(s.clock),
    };
    states.set(s, st);
  }
  return st;
}
