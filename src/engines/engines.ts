// Engines of a workspace: the records the API keeps. The API only records what is wanted and
// enqueues a job; the engines worker (src/engines/worker.ts) does the provisioning.
import { sql } from 'kysely';
import type { Services } from '../services.js';
import type { Db } from '../db/index.js';
import type { EngineKind, EngineResources, EngineRow } from '../db/engine-types.js';
import { idpIssuer } from '../config/index.js';
import { DependencyUnavailable, DomainError, badRequest, conflict, isUniqueViolation, notFound } from '../errors.js';
import { QUEUES, jobOptions } from '../queue/queues.js';
import type { Actor } from '../access/actor.js';
import { createClient, deleteClient } from '../idp/clients.js';
import { chooseProvisioner, type ProvisionerChoice } from './choice.js';
import { ImageError, imageAllowed, resolveImage, type ResolvedImage } from './images.js';
import { requestTransition, type EngineRequest } from './states.js';

export const ENGINE_NAME_RE = /^[a-z][a-z0-9-]{0,39}$/;
export const MAX_ENGINES_PER_WORKSPACE = 50;
export const DEFAULT_RESOURCES: EngineResources = { cpu: '2', memory: '4Gi' };
const CPU_RE = /^(?:\d{1,3}(?:\.\d{1,3})?|\d{1,6}m)$/;
const MEMORY_RE = /^\d{1,6}(?:Mi|Gi)$/;

export interface EngineInput { name: string; kind: EngineKind; version?: string; image?: string; resources?: Partial<EngineResources> }

/** A refusal of the spec's errors table: `disabled` and `refused` are their codes. */
export class EngineRefusal extends DomainError {
  constructor(readonly reason: 'disabled' | 'refused', message: string) {
    super(reason, message);
  }
}

/** The provisioner of this process (cached per Services: the environment does not change). */
const choices = new WeakMap<Services, ProvisionerChoice>();
export function provisionerOf(s: Services): ProvisionerChoice {
  let c = choices.get(s);
  if (!c) { c = chooseProvisioner(s.config, process.env); choices.set(s, c); }
  return c;
}
/** Tests and `svc` commands that know better set the choice (e.g. a test cluster config). */
export function setProvisionerChoice(s: Services, c: ProvisionerChoice): void { choices.set(s, c); }

/** How engines reach this service: local containers use engines.local_container.callback_url; pods, catalog.public_url. */
export function callbackUrl(s: Services, provisioner: 'cluster' | 'local_container'): string | undefined {
  const url = provisioner === 'local_container' ? s.config.engines.local_container.callback_url : s.config.catalog.public_url;
  return url ? url.replace(/\/+$/, '') : undefined;
}

/** Whether a URL names this machine's loopback (localhost, 127.0.0.0/8, ::1). */
export function isLoopback(url: string): boolean {
  let host: string;
  try { host = new URL(url).hostname.toLowerCase(); } catch { return false; }
  return host === 'localhost' || host.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';
}

/** Checks what create and explain both check; returns the image and resources to use. */
export function checkInput(s: Services, input: EngineInput): { provisioner: 'cluster' | 'local_container'; image: ResolvedImage; resources: EngineResources } {
  const choice = provisionerOf(s);
  if (choice.provisioner === 'none') throw new EngineRefusal('disabled', `engines are disabled: ${choice.reason}; set engines.provisioner to cluster or local_container`);
  if (!ENGINE_NAME_RE.test(input.name)) throw badRequest('engine name must be 1-40 characters: a lower-case letter, then lower-case letters, digits and -');
  let image: ResolvedImage;
  try {
    image = resolveImage(input.kind, { version: input.version, image: input.image });
  } catch (err) {
    if (err instanceof ImageError) throw new EngineRefusal('refused', err.message);
    throw err;
  }
  if (choice.provisioner === 'local_container' && !imageAllowed(image.repository, s.config.engines.local_container.allowed_images)) {
    throw new EngineRefusal('refused', `image repository ${image.repository} is not in engines.local_container.allowed_images`);
  }
  const callback = callbackUrl(s, choice.provisioner);
  const [key, who] = choice.provisioner === 'local_container' ? ['engines.local_container.callback_url', 'containers'] : ['catalog.public_url', 'pods'];
  if (!callback) throw new EngineRefusal('disabled', `${key} is unset: engine ${who} could not reach this service`);
  // catalog.public_url defaults to http://localhost:8080: inside a pod or a container that is the
  // engine itself, so an engine wired to it would fail at its first catalog call
  if (isLoopback(callback)) throw new EngineRefusal('disabled', `${key} is ${callback}, a loopback address: engine ${who} could not reach this service; set it to this service's address as they see it`);
  const resources = { ...DEFAULT_RESOURCES, ...input.resources };
  if (!CPU_RE.test(resources.cpu)) throw badRequest('resources.cpu must be cores (2, 0.5) or millicores (500m)');
  if (!MEMORY_RE.test(resources.memory)) throw badRequest('resources.memory must be Mi or Gi (4Gi, 512Mi)');
  return { provisioner: choice.provisioner, image, resources };
}

/** Queues a transition; idempotent by id: one job per change of what is wanted (and per retry `tag`). */
export async function enqueueEngine(s: Services, id: string, generation: number, tag?: string): Promise<void> {
  await s.queues.get(QUEUES.engines).add('transition', { engineId: id }, jobOptions(QUEUES.engines, { jobId: `${id}-g${generation}${tag ? `-${tag}` : ''}` }));
}

