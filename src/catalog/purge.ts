// Purge (Iceberg REST dropTable with purgeRequested=true): the drop answers at once and a job on
// the `catalog-purge` queue removes the table's files from the object store afterwards, as the
// Java catalogs' asynchronous purge and Lakekeeper's soft-delete expiry do. What goes:
// - every object under the table location (data/, metadata/ and anything else written there);
// - the files its metadata names outside the location but inside the workspace's warehouse
//   (metadata-log entries, manifest lists, statistics files), at most MAX_FILES of them.
// What stays: objects under the location of another live table or view (a client may nest one
// table's location in another's, or register a metadata file from inside it): the catalog never
// deletes a file a live table may still read. Data files that only manifests name outside the
// location are not read (that needs Avro manifests) and stay; docs/catalog.md says so.
// The job id is `purge-<table id>`, so a second request for the same drop adds nothing.
// Every listing and deletion goes through the storage rule (src/storage/ownership.ts) for the
// workspace as svc records it and the table location: a location outside the workspace's
// warehouse (a table registered before issue 24 from a file naming another prefix) purges nothing.
import type { Services } from '../services.js';
import type { Job } from 'bullmq';
import { QUEUES, jobOptions, type CatalogPurgeJob } from '../queue/queues.js';
import { startWorker } from '../queue/worker.js';
import { recordGovernance } from '../audit/governance.js';
import { storageKey } from './warehouse.js';
import { authorize, StorageRefused } from '../storage/ownership.js';
import type { Tenant } from '../storage/layout.js';
import { systemCaller } from './access.js';
import { parseJson } from './json.js';
import type { Json } from './metadata.js';

const MAX_FILES = 10_000;
const PAGE = 1000;
const PARALLEL = 16;

/** The table location: the metadata file's folder's parent, else the metadata's `location`. */
export function locationOf(metadataLocation: string, metadataText: string): string {
  const m = /^(.*)\/metadata\/[^/]+$/.exec(metadataLocation);
  return m ? m[1] : String((parseJson(metadataText) as Json).location);
}

/** Files the metadata names outside `location` but inside `root` (the workspace's warehouse). */
export function filesOutside(metadataLocation: string, metadataText: string, location: string, root: string): string[] {
  const m = parseJson(metadataText) as Json;
  const named: unknown[] = [metadataLocation];
  const each = (list: unknown, field: string) => {
    if (Array.isArray(list)) for (const e of list) if (e && typeof e === 'object') named.push((e as Json)[field]);
  };
  each(m['metadata-log'], 'metadata-file');
  each(m.snapshots, 'manifest-list');
  each(m.statistics, 'statistics-path');
  each(m['partition-statistics'], 'statistics-path');
  const out = new Set<string>();
  for (const f of named) {
    if (typeof f !== 'string' || f.startsWith(`${location}/`) || !f.startsWith(`${root}/`) || f.split('/').includes('..')) continue;
    out.add(f);
    if (out.size >= MAX_FILES) break;
  }
  return [...out];
}

/** Queues the purge of a dropped table; the same table id twice is one job. */
export async function enqueuePurge(s: Services, job: CatalogPurgeJob): Promise<void> {
  await s.queues.forRequest(() => s.queues.get(QUEUES.catalogPurge).add('purge', job, jobOptions(QUEUES.catalogPurge, { jobId: `purge-${job.tableId}` })), 'the purge');
}

const likeEscape = (v: string) => v.replace(/[\\%_]/g, (c) => `\\${c}`);

/** Prefixes (and single keys) of live tables and views that lie inside `location`: kept. */
async function liveInside(s: Services, location: string): Promise<{ prefixes: string[]; keys: Set<string> }> {
  const rows = await s.db.selectFrom('catalog_tables').select(['metadata_location', 'metadata'])
    .where('metadata_location', 'like', `${likeEscape(location)}/%`).execute();
  const prefixes: string[] = [];
  const keys = new Set<string>();
  for (const r of rows) {
    keys.add(r.metadata_location);
    const loc = locationOf(r.metadata_location, r.metadata);
    if (loc.startsWith(`${location}/`) || loc === location) prefixes.push(`${loc}/`);
  }
  return { prefixes, keys };
}

