// OAuth clients of the machine identity provider (table oauth_clients), managed by a
// platform_admin through /api/clients or `svc client ...`.
// - client_id: `svc-` and 16 random bytes (base64url); client_secret: `svcs_` and 32 random bytes
//   (base64url). The secret is shown once and stored only as SHA-256: with 256 bits of entropy a
//   fast hash is as strong as a slow one (no dictionary to search), and it keeps the token
//   endpoint cheap. Comparison is constant time.
// - Each client has allowed audiences (at least one), optional allowed scopes (none: any
//   well-formed scope), grant types (client_credentials by default; token exchange is opt-in
//   because it lets the client act for people), an optional workspace, and the algorithm its
//   tokens are signed with (ES256 by default; RS256 for engines whose JWT libraries expect it).
// - Changes are governance events, recorded in the same transaction.
// - The token endpoint reads clients through a short cache (CLIENT_CACHE_MS); rotating a secret or
//   deleting a client invalidates it here and on every replica (src/util/invalidation.ts),
//   whether the change comes from the API or the command line.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Db } from '../db/index.js';
import { TtlCache } from '../util/ttl-cache.js';
import { sha256 } from '../util/sha256.js';
import type { ChangeDeps } from '../util/invalidation.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { findWorkspace } from '../workspaces/workspaces.js';
import { auditActor, type Actor } from '../access/actor.js';
import { DEFAULT_SIGNING_ALG, isSigningAlg, SIGNING_ALGS, type SigningAlg } from './keys.js';

export const GRANT_CLIENT_CREDENTIALS = 'client_credentials';
export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const GRANT_TYPES = [GRANT_CLIENT_CREDENTIALS, GRANT_TOKEN_EXCHANGE] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

export const CLIENT_SECRET_PREFIX = 'svcs_';

export { CLI_ACTOR } from '../access/actor.js';

export interface ClientView {
  client_id: string;
  name: string;
  audiences: string[];
  scopes: string[];
  grant_types: string[];
  workspace: string | null;
  token_signing_alg: SigningAlg;
  created_at: Date;
  secret_rotated_at: Date;
}

export interface ClientInput {
  name: string;
  audiences: string[];
  scopes?: string[];
  grant_types?: string[];
  workspace?: string | null;
  /** ES256 (default) or RS256. */
  token_signing_alg?: string;
}

/** RFC 6749 3.3 scope-token: %x21 / %x23-5B / %x5D-7E. */
export const SCOPE_TOKEN_RE = /^[\x21\x23-\x5B\x5D-\x7E]+$/;
const AUDIENCE_RE = /^[\x21-\x7E]{1,255}$/;

export function hashSecret(secret: string): Buffer {
  return sha256(secret);
}

export function newClientSecret(): string {
  return CLIENT_SECRET_PREFIX + randomBytes(32).toString('base64url');
}

function newClientId(): string {
  return 'svc-' + randomBytes(16).toString('base64url');
}

function validate(input: ClientInput): { name: string; audiences: string[]; scopes: string[]; grant_types: string[]; token_signing_alg: SigningAlg } {
  const name = input.name.trim();
  if (!name || name.length > 255) throw badRequest('client name must be 1-255 characters');
  const audiences = [...new Set(input.audiences.map((a) => a.trim()))];
  if (audiences.length === 0) throw badRequest('a client needs at least one audience');
  for (const a of audiences) if (!AUDIENCE_RE.test(a)) throw badRequest(`invalid audience ${JSON.stringify(a)}: 1-255 printable characters, no spaces`);
  const scopes = [...new Set(input.scopes ?? [])];
  for (const s of scopes) if (!SCOPE_TOKEN_RE.test(s)) throw badRequest(`invalid scope ${JSON.stringify(s)}: RFC 6749 scope tokens have no spaces, quotes or backslashes`);
  const grant_types = [...new Set(input.grant_types ?? [GRANT_CLIENT_CREDENTIALS])];
  if (grant_types.length === 0) throw badRequest('a client needs at least one grant type');
  for (const g of grant_types) if (!(GRANT_TYPES as readonly string[]).includes(g)) throw badRequest(`unsupported grant type ${JSON.stringify(g)}: use ${GRANT_TYPES.join(' or ')}`);
  const alg = input.token_signing_alg ?? DEFAULT_SIGNING_ALG;
  if (!isSigningAlg(alg)) throw badRequest(`unsupported token signing algorithm ${JSON.stringify(alg)}: use ${SIGNING_ALGS.join(' or ')}`);
  return { name, audiences, scopes, grant_types, token_signing_alg: alg };
}

function baseQuery(db: Db) {
  return db.selectFrom('oauth_clients as c').leftJoin('workspaces as w', 'w.id', 'c.workspace_id')
    .select(['c.client_id', 'c.name', 'c.audiences', 'c.scopes', 'c.grant_types', 'w.slug as workspace', 'c.token_signing_alg', 'c.created_at', 'c.secret_rotated_at']);
}

const asView = <T extends { token_signing_alg: string }>(c: T) => ({ ...c, token_signing_alg: isSigningAlg(c.token_signing_alg) ? c.token_signing_alg : DEFAULT_SIGNING_ALG });

export async function listClients(db: Db): Promise<ClientView[]> {
  return (await baseQuery(db).orderBy('c.created_at').orderBy('c.client_id').execute()).map(asView);
}

export async function getClient(db: Db, clientId: string): Promise<ClientView> {
  const c = await baseQuery(db).where('c.client_id', '=', clientId).executeTakeFirst();
  if (!c) throw notFound(`client does not exist: ${clientId}`);
  return asView(c);
}

