// Signing keys of the machine identity provider (table idp_signing_keys).
// - One active key per algorithm: ES256 (P-256), the default, and RS256 (RSA 2048) for engines
//   whose JWT libraries expect it; a client's tokens are signed with its `token_signing_alg`.
//   Missing active keys are created on first start (or first use) under a transaction-scoped
//   advisory lock, with a partial unique index per algorithm as the second guard, so replicas
//   starting at once end up with one active key of each.
// - The private key is sealed with secrets.master_key when one is configured; without one it is
//   stored as a JWK and a warning is logged at start.
// - `svc idp rotate-key` retires the active keys and creates new ones. A retired key stays in the
//   published key set (and verifies this service's own tokens) until `not_after`, which is its
//   retirement time plus the access-token lifetime plus a grace period covering replicas that
//   still hold the old key in their cache.
// - Each replica caches the key set for KEY_CACHE_MS (by the service clock), so a rotation made by
//   another process is picked up within that time; a token carrying an unknown kid triggers an
//   immediate reload.
import { sql } from 'kysely';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, calculateJwkThumbprint, type JWK, type CryptoKey } from 'jose';
import type { Db } from '../db/index.js';
import type { Clock } from '../clock.js';
import type { Sealer } from '../secrets/seal.js';

export const SIGNING_ALGS = ['ES256', 'RS256'] as const;
export type SigningAlg = (typeof SIGNING_ALGS)[number];
/** The algorithm of a client that names none. */
export const DEFAULT_SIGNING_ALG: SigningAlg = 'ES256';
/** Lifetime of every access token this service mints. */
export const ACCESS_TOKEN_TTL_SECS = 3600;
/** How long this replica trusts its cached key set before reading the table again. */
export const KEY_CACHE_MS = 30_000;
/** Beyond the token lifetime, how long a retired key stays published (covers replica caches and clock skew). */
export const RETIRED_KEY_GRACE_SECS = 300;

const LOCK_KEY = 0x5356_4b59; // "SVKY"

export function isSigningAlg(v: unknown): v is SigningAlg {
  return (SIGNING_ALGS as readonly unknown[]).includes(v);
}

export interface KeyRow {
  kid: string;
  alg: string;
  public_jwk: Record<string, unknown>;
  private_key: string;
  sealed: boolean;
  created_at: Date;
  retired_at: Date | null;
  not_after: Date | null;
}

export interface PublishedKey { kid: string; alg: string; jwk: JWK; active: boolean; notAfter: Date | null }

const privateContext = (kid: string) => `idp_signing_keys:${kid}:private_key`;

async function newKeyRow(sealer: Sealer, now: Date, alg: SigningAlg): Promise<KeyRow> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' ? { modulusLength: 2048 } : {}) });
  const pub = await exportJWK(publicKey);
  // The key id is the RFC 7638 thumbprint of the public key.
  const kid = await calculateJwkThumbprint(pub, 'sha256');
  const priv = JSON.stringify(await exportJWK(privateKey));
  return {
    kid, alg,
    public_jwk: { ...pub, kid, alg, use: 'sig' },
    private_key: sealer.enabled ? sealer.seal(priv, privateContext(kid)) : priv,
    sealed: sealer.enabled,
    created_at: now, retired_at: null, not_after: null,
  };
}

async function insertKey(tx: Db, row: KeyRow): Promise<void> {
  await tx.insertInto('idp_signing_keys').values({
    kid: row.kid, alg: row.alg, public_jwk: JSON.stringify(row.public_jwk), private_key: row.private_key,
    sealed: row.sealed, created_at: row.created_at, retired_at: null, not_after: null,
  }).onConflict((oc) => oc.doNothing()).execute();
}

/** Creates an active key of every algorithm that has none. Returns the kids created. */
export async function ensureActiveKeys(db: Db, sealer: Sealer, now: Date): Promise<string[]> {
  return db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(tx);
    const active = await tx.selectFrom('idp_signing_keys').select('alg').where('retired_at', 'is', null).execute();
    const created: string[] = [];
    for (const alg of SIGNING_ALGS) {
      if (active.some((r) => r.alg === alg)) continue;
      const row = await newKeyRow(sealer, now, alg);
      await insertKey(tx, row);
      created.push(row.kid);
    }
    return created;
  });
}

export interface RotationResult {
  created: Array<{ kid: string; alg: SigningAlg }>;
  retired: Array<{ kid: string; alg: string; notAfter: Date }>;
  pruned: string[];
}