export async function createEngine(s: Services, actor: Actor, ws: { id: string; slug: string }, input: EngineInput): Promise<EngineRow> {
  const { provisioner, image, resources } = checkInput(s, input);
  if (!s.sealer.enabled) throw new EngineRefusal('disabled', 'secrets.master_key is not set: each engine\'s OAuth client secret is kept sealed');
  const count = await s.db.selectFrom('engines').select(sql<number>`count(*)::int`.as('n')).where('workspace_id', '=', ws.id).executeTakeFirstOrThrow();
  if (count.n >= MAX_ENGINES_PER_WORKSPACE) throw conflict(`a workspace has at most ${MAX_ENGINES_PER_WORKSPACE} engines`);
  if (await s.db.selectFrom('engines').select('id').where('workspace_id', '=', ws.id).where('name', '=', input.name).executeTakeFirst()) {
    throw conflict(`engine already exists: ${input.name}`);
  }
  // The engine's own OAuth client of the machine IdP, bound to the workspace.
  const client = await createClient(s.db, actor, {
    name: `engine ${ws.slug}/${input.name}`, audiences: [s.config.oidc.catalog_audience], workspace: ws.slug,
    grant_types: ['client_credentials'],
  });
  try {
    const row = await s.db.insertInto('engines').values({
      workspace_id: ws.id, name: input.name, kind: input.kind, version: image.version, image: image.image,
      resources: JSON.stringify(resources), provisioner, state: 'provisioning', desired: 'running', config_hash: '',
      oauth_client_id: client.client_id, client_secret_sealed: s.sealer.seal(client.client_secret, `engine-client:${client.client_id}`),
      idp_issuer: idpIssuer(s.config), created_by: actor.id, state_changed_at: s.clock.now(),
    }).returningAll().executeTakeFirstOrThrow();
    await enqueueForRequest(s, row.id, row.generation);
    return row;
  } catch (err) {
    await deleteClient({ db: s.db, invalidator: s.invalidator, clock: s.clock }, actor, client.client_id)
      .catch((e: Error) => s.log.warn({ err: e.message, client: client.client_id }, 'engine create failed and its OAuth client could not be removed'));
    if (isUniqueViolation(err)) throw conflict(`engine already exists: ${input.name}`);
    throw err;
  }
}

export async function listEngines(db: Db, workspaceId: string): Promise<EngineRow[]> {
  return db.selectFrom('engines').selectAll().where('workspace_id', '=', workspaceId).orderBy('name').execute();
}

/** The engine of that name, or undefined (a name engines can never have included). */
export async function getEngineRow(db: Db, workspaceId: string, name: string): Promise<EngineRow | undefined> {
  return ENGINE_NAME_RE.test(name)
    ? await db.selectFrom('engines').selectAll().where('workspace_id', '=', workspaceId).where('name', '=', name).executeTakeFirst()
    : undefined;
}

export async function findEngine(db: Db, workspaceId: string, name: string): Promise<EngineRow> {
  const row = await getEngineRow(db, workspaceId, name);
  if (!row) throw notFound(`engine does not exist: ${name}`);
  return row;
}

/** What the query side needs to run SQL on an engine; undefined when there is none of that name. */
export interface EngineEndpoint { id: string; name: string; kind: EngineKind; state: EngineRow['state']; endpoint_url: string | null }

export async function getEngine(db: Db, workspaceId: string, name: string): Promise<EngineEndpoint | undefined> {
  if (!ENGINE_NAME_RE.test(name)) return undefined;
  return db.selectFrom('engines').select(['id', 'name', 'kind', 'state', 'endpoint_url'])
    .where('workspace_id', '=', workspaceId).where('name', '=', name).where('desired', '!=', 'deleted').executeTakeFirst();
}

/**
 * A request's enqueue: the change is recorded either way, so Redis being away does not hold the
 * answer (at most 3 s): the engines' sweep (transition.ts) queues every transitional engine again.
 */
async function enqueueForRequest(s: Services, id: string, generation: number): Promise<void> {
  await s.queues.forRequest(() => enqueueEngine(s, id, generation), 'the engine change').catch((err: Error) => {
    if (!(err instanceof DependencyUnavailable)) throw err;
    s.logging.module('svc::engines').warn({ engine: id, err: err.message }, 'engine change recorded; its job is queued by the sweep when Redis is back');
  });
}

/** start, stop or delete: records the change (one statement, guarded by the state read) and enqueues. */
export async function requestEngine(s: Services, workspaceId: string, name: string, req: EngineRequest): Promise<EngineRow> {
  for (let i = 0; i < 3; i++) {
    const row = await findEngine(s.db, workspaceId, name);
    const t = requestTransition(row.state, row.desired, req);
    if (t.kind === 'refused') throw conflict(t.message);
    if (t.kind === 'unchanged') return row;
    const now = s.clock.now();
    const next = await s.db.updateTable('engines')
      .set({ state: t.state, desired: t.desired, generation: row.generation + 1, state_changed_at: now, updated_at: now, error: t.state === 'provisioning' ? null : row.error })
      .where('id', '=', row.id).where('generation', '=', row.generation).where('state', '=', row.state)
      .returningAll().executeTakeFirst();
    if (!next) continue; // changed under us: read again
    await enqueueForRequest(s, next.id, next.generation);
    return next;
  }
  throw conflict('engine is changing: try again');
}
