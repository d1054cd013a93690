// Data apps (SPEC 8 apps.storage, docs/apps.md): a row per app in the metadata database, the
// notebook source in the object store under apps.storage.prefix:
//   <prefix><workspace id>/<app id>/draft          the author's working copy
//   <prefix><workspace id>/<app id>/versions/<n>   published version n (immutable)
// Editors change the draft and publish it; viewers only ever read published versions. Every
// object call goes through the storage rule for the app's workspace (src/storage/tenant-store.ts).
import { randomUUID } from 'node:crypto';
import type { Db } from '../db/index.js';
import type { AppRow } from '../db/app-types.js';
import type { Storage } from '../storage/tenant-store.js';
import type { Clock } from '../clock.js';
import { DomainError, conflict, isUniqueViolation, notFound } from '../errors.js';
import { recordGovernance } from '../audit/governance.js';
import { auditActor, type Actor } from '../access/actor.js';

/** A notebook's source is bounded (a marimo notebook is a Python file; 1 MiB is generous). */
export const MAX_SOURCE_BYTES = 1_048_576;
/** Apps per workspace: the list is answered in one page. */
export const MAX_APPS_PER_WORKSPACE = 1_000;

export interface AppStoreDeps { db: Db; storage: Storage; clock: Clock }

/** The keys of an app under the workspace's apps root (`<apps.storage.prefix><workspace id>/`). */
export const appKeys = (storage: Storage, workspaceId: string, appId: string) => {
  const root = `${storage.root('apps', { id: workspaceId })}${appId}/`;
  return { root, draft: `${root}draft`, version: (n: number) => `${root}versions/${n}` };
};

const decode = (b: Uint8Array) => Buffer.from(b).toString('utf8');

export class AppStore {
  constructor(private readonly d: AppStoreDeps) {}

  private keys(a: Pick<AppRow, 'workspace_id' | 'id'>) { return appKeys(this.d.storage, a.workspace_id, a.id); }
  private s3(workspaceId: string) { return this.d.storage.of({ tenant: { id: workspaceId } }); }

  async create(workspaceId: string, by: string, input: { name: string; description: string; source: string }, audit?: { actor: Actor; workspace: string }): Promise<AppRow> {
    const { count } = await this.d.db.selectFrom('apps').select((e) => e.fn.countAll<string>().as('count'))
      .where('workspace_id', '=', workspaceId).executeTakeFirstOrThrow();
    if (Number(count) >= MAX_APPS_PER_WORKSPACE) throw conflict(`a workspace holds at most ${MAX_APPS_PER_WORKSPACE} apps`);
    const now = this.d.clock.now();
    const id = randomUUID();
    // The draft is written first: a row never points at missing content. A failed insert leaves
    // an orphan object under a fresh id, which the delete below removes.
    const draft = this.keys({ workspace_id: workspaceId, id }).draft;
    await this.s3(workspaceId).put(draft, input.source, 'text/x-python; charset=utf-8');
    try {
      return await this.d.db.transaction().execute(async (tx) => {
        const row = await tx.insertInto('apps').values({
          id, workspace_id: workspaceId, name: input.name, description: input.description, created_by: by, created_at: now, draft_updated_at: now,
        }).returningAll().executeTakeFirstOrThrow();
        if (audit) await recordGovernance(tx, { action: 'app.create', ...auditActor(audit.actor), target: `app:${input.name}`, workspace: audit.workspace, details: { id } });
        return row;
      });
    } catch (err) {
      await this.s3(workspaceId).delete(draft);
      if (isUniqueViolation(err)) throw conflict(`app already exists: ${input.name}`);
      throw err;
    }
  }

  /** Every app of the workspace, or only the published ones (what a viewer may run). */
  async list(workspaceId: string, publishedOnly: boolean): Promise<AppRow[]> {
    let q = this.d.db.selectFrom('apps').selectAll().where('workspace_id', '=', workspaceId);
    if (publishedOnly) q = q.where('published_version', 'is not', null);
    return q.orderBy('name').limit(MAX_APPS_PER_WORKSPACE).execute();
  }

  /** One app; an unpublished one does not exist for a viewer. */
  async get(workspaceId: string, id: string, publishedOnly: boolean): Promise<AppRow> {
    const row = await this.d.db.selectFrom('apps').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst();
    if (!row || (publishedOnly && row.published_version === null)) throw notFound(`app does not exist: ${id}`);
    return row;
  }

  async draft(workspaceId: string, id: string): Promise<string> {
    const app = await this.get(workspaceId, id, false);
    const body = await this.s3(app.workspace_id).get(this.keys(app).draft);
    if (!body) throw new DomainError('gone', `the draft of app ${app.name} is missing from the object store`);
    return decode(body);
  }

  async saveDraft(workspaceId: string, id: string, source: string): Promise<AppRow> {
    const app = await this.get(workspaceId, id, false);
    await this.s3(app.workspace_id).put(this.keys(app).draft, source, 'text/x-python; charset=utf-8');
    return this.d.db.updateTable('apps').set({ draft_updated_at: this.d.clock.now() }).where('id', '=', app.id).returningAll().executeTakeFirstOrThrow();
  }

  /**
   * Copies the draft to the next version number and makes it the one viewers run. The number is
   * claimed by a conditional update, so two concurrent publishes get two versions, never one twice.
   */
  async publish(workspaceId: string, id: string): Promise<AppRow> {
    const app = await this.get(workspaceId, id, false);
    const source = await this.draft(workspaceId, id);
    const next = (app.published_version ?? 0) + 1;
    await this.s3(app.workspace_id).put(this.keys(app).version(next), source, 'text/x-python; charset=utf-8');
    const row = await this.d.db.updateTable('apps').set({ published_version: next, published_at: this.d.clock.now() })
      .where('id', '=', app.id)
      .where((e) => (app.published_version === null ? e('published_version', 'is', null) : e('published_version', '=', app.published_version)))
      .returningAll().executeTakeFirst();
    if (!row) throw conflict(`app ${app.name} was published concurrently; publish again`);
    return row;
  }

  /** A published version's source (1 .. published_version). */
  async version(workspaceId: string, id: string, n: number): Promise<string> {
    const app = await this.get(workspaceId, id, true);
    if (n < 1 || n > app.published_version!) throw notFound(`app ${app.name} has no version ${n}`);
    const body = await this.s3(app.workspace_id).get(this.keys(app).version(n));
    if (!body) throw new DomainError('gone', `version ${n} of app ${app.name} is missing from the object store`);
    return decode(body);
  }

  /** Removes the row, then the draft and every version. */
  async delete(workspaceId: string, id: string, audit?: { actor: Actor; workspace: string }): Promise<void> {
    const app = await this.get(workspaceId, id, false);
    await this.d.db.transaction().execute(async (tx) => {
      await tx.deleteFrom('apps').where('id', '=', app.id).execute();
      if (audit) await recordGovernance(tx, { action: 'app.delete', ...auditActor(audit.actor), target: `app:${app.name}`, workspace: audit.workspace, details: { id: app.id } });
    });
    await this.s3(app.workspace_id).deletePrefix(this.keys(app).root);
  }
}