/** Retires the active keys (published until retirement + token lifetime + grace) and creates a new one per algorithm. */
export async function rotateSigningKeys(db: Db, sealer: Sealer, now: Date): Promise<RotationResult> {
  return db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${LOCK_KEY})`.execute(tx);
    const notAfter = new Date(now.getTime() + (ACCESS_TOKEN_TTL_SECS + RETIRED_KEY_GRACE_SECS) * 1000);
    const old = await tx.updateTable('idp_signing_keys').set({ retired_at: now, not_after: notAfter })
      .where('retired_at', 'is', null).returning(['kid', 'alg']).execute();
    const pruned = await tx.deleteFrom('idp_signing_keys').where('not_after', '<', now).returning('kid').execute();
    const created: RotationResult['created'] = [];
    for (const alg of SIGNING_ALGS) {
      const row = await newKeyRow(sealer, now, alg);
      await insertKey(tx, row);
      created.push({ kid: row.kid, alg });
    }
    const order = (alg: string) => SIGNING_ALGS.indexOf(alg as SigningAlg);
    return {
      created,
      retired: old.map((o) => ({ kid: o.kid, alg: o.alg, notAfter })).sort((a, b) => order(a.alg) - order(b.alg)),
      pruned: pruned.map((p) => p.kid),
    };
  });
}

/** Seals private keys that were stored unsealed, once a master key is configured. Returns how many. */
export async function sealPlainKeys(db: Db, sealer: Sealer): Promise<number> {
  if (!sealer.enabled) return 0;
  const plain = await db.selectFrom('idp_signing_keys').select(['kid', 'private_key']).where('sealed', '=', false).execute();
  for (const k of plain) {
    await db.updateTable('idp_signing_keys').set({ private_key: sealer.seal(k.private_key, privateContext(k.kid)), sealed: true })
      .where('kid', '=', k.kid).where('sealed', '=', false).execute();
  }
  return plain.length;
}

interface Loaded { at: number; rows: KeyRow[] }

/** An active key ready to sign: node's KeyObject signs synchronously (ES256) or on the thread pool (RS256). */
export interface ActiveKey { kid: string; alg: SigningAlg; key: KeyObject }

/** This replica's view of the signing keys, cached briefly. */
export class SigningKeys {
  private loaded: Loaded | null = null;
  private loading: Promise<Loaded> | null = null;
  private lastForcedReload = -Infinity;
  private readonly privateKeys = new Map<string, KeyObject>();
  private readonly publicKeys = new Map<string, Promise<CryptoKey>>();

  constructor(private readonly db: Db, private readonly sealer: Sealer, private readonly clock: Clock) {}

  /** Drops the cached key set (after a rotation in this process). */
  forget(): void { this.loaded = null; }

  private now(): number { return this.clock.now().getTime(); }

  private rows(force = false): KeyRow[] | Promise<KeyRow[]> {
    const fresh = this.loaded && this.now() - this.loaded.at < KEY_CACHE_MS;
    if (fresh && !force) return this.loaded!.rows;
    this.loading ??= (async () => {
      try {
        const now = this.clock.now();
        let rows = await this.query(now);
        if (SIGNING_ALGS.some((alg) => !rows.some((r) => r.alg === alg && r.retired_at === null))) {
          await ensureActiveKeys(this.db, this.sealer, now);
          rows = await this.query(now);
        }
        this.loaded = { at: this.now(), rows };
        // Keys no longer published leave the per-kid maps too, so they stay as small as the key set.
        for (const map of [this.privateKeys, this.publicKeys]) {
          for (const kid of map.keys()) if (!rows.some((r) => r.kid === kid)) map.delete(kid);
        }
        return this.loaded;
      } finally {
        this.loading = null;
      }
    })();
    return this.loading.then((l) => l.rows);
  }

  private async query(now: Date): Promise<KeyRow[]> {
    const rows = await this.db.selectFrom('idp_signing_keys').selectAll()
      .where((eb) => eb.or([eb('retired_at', 'is', null), eb('not_after', '>', now)]))
      .orderBy('created_at', 'desc').execute();
    return rows as KeyRow[];
  }

  private activeFrom(rows: KeyRow[], alg: SigningAlg): ActiveKey {
    const row = rows.find((r) => r.retired_at === null && r.alg === alg);
    if (!row) throw new Error(`no active ${alg} signing key`);
    let key = this.privateKeys.get(row.kid);
    if (!key) {
      // Unsealed once per key and replica; an unseal error (changed master key) is not cached.
      const jwk = JSON.parse(row.sealed ? this.sealer.unseal(row.private_key, privateContext(row.kid)).toString('utf8') : row.private_key) as JWK;
      key = createPrivateKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' });
      this.privateKeys.set(row.kid, key);
    }
    return { kid: row.kid, alg, key };
  }

  /**
   * The active key of `alg`. While the cached key set is fresh this answers without awaiting
   * anything (the token endpoint's hot path); otherwise after reading the table.
   */
  active(alg: SigningAlg): ActiveKey | Promise<ActiveKey> {
    const rows = this.rows();
    return Array.isArray(rows) ? this.activeFrom(rows, alg) : rows.then((r) => this.activeFrom(r, alg));
  }

  /** The published key set: the active keys and retired keys until their not_after. */
  async published(): Promise<PublishedKey[]> {
    const now = this.clock.now();
    return (await this.rows())
      .filter((r) => r.retired_at === null || (r.not_after !== null && r.not_after > now))
      .map((r) => ({ kid: r.kid, alg: r.alg, jwk: r.public_jwk as JWK, active: r.retired_at === null, notAfter: r.not_after }));
  }

  /** The public key for `kid` while it is published; an unknown kid reloads the set (at most every 5 s). */
  async publicKey(kid: string | undefined): Promise<CryptoKey | null> {
    if (!kid) return null;
    let row = (await this.published()).find((k) => k.kid === kid);
    if (!row && this.now() - this.lastForcedReload > 5_000) {
      this.lastForcedReload = this.now();
      await this.rows(true);
      row = (await this.published()).find((k) => k.kid === kid);
    }
    if (!row) return null;
    let key = this.publicKeys.get(kid);
    if (!key) {
      key = importJWK(row.jwk, row.alg) as Promise<CryptoKey>;
      this.publicKeys.set(kid, key);
    }
    return key;
  }
}
