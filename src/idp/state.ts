// The per-Services state of the machine capability: the sealer built from secrets.master_key,
// this replica's signing-key cache, the client cache (cleared by `client` invalidations), the set
// of recently verified client secrets (for the rate limiter), the OpenID provider's key set and
// the module's logger. Kept in a WeakMap keyed by the Services object, so
// each Services (each test) has its own and nothing outlives it.
import type { Services } from '../services.js';
import { idpIssuer } from '../config/index.js';
import { Sealer } from '../secrets/seal.js';
import { SigningKeys, ensureActiveKeys, sealPlainKeys } from './keys.js';
import { ProviderVerifier } from './provider.js';
import { TtlCache } from '../util/ttl-cache.js';
import { ClientCache } from './clients.js';
import type { Logger } from 'pino';

const RECENT_MAX = 10_000;

/**
 * Client id and secret pairs verified in the last `token_window_secs` on this replica. A request
 * presenting such a pair is not counted by the token rate limiter (SPEC 8, rate_limit.token_*):
 * a well-behaved client fetching tokens often never locks itself out, while guesses always count.
 * Only the client id and the SHA-256 of the secret are kept, never the secret.
 */
export class VerifiedSecrets {
  private readonly cache: TtlCache<string, true>;
  constructor(windowMs: number, now: () => number) {
    // bounded by count: only pairs that authenticated are kept, a 43-character hash and a client id made by newClientId
    this.cache = new TtlCache(RECENT_MAX, Math.max(windowMs, 1_000), now);
  }
  /** The memory's key: the client id and the SHA-256 of the presented secret (from hashSecret). */
  static key(clientId: string, secretHash: Buffer): string {
    return `${secretHash.toString('base64url')}:${clientId}`;
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
  clients: ClientCache;
  /**
   * The `token issued` line of every grant. Its fields are fixed by construction (grant, client
   * id, subject, audiences, jti, kid: never a secret), so it skips the redaction pass every other
   * line goes through, as the access log does: redaction was a tenth of a grant's cost.
   */
  issued: Logger;
  /** The start's preparation of the signing keys (prepareSigningKeys), once. */
  prepared?: Promise<void>;
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
      clients: new ClientCache(() => s.clock.now().getTime()),
      issued: s.logging.module('svc::idp').child({}, { redact: [] }),
    };
    const clients = st.clients;
    s.invalidator.on('client', (ids) => clients.forget(ids));
    states.set(s, st);
  }
  return st;
}

/**
 * Generates the first signing keys (ES256 and RS256) at start, seals unsealed keys when a master
 * key is set, and warns about unsealed ones: once per Services, whoever asks first (`svc serve`
 * as soon as the schema is known to be current, while its routes are still being registered; the
 * app's onReady hook in any case). A failure is the caller's to report.
 */
export function prepareSigningKeys(s: Services): Promise<void> {
  const m = machines(s);
  if (!m.prepared) {
    m.prepared = (async () => {
      const log = s.logging.module('svc::idp');
      const created = await ensureActiveKeys(s.db, m.sealer, s.clock.now());
      if (created.length) log.info({ kids: created, sealed: m.sealer.enabled }, 'identity provider signing keys created');
      const sealed = await sealPlainKeys(s.db, m.sealer);
      if (sealed) log.info({ keys: sealed }, 'identity provider signing keys sealed under secrets.master_key');
      if (!m.sealer.enabled) log.warn('secrets.master_key is not set: the identity provider\'s private signing key is stored unsealed in the database');
      m.keys.forget();
    })();
    m.prepared.catch(() => undefined); // reported by whoever awaits it; not an unhandled rejection meanwhile
  }
  return m.prepared;
}
