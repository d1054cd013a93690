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
import type { Services } from '../services.js';
import type { Job } from 'bullmq';
import { QUEUES, jobOptions, type CatalogPurgeJob } from '../jobs/queues.js';
import { startWorker } from '../jobs/worker.js';
import { recordGovernance } from '../audit/governance.js';
import { storageKey } from './warehouse.js';
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
  await s.queues.get(QUEUES.catalogPurge).add('purge', job, jobOptions(QUEUES.catalogPurge, { jobId: `purge-${job.tableId}` }));
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

async function deleteAll(s: Services, keys: string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += PARALLEL) await Promise.all(keys.slice(i, i + PARALLEL).map((k) => s.s3.delete(k)));
}

/** Removes the files of a dropped table; running it again removes nothing more. */
export async function purgeTable(s: Services, job: CatalogPurgeJob): Promise<{ deleted: number; kept: number }> {
  const prefix = storageKey(s, job.location);
  if (prefix === null || prefix === '') throw new Error(`table location outside the bucket: ${job.location}`);
  const bucketUri = job.location.slice(0, job.location.length - prefix.length);
  const live = await liveInside(s, job.location);
  const keptKey = (key: string) => {
    const uri = bucketUri + key;
    return live.keys.has(uri) || live.prefixes.some((p) => uri.startsWith(p));
  };
  let deleted = 0;
  let kept = 0;
  let after: string | undefined;
  for (;;) {
    const page = await s.s3.list(`${prefix}/`, PAGE, after);
    if (page.length === 0) break;
    after = page[page.length - 1].key;
    const doomed = page.map((o) => o.key).filter((k) => !keptKey(k));
    kept += page.length - doomed.length;
    await deleteAll(s, doomed);
    deleted += doomed.length;
    if (page.length < PAGE) break;
  }
  const outside = job.files.map((f) => storageKey(s, f)).filter((k): k is string => k !== null && !keptKey(k));
  await deleteAll(s, outside);
  deleted += outside.length;
  const system = systemCaller(s);
  await recordGovernance(s.db, {
    action: 'catalog.table.purge', actorId: system.actorId, actor: system.actor, target: `table:${job.table}`, workspace: job.workspace,
    details: { location: job.location, deleted, kept, requested_by: job.requestedBy },
  });
  return { deleted, kept };
}

/** The worker of the `catalog-purge` queue (svc serve, with catalog.enabled). */
export function startCatalogPurgeWorker(s: Services) {
  return startWorker(s, QUEUES.catalogPurge, (job: Job<CatalogPurgeJob>) => purgeTable(s, job.data), {
    concurrency: 2, log: s.logging.module('svc::catalog'), failedMessage: 'catalog purge failed',
    describe: (job) => ({ job: job.id, table: job.data.table, location: job.data.location }),
  });
}
