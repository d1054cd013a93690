// Idempotency-Key of the Iceberg REST specification: the final answer (2xx and 4xx; never 5xx) of
// a mutation is kept for IDEMPOTENCY_LIFETIME and replayed when the same key comes again, so a
// retried commit is not applied twice. A key reused for another operation is refused (422).
// Two requests racing with the same key both run (the second one's answer is not stored).
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export const IDEMPOTENCY_LIFETIME_MS = 30 * 60_000;
/** Answers larger than this are not stored (the retry then runs again). */
export const MAX_STORED_BODY = 4 * 1024 * 1024;
export const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export interface Stored { operation: string; status: number; body: string | null }

export async function findAnswer(db: Db, workspaceId: string, key: string, now: Date): Promise<Stored | undefined> {
  const row = await db.selectFrom('catalog_idempotency').select(['operation', 'status', sql<string | null>`body::text`.as('body')])
    .where('workspace_id', '=', workspaceId).where('key', '=', key.toLowerCase())
    .where('created_at', '>', new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS)).executeTakeFirst();
  return row;
}

export async function storeAnswer(db: Db, workspaceId: string, key: string, a: Stored, now: Date): Promise<void> {
  if (a.body !== null && a.body.length > MAX_STORED_BODY) return;
  await db.insertInto('catalog_idempotency').values({ workspace_id: workspaceId, key: key.toLowerCase(), operation: a.operation, status: a.status, body: a.body, created_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'key']).doUpdateSet({ operation: a.operation, status: a.status, body: a.body, created_at: now })
      .where('catalog_idempotency.created_at', '<=', new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS)))
    .execute();
  // Expired keys go a few at a time, with the writes that make new ones.
  await sql`DELETE FROM catalog_idempotency WHERE ctid IN (SELECT ctid FROM catalog_idempotency WHERE created_at < ${new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS)} LIMIT 100)`.execute(db);
}