/** Creates a client; the secret is returned this once. */
export async function createClient(db: Db, actor: Actor, input: ClientInput): Promise<ClientView & { client_secret: string }> {
  const v = validate(input);
  const secret = newClientSecret();
  return db.transaction().execute(async (tx) => {
    let workspaceId: string | null = null;
    if (input.workspace) {
      const ws = await findWorkspace(tx, input.workspace);
      if (!ws) throw notFound(`workspace does not exist: ${input.workspace}`);
      workspaceId = ws.id;
    }
    const clientId = newClientId();
    try {
      await tx.insertInto('oauth_clients').values({
        client_id: clientId, name: v.name, secret_hash: hashSecret(secret), audiences: v.audiences, scopes: v.scopes,
        grant_types: v.grant_types, workspace_id: workspaceId, created_by: actor.id, token_signing_alg: v.token_signing_alg,
      }).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('client id collision; try again');
      throw err;
    }
    await recordGovernance(tx, {
      action: 'client.create', ...auditActor(actor), target: `client:${clientId}`,
      workspace: input.workspace ?? null,
      details: { name: v.name, audiences: v.audiences, scopes: v.scopes, grant_types: v.grant_types, token_signing_alg: v.token_signing_alg },
    });
    return { ...(await getClient(tx, clientId)), client_secret: secret };
  });
}

/** Replaces the secret (the old one stops working at once, on every replica); the new one is returned this once. */
export async function rotateClientSecret(deps: ChangeDeps, actor: Actor, clientId: string): Promise<ClientView & { client_secret: string }> {
  const secret = newClientSecret();
  const c = await deps.db.transaction().execute(async (tx) => {
    const row = await tx.updateTable('oauth_clients').set({ secret_hash: hashSecret(secret), secret_rotated_at: deps.clock.now() })
      .where('client_id', '=', clientId).returning('client_id').executeTakeFirst();
    if (!row) throw notFound(`client does not exist: ${clientId}`);
    const c = await getClient(tx, clientId);
    await recordGovernance(tx, { action: 'client.rotate', ...auditActor(actor), target: `client:${clientId}`, workspace: c.workspace });
    return c;
  });
  await deps.invalidator.invalidate('client', [clientId]);
  return { ...c, client_secret: secret };
}

export async function deleteClient(deps: ChangeDeps, actor: Actor, clientId: string): Promise<void> {
  await deps.db.transaction().execute(async (tx) => {
    const c = await getClient(tx, clientId);
    await tx.deleteFrom('oauth_clients').where('client_id', '=', clientId).execute();
    await recordGovernance(tx, { action: 'client.delete', ...auditActor(actor), target: `client:${clientId}`, workspace: c.workspace, details: { name: c.name } });
  });
  await deps.invalidator.invalidate('client', [clientId]);
}

/** How long a replica answers the token endpoint from a cached client row (invalidation clears it sooner). */
export const CLIENT_CACHE_MS = 5_000;
const CLIENT_CACHE_MAX = 10_000;
const CLIENT_CACHE_BYTES = 8 * 1024 * 1024;

interface ClientRow { client: ClientView; secretHash: Buffer }

const rowBytes = (id: string, r: ClientRow) => 256 + 2 * (id.length + r.client.name.length
  + [...r.client.audiences, ...r.client.scopes, ...r.client.grant_types].reduce((n, x) => n + x.length + 16, 0) + (r.client.workspace?.length ?? 0));

/** Clients as the token endpoint last read them (known clients only), bounded in count and bytes. */
export class ClientCache {
  private readonly cache: TtlCache<string, ClientRow>;
  constructor(now: () => number) {
    this.cache = new TtlCache(CLIENT_CACHE_MAX, CLIENT_CACHE_MS, now, { max: CLIENT_CACHE_BYTES, sizeOf: rowBytes });
  }
  get(id: string): ClientRow | undefined { return this.cache.get(id); }
  set(id: string, row: ClientRow): void { this.cache.set(id, row); }
  forget(ids: string[]): void { for (const id of ids) this.cache.delete(id); }
}

// Compared when the client id is unknown, so both answers take the same time.
const DUMMY_HASH = hashSecret('svc-no-such-client');

async function readClient(db: Db, clientId: string): Promise<ClientRow | undefined> {
  if (clientId.length > 128) return undefined;
  const row = await db.selectFrom('oauth_clients as c').leftJoin('workspaces as w', 'w.id', 'c.workspace_id')
    .select(['c.client_id', 'c.name', 'c.audiences', 'c.scopes', 'c.grant_types', 'w.slug as workspace', 'c.token_signing_alg', 'c.created_at', 'c.secret_rotated_at', 'c.secret_hash'])
    .where('c.client_id', '=', clientId).executeTakeFirst();
  if (!row) return undefined;
  const { secret_hash: secretHash, ...client } = row;
  return { client: asView(client), secretHash };
}

/**
 * The client when the presented secret (a string, or its SHA-256 from hashSecret) is its current
 * secret, else null. The SHA-256 is compared with the stored one in constant time, also for an
 * unknown id (against a dummy hash). With `cache`, a client read within CLIENT_CACHE_MS is not
 * read again.
 */
export async function authenticateClient(db: Db, clientId: string, secret: string | Buffer, cache?: ClientCache): Promise<ClientView | null> {
  const cached = cache?.get(clientId);
  const row = cached ?? await readClient(db, clientId);
  if (row && !cached) cache?.set(clientId, row);
  const presented = typeof secret === 'string' ? hashSecret(secret) : secret;
  const ok = timingSafeEqual(presented, row?.secretHash ?? DUMMY_HASH) && row !== undefined;
  return ok && row ? row.client : null;
}