/** Removes the files of a dropped table; running it again removes nothing more. */
export async function purgeTable(s: Services, job: CatalogPurgeJob): Promise<{ deleted: number; kept: number; refused?: string }> {
  const ws = await s.db.selectFrom('workspaces').select(['id', 'slug']).where('slug', '=', job.workspace).executeTakeFirst();
  const prefix = (storageKey(s, job.location) ?? '').replace(/\/+$/, '');
  const tenant: Tenant = ws ?? { id: '' };
  try {
    authorize(s.storage.layout, { tenant }, { name: 'DeletePrefix', prefix: `${prefix}/` });
  } catch (err) {
    if (!(err instanceof StorageRefused)) throw err;
    s.logging.module('svc::catalog').warn({ table: job.table, location: job.location, reason: err.message }, 'catalog purge refused: the location is not the workspace\'s');
    await record(s, job, { deleted: 0, kept: 0, refused: err.message });
    return { deleted: 0, kept: 0, refused: err.message };
  }
  const store = s.storage.of({ tenant, within: prefix });
  const bucketUri = job.location.slice(0, job.location.replace(/\/+$/, '').length - prefix.length);
  const live = await liveInside(s, job.location);
  const keptKey = (key: string) => {
    const uri = bucketUri + key;
    return live.keys.has(uri) || live.prefixes.some((p) => uri.startsWith(p));
  };
  const deleteAll = async (keys: string[], from = store) => {
    for (let i = 0; i < keys.length; i += PARALLEL) await Promise.all(keys.slice(i, i + PARALLEL).map((k) => from.delete(k)));
  };
  let deleted = 0;
  let kept = 0;
  let after: string | undefined;
  for (;;) {
    const page = await store.list(`${prefix}/`, PAGE, after);
    if (page.length === 0) break;
    after = page[page.length - 1].key;
    const doomed = page.map((o) => o.key).filter((k) => !keptKey(k));
    kept += page.length - doomed.length;
    await deleteAll(doomed);
    deleted += doomed.length;
    if (page.length < PAGE) break;
  }
  // Files the metadata names outside the location: each one the workspace owns, never another's.
  const outside = job.files.map((f) => storageKey(s, f)).filter((k): k is string => k !== null && !keptKey(k) && allowed(s, tenant, k));
  await deleteAll(outside, s.storage.of({ tenant }));
  deleted += outside.length;
  await record(s, job, { deleted, kept });
  return { deleted, kept };
}

const allowed = (s: Services, tenant: Tenant, key: string) => {
  try { authorize(s.storage.layout, { tenant }, { name: 'DeleteObject', key }); return true; } catch { return false; }
};

async function record(s: Services, job: CatalogPurgeJob, outcome: { deleted: number; kept: number; refused?: string }) {
  const system = systemCaller(s);
  await recordGovernance(s.db, {
    action: 'catalog.table.purge', actorId: system.actorId, actor: system.actor, target: `table:${job.table}`, workspace: job.workspace,
    details: { location: job.location, ...outcome, requested_by: job.requestedBy },
  });
}

/** The worker of the `catalog-purge` queue (svc serve, with catalog.enabled). */
export function startCatalogPurgeWorker(s: Services) {
  return startWorker(s, QUEUES.catalogPurge, (job: Job<CatalogPurgeJob>) => purgeTable(s, job.data), {
    concurrency: 2, log: s.logging.module('svc::catalog'), failedMessage: 'catalog purge failed',
    describe: (job) => ({ job: job.id, table: job.data.table, location: job.data.location }),
  });
}
