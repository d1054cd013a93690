// Database and storage connections of a workspace (table connections). The non-secret settings
// are plain JSON; the secret (a password, or a map such as {access_key, secret_key}) is sealed
// with secrets.master_key, bound to its row, and never returned by the API. Registering a secret
// without a master key fails with a 400 naming the key.
import type { Db } from '../db/index.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { findWorkspace } from '../workspaces/workspaces.js';
import type { Sealer } from './seal.js';
import type { Actor } from '../access/actor.js';

export type ConnectionKind = 'database' | 'storage';
export type ConnectionSecret = string | Record<string, string>;

export const CONNECTION_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Keys of `config` that look like credentials (with a string value): they belong in `secret`. */
const SECRET_LIKE = /(pass(word|wd)?|secret|token|private[_-]?key|credential|api[_-]?key)/i;

export interface ConnectionView {
  name: string;
  kind: ConnectionKind;
  config: Record<string, unknown>;
  has_secret: boolean;
  created_at: Date;
}

export interface ConnectionInput {
  name: string;
  kind: ConnectionKind;
  config?: Record<string, unknown>;
  secret?: ConnectionSecret;
}

/** The additional authenticated data of a connection's secret: table, row and column. */
export function connectionSecretContext(workspaceId: string, name: string): string {
  return `connections:${workspaceId}:${name}:secret`;
}

async function workspaceId(db: Db, slug: string): Promise<string> {
  const ws = await findWorkspace(db, slug);
  if (!ws) throw notFound(`workspace does not exist: ${slug}`);
  return ws.id;
}

function secretLikeKeys(config: Record<string, unknown>, prefix = ''): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(config)) {
    if (SECRET_LIKE.test(k) && typeof v === 'string' && v !== '') out.push(prefix + k);
    if (v && typeof v === 'object' && !Array.isArray(v)) out.push(...secretLikeKeys(v as Record<string, unknown>, `${prefix}${k}.`));
  }
  return out;
}

const view = (r: { name: string; kind: ConnectionKind; config: Record<string, unknown>; secret_sealed: string | null; created_at: Date }): ConnectionView =>
  ({ name: r.name, kind: r.kind, config: r.config, has_secret: r.secret_sealed !== null, created_at: r.created_at });

export async function listConnections(db: Db, slug: string): Promise<ConnectionView[]> {
  const wsId = await workspaceId(db, slug);
  const rows = await db.selectFrom('connections').select(['name', 'kind', 'config', 'secret_sealed', 'created_at'])
    .where('workspace_id', '=', wsId).orderBy('name').execute();
  return rows.map(view);
}

export async function getConnection(db: Db, slug: string, name: string): Promise<ConnectionView> {
  const wsId = await workspaceId(db, slug);
  const r = await db.selectFrom('connections').select(['name', 'kind', 'config', 'secret_sealed', 'created_at'])
    .where('workspace_id', '=', wsId).where('name', '=', name).executeTakeFirst();
  if (!r) throw notFound(`connection does not exist: ${name}`);
  return view(r);
}

export async function createConnection(db: Db, sealer: Sealer, actor: Actor, slug: string, input: ConnectionInput): Promise<ConnectionView> {
  if (!CONNECTION_NAME_RE.test(input.name)) {
    throw badRequest(`invalid connection name "${input.name}": use 1-63 lower-case letters, digits, '_' and '-', starting with a letter or digit`);
  }
  const config = input.config ?? {};
  const leaked = secretLikeKeys(config);
  if (leaked.length) throw badRequest(`config key ${leaked[0]} looks like a credential: put credentials in "secret", which is stored sealed`);
  const hasSecret = input.secret !== undefined && !(typeof input.secret === 'string' && input.secret === '');
  if (hasSecret && !sealer.enabled) throw badRequest('secrets.master_key is not set: cannot store a connection secret');
  return db.transaction().execute(async (tx) => {
    const wsId = await workspaceId(tx, slug);
    const sealed = hasSecret ? sealer.seal(JSON.stringify(input.secret), connectionSecretContext(wsId, input.name)) : null;
    try {
      const r = await tx.insertInto('connections').values({
        workspace_id: wsId, name: input.name, kind: input.kind, config: JSON.stringify(config), secret_sealed: sealed, created_by: actor.id,
      }).returning(['name', 'kind', 'config', 'secret_sealed', 'created_at']).executeTakeFirstOrThrow();
      await recordGovernance(tx, {
        action: 'connection.create', actorId: actor.id, actor: actor.email, target: `connection:${input.name}`, workspace: slug,
        details: { kind: input.kind, has_secret: hasSecret, sealed_with: sealer.keyId && hasSecret ? sealer.keyId : null },
      });
      return view(r);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`connection already exists: ${input.name}`);
      throw err;
    }
  });
}

export async function deleteConnection(db: Db, actor: Actor, slug: string, name: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const wsId = await workspaceId(tx, slug);
    const res = await tx.deleteFrom('connections').where('workspace_id', '=', wsId).where('name', '=', name).executeTakeFirst();
    if (Number(res.numDeletedRows) === 0) throw notFound(`connection does not exist: ${name}`);
    await recordGovernance(tx, { action: 'connection.delete', actorId: actor.id, actor: actor.email, target: `connection:${name}`, workspace: slug });
  });
}

/**
 * The plaintext secret of a connection, for the components that connect with it (never for an
 * API answer). Null when the connection has none; UnsealError (503) when the configured master
 * key is not the one that sealed it.
 */
export async function readConnectionSecret(db: Db, sealer: Sealer, slug: string, name: string): Promise<ConnectionSecret | null> {
  const wsId = await workspaceId(db, slug);
  const r = await db.selectFrom('connections').select('secret_sealed').where('workspace_id', '=', wsId).where('name', '=', name).executeTakeFirst();
  if (!r) throw notFound(`connection does not exist: ${name}`);
  if (r.secret_sealed === null) return null;
  return JSON.parse(sealer.unseal(r.secret_sealed, connectionSecretContext(wsId, name)).toString('utf8')) as ConnectionSecret;
}
