// Alerts and reports as a resource of a workspace (docs/alerts.md): validation, storage and views.
// Both kinds share one table; an alert has a condition, a report has content. Recipient URLs and
// the webhook signing secret are credentials (a Slack webhook URL's path is its key): they are
// stored sealed with secrets.master_key and never answered; a recipient shows as its origin.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { Services } from '../services.js';
import { auditActor, type Actor } from '../access/actor.js';
import type { Db } from '../db/index.js';
import { recordGovernance } from '../audit/governance.js';
import type { AutomationKind, AutomationRow } from '../db/automation-types.js';
import { badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { parseCron } from '../workflows/trigger-validation.js';
import { MAX_SQL_BYTES } from '../queries/run.js';
import { OPS } from './conditions.js';
import { newSigningSecret } from './signing.js';
import { checkTarget, createGate, MAX_URL_LENGTH, type Gate } from './outbound.js';

export const MAX_RECIPIENTS = 10;
export const MAX_GRACE_SECS = 30 * 86_400;

export const recipientInput = z.object({
  type: z.enum(['webhook', 'slack']),
  url: z.string().min(1).max(MAX_URL_LENGTH),
});
export const conditionInput = z.discriminatedUnion('type', [
  z.object({ type: z.literal('row_count'), op: z.enum(OPS), threshold: z.number().finite() }),
  z.object({ type: z.literal('value'), op: z.enum(OPS), threshold: z.number().finite(), column: z.string().min(1).max(255).optional() }),
]);
export const contentInput = z.discriminatedUnion('type', [
  z.object({ type: z.literal('csv') }),
  z.object({ type: z.literal('table') }),
  // A page of the UI or a data app, below automation.public_url, rendered by the renderer.
  z.object({ type: z.literal('screenshot'), path: z.string().regex(/^\/[^\s\\]*$/, 'must be a path starting with /').max(1024) }),
]);

const common = {
  name: z.string().min(1).max(128),
  description: z.string().max(2000).optional(),
  engine: z.string().min(1).max(63),
  cron: z.string().min(1).max(128),
  timezone: z.string().min(1).max(64).optional(),
  grace_secs: z.number().int().min(0).max(MAX_GRACE_SECS).optional(),
  recipients: z.array(recipientInput).min(1).max(MAX_RECIPIENTS),
  enabled: z.boolean().optional(),
};
export const alertInput = z.object({ ...common, sql: z.string().min(1), condition: conditionInput });
export const reportInput = z.object({ ...common, sql: z.string().optional(), content: contentInput });
export type AlertInput = z.infer<typeof alertInput>;
export type ReportInput = z.infer<typeof reportInput>;
export type AutomationInput = (AlertInput & { kind: 'alert' }) | (ReportInput & { kind: 'report' });
export type Recipient = z.infer<typeof recipientInput>;
/** An update may leave recipients out (they are kept). */
export type AutomationUpdate =
  | (Omit<AlertInput, 'recipients'> & { kind: 'alert'; recipients?: Recipient[] })
  | (Omit<ReportInput, 'recipients'> & { kind: 'report'; recipients?: Recipient[] });

/** A recipient as stored: the origin in clear (for views and the delivery log), the URL sealed. */
export interface StoredRecipient { type: Recipient['type']; target: string; url_sealed: string }

const gates = new WeakMap<Services['config'], Gate>();
/** The SSRF gate of this configuration (one per config object). */
export function gateOf(services: Services): Gate {
  let g = gates.get(services.config);
  if (!g) { g = createGate(services.config.automation.webhook_allow_hosts); gates.set(services.config, g); }
  return g;
}

const urlContext = (id: string, i: number) => `automations:${id}:recipients:${i}`;
const secretContext = (id: string) => `automations:${id}:signing_secret`;

export function unsealRecipientUrl(services: Services, a: Pick<AutomationRow, 'id' | 'recipients'>, i: number): string {
  const r = (a.recipients as StoredRecipient[])[i];
  if (!r) throw notFound(`recipient ${i} does not exist`);
  return services.sealer.unseal(r.url_sealed, urlContext(a.id, i)).toString('utf8');
}
export function unsealSigningSecret(services: Services, a: Pick<AutomationRow, 'id' | 'signing_secret'>): string {
  return services.sealer.unseal(a.signing_secret, secretContext(a.id)).toString('utf8');
}

function requireSealer(services: Services): void {
  if (!services.sealer.enabled) {
    throw badRequest('secrets.master_key is not set: alerts and reports keep their recipient URLs and signing secret sealed with it');
  }
}

/** The checks of a save beyond the schema: SQL size, cron and time zone, and the SSRF gate on every recipient. */
async function validate(services: Services, input: AutomationInput): Promise<void> {
  const sql = input.sql ?? '';
  if (Buffer.byteLength(sql) > MAX_SQL_BYTES) throw badRequest(`sql is longer than ${MAX_SQL_BYTES} bytes`);
  if (input.kind === 'report' && input.content.type !== 'screenshot' && sql.trim() === '') throw badRequest(`a ${input.content.type} report needs sql`);
  const cron = parseCron(input.cron, input.timezone ?? 'UTC');
  if (typeof cron === 'string') throw badRequest(cron);
  for (const r of input.recipients) await checkTarget(gateOf(services), r.url);
}

function sealRecipients(services: Services, id: string, recipients: Recipient[]): StoredRecipient[] {
  return recipients.map((r, i) => ({ type: r.type, target: new URL(r.url).origin, url_sealed: services.sealer.seal(r.url, urlContext(id, i)) }));
}

function nextFire(cronExpr: string, timezone: string, now: Date): Date | null {
  const c = parseCron(cronExpr, timezone);
  return typeof c === 'string' ? null : c.nextRun(now);
}

/** The governance record of an alert or report change (issue 28: creating one was not audited). */
async function recordChange(tx: Db, actor: Actor, slug: string | undefined, what: 'create' | 'update' | 'delete', row: { kind: string; name: string; id: string }): Promise<void> {
  if (slug) await recordGovernance(tx, { action: `${row.kind}.${what}`, ...auditActor(actor), target: `${row.kind}:${row.name}`, workspace: slug, details: { id: row.id } });
}

export async function createAutomation(services: Services, actor: Actor, workspaceId: string, input: AutomationInput, slug?: string): Promise<{ row: AutomationRow; signingSecret: string }> {
  requireSealer(services);
  await validate(services, input);
  const id = randomUUID();
  const secret = newSigningSecret();
  const tz = input.timezone ?? 'UTC';
  const now = services.clock.now();
  try {
    const row = await services.db.transaction().execute(async (tx) => {
      const r = await tx.insertInto('automations').values({
      id, workspace_id: workspaceId, kind: input.kind, name: input.name, description: input.description ?? '',
      engine: input.engine, sql: input.sql ?? '',
      spec: JSON.stringify(input.kind === 'alert' ? input.condition : input.content),
      cron: input.cron, timezone: tz, grace_secs: input.grace_secs ?? 3600,
      recipients: JSON.stringify(sealRecipients(services, id, input.recipients)),
      signing_secret: services.sealer.seal(secret, secretContext(id)),
      enabled: input.enabled ?? true, state_since: now,
      next_fire_at: (input.enabled ?? true) ? nextFire(input.cron, tz, now) : null,
      created_by: actor.id, run_as: actor.id, created_at: now, updated_at: now,
      }).returningAll().executeTakeFirstOrThrow();
      await recordChange(tx, actor, slug, 'create', r);
      return r;
    });
    return { row, signingSecret: secret };
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`${input.kind} already exists: ${input.name}`);
    throw err;
  }
}

