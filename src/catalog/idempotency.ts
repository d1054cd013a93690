// Idempotency-Key of the Iceberg REST specification: "no additional effects for requests that
// carry the same key". The first request with a key claims it (a row with status 0, in flight)
// before it runs; its final answer (2xx and 4xx; never 5xx) then replaces the claim and is kept
// for IDEMPOTENCY_LIFETIME, replayed when the same key comes again, so a retried commit is not
// applied twice. A request that finds the key claimed by one still running waits for that answer
// (up to IN_FLIGHT_WAIT_MS) and replays it; one still unanswered then is a 409 and runs nothing.
// A 5xx or an answer too large to keep releases the claim (the retry runs again); a claim whose
// holder died is taken over after IN_FLIGHT_STALE_MS. A key reused for another operation is 422.
import { sql } from 'kysely';
import type { Db } from '../db/index.js';

export const IDEMPOTENCY_LIFETIME_MS = 30 * 60_000;
/** How long a request waits for the answer of another one running with its key. */
export const IN_FLIGHT_WAIT_MS = 10_000;
/** A claim older than this is a holder that died (no catalog request runs that long). */
export const IN_FLIGHT_STALE_MS = 120_000;
/** Answers larger than this are not stored (the retry then runs again). */
export const MAX_STORED_BODY = 4 * 1024 * 1024;
export const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
/** `status` of a claimed key whose request has not answered yet. */
const IN_FLIGHT = 0;

export interface Stored { operation: string; status: number; body: string | null }

export async function findAnswer(db: Db, workspaceId: string, key: string, now: Date): Promise<Stored | undefined> {
  const row = await db.selectFrom('catalog_idempotency').select(['operation', 'status', sql<string | null>`body::text`.as('body')])
    .where('workspace_id', '=', workspaceId).where('key', '=', key.toLowerCase())
    .where('created_at', '>', new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS)).executeTakeFirst();
  return row;
}

/**
 * Claims `key` for a request about to run `operation`: true when this request holds it (a fresh
 * key, an expired answer or a stale claim is replaced), false when another row holds it.
 */
export async function claimKey(db: Db, workspaceId: string, key: string, operation: string, now: Date): Promise<boolean> {
  const expired = new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS);
  const stale = new Date(now.getTime() - IN_FLIGHT_STALE_MS);
  const row = await db.insertInto('catalog_idempotency')
    .values({ workspace_id: workspaceId, key: key.toLowerCase(), operation, status: IN_FLIGHT, body: null, created_at: now })
    .onConflict((oc) => oc.columns(['workspace_id', 'key']).doUpdateSet({ operation, status: IN_FLIGHT, body: null, created_at: now })
      .where((eb) => eb.or([
        eb('catalog_idempotency.created_at', '<=', expired),
        eb.and([eb('catalog_idempotency.status', '=', IN_FLIGHT), eb('catalog_idempotency.created_at', '<=', stale)]),
      ])))
    .returning('key').executeTakeFirst();
  return row !== undefined;
}

export type Lookup = { state: 'final'; answer: Stored } | { state: 'in-flight'; operation: string } | { state: 'free' };

/** The key's row: a final answer, a claim of a running request, or nothing (free to claim). */
export async function lookupKey(db: Db, workspaceId: string, key: string, now: Date): Promise<Lookup> {
  const row = await findAnswer(db, workspaceId, key, now);
  if (!row) return { state: 'free' };
  return row.status === IN_FLIGHT ? { state: 'in-flight', operation: row.operation } : { state: 'final', answer: row };
}

/** The answer for a held claim: kept when final (below 5xx, small enough), else the claim goes. */
export async function finishKey(db: Db, workspaceId: string, key: string, a: Stored, now: Date): Promise<void> {
  const k = key.toLowerCase();
  if (a.status >= 500 || (a.body !== null && a.body.length > MAX_STORED_BODY)) {
    await db.deleteFrom('catalog_idempotency').where('workspace_id', '=', workspaceId).where('key', '=', k).where('status', '=', IN_FLIGHT).execute();
    return;
  }
  await db.updateTable('catalog_idempotency').set({ status: a.status, body: a.body, created_at: now })
    .where('workspace_id', '=', workspaceId).where('key', '=', k).where('status', '=', IN_FLIGHT).execute();
  // Expired keys go a few at a time, with the writes that make new ones.
  await sql`DELETE FROM catalog_idempotency WHERE ctid IN (SELECT ctid FROM catalog_idempotency WHERE created_at < ${new Date(now.getTime() - IDEMPOTENCY_LIFETIME_MS)} LIMIT 100)`.execute(db);
}

/**
 * What a request with `key` does: `run` (it holds the claim), `replay` a final answer, or
 * `busy` (another request with the key is still running after IN_FLIGHT_WAIT_MS). A final answer
 * or claim of another operation is `conflict` (422).
 */
export async function takeKey(db: Db, workspaceId: string, key: string, operation: string, now: () => Date, sleep: (ms: number) => Promise<void>):
Promise<{ action: 'run' } | { action: 'replay'; answer: Stored } | { action: 'busy' } | { action: 'conflict' }> {
  const started = Date.now();
  for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
    const found = await lookupKey(db, workspaceId, key, now());
    if (found.state === 'final') return found.answer.operation === operation ? { action: 'replay', answer: found.answer } : { action: 'conflict' };
    if (found.state === 'in-flight' && found.operation !== operation) return { action: 'conflict' };
    if (await claimKey(db, workspaceId, key, operation, now())) return { action: 'run' };
    if (Date.now() - started >= IN_FLIGHT_WAIT_MS) return { action: 'busy' };
    await sleep(pause);
  }
}