export async function getAutomation(services: Services, workspaceId: string, kind: AutomationKind, id: string): Promise<AutomationRow> {
  const row = /^[0-9a-f-]{36}$/i.test(id)
    ? await services.db.selectFrom('automations').selectAll().where('id', '=', id).where('workspace_id', '=', workspaceId).where('kind', '=', kind).executeTakeFirst()
    : undefined;
  if (!row) throw notFound(`${kind} does not exist: ${id}`);
  return row;
}

export function listAutomations(services: Services, workspaceId: string, kind: AutomationKind): Promise<AutomationRow[]> {
  return services.db.selectFrom('automations').selectAll().where('workspace_id', '=', workspaceId).where('kind', '=', kind).orderBy('name').limit(1000).execute();
}

/**
 * Whether an update sets what an alert or report produces (condition or content, SQL, engine) or
 * where it goes (recipients, which a PUT carries only when they are set anew): then it runs as the
 * person who made the update from now on (docs/alerts.md "Who a report renders as").
 */
export function rebinds(existing: Pick<AutomationRow, 'spec' | 'sql' | 'engine'>, input: AutomationUpdate): boolean {
  const spec = input.kind === 'alert' ? input.condition : input.content;
  return input.recipients !== undefined || !isDeepStrictEqual(existing.spec, spec) || existing.sql !== (input.sql ?? '') || existing.engine !== input.engine;
}

/**
 * Replaces an alert or report. Recipients may be left out to keep the stored ones (their URLs are
 * never answered, so a client cannot send them back). A changed schedule starts from now; a
 * changed content or recipients re-binds it to `actor` (rebinds).
 */
export async function updateAutomation(services: Services, actor: Actor, existing: AutomationRow, input: AutomationUpdate, workspace?: string): Promise<AutomationRow> {
  requireSealer(services);
  await validate(services, { ...input, recipients: input.recipients ?? [] } as AutomationInput);
  const tz = input.timezone ?? 'UTC';
  const enabled = input.enabled ?? true;
  const now = services.clock.now();
  const scheduleChanged = existing.cron !== input.cron || existing.timezone !== tz || existing.enabled !== enabled;
  try {
    return await services.db.transaction().execute(async (tx) => {
      const r = await tx.updateTable('automations').set({
      ...(rebinds(existing, input) ? { run_as: actor.id } : {}),
      name: input.name, description: input.description ?? '', engine: input.engine, sql: input.sql ?? '',
      spec: JSON.stringify(input.kind === 'alert' ? input.condition : input.content),
      cron: input.cron, timezone: tz, grace_secs: input.grace_secs ?? 3600, enabled,
      ...(input.recipients ? { recipients: JSON.stringify(sealRecipients(services, existing.id, input.recipients)) } : {}),
      ...(scheduleChanged ? { next_fire_at: enabled ? nextFire(input.cron, tz, now) : null, last_fired_at: null } : {}),
      updated_at: now,
      }).where('id', '=', existing.id).returningAll().executeTakeFirstOrThrow();
      await recordChange(tx, actor, workspace, 'update', r);
      return r;
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict(`${input.kind} already exists: ${input.name}`);
    throw err;
  }
}

export async function deleteAutomation(services: Services, row: AutomationRow, audit?: { actor: Actor; workspace: string }): Promise<void> {
  await services.db.transaction().execute(async (tx) => {
    await tx.deleteFrom('automations').where('id', '=', row.id).execute();
    if (audit) await recordChange(tx, audit.actor, audit.workspace, 'delete', row);
  });
}

/** A new signing secret (the old one stops verifying at once); answered once. */
export async function rotateSigningSecret(services: Services, row: AutomationRow): Promise<string> {
  requireSealer(services);
  const secret = newSigningSecret();
  await services.db.updateTable('automations').set({ signing_secret: services.sealer.seal(secret, secretContext(row.id)), updated_at: services.clock.now() })
    .where('id', '=', row.id).execute();
  return secret;
}

/** Base of notification links: automation.browser_url, else automation.public_url. */
export function linkBase(config: Services['config']): string {
  return (config.automation.browser_url || config.automation.public_url).replace(/\/+$/, '');
}

export function linkOf(config: Services['config'], workspaceSlug: string, row: Pick<AutomationRow, 'kind' | 'id'>): string {
  return `${linkBase(config)}/#/workspaces/${encodeURIComponent(workspaceSlug)}/${row.kind}s/${row.id}`;
}

/** The view answered by the API: no sealed value, recipients as their origins. */
export function automationView(row: AutomationRow, workspaceSlug: string, config: Services['config']) {
  const iso = (d: Date | null) => (d ? d.toISOString() : null);
  return {
    id: row.id, kind: row.kind, name: row.name, description: row.description, engine: row.engine, sql: row.sql,
    ...(row.kind === 'alert' ? { condition: row.spec } : { content: row.spec }),
    cron: row.cron, timezone: row.timezone, grace_secs: row.grace_secs, enabled: row.enabled,
    recipients: (row.recipients as StoredRecipient[]).map((r) => ({ type: r.type, target: r.target })),
    state: row.state, state_since: row.state_since.toISOString(), last_notified_at: iso(row.last_notified_at),
    last_evaluated_at: iso(row.last_evaluated_at), next_fire_at: iso(row.next_fire_at),
    link: linkOf(config, workspaceSlug, row),
    created_at: row.created_at.toISOString(), updated_at: row.updated_at.toISOString(),
  };
}
