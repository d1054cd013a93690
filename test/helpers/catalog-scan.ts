// Tables for the scan planning tests: a table partitioned by region and day, created through the
// catalog's REST API and given one data file per commit through the catalog's own commit path
// (commitFiles: manifests and manifest lists written to the object store, compare-and-swap), and
// a request helper that keeps 64-bit snapshot ids exact both ways.
import assert from 'node:assert/strict';
import { commitFiles } from '../../src/catalog/table-writes.js';
import { systemCaller } from '../../src/catalog/access.js';
import { findWarehouse } from '../../src/catalog/warehouse.js';
import { parseJson, stringifyJson } from '../../src/catalog/json.js';
import type { CatalogApp } from './catalog.js';

export const REGIONS = ['eu', 'us', 'ap', 'sa', 'af'];
export const DAYS = 10;
const DAY0 = Date.UTC(2024, 0, 1);
const dayOf = (d: number) => DAY0 / 86_400_000 + d;
const micros = (ms: number) => BigInt(ms) * 1000n;

export const eventsSchema = {
  type: 'struct', 'schema-id': 0, fields: [
    { id: 1, name: 'id', type: 'long', required: true }, { id: 2, name: 'ts', type: 'timestamptz', required: false },
    { id: 3, name: 'region', type: 'string', required: false }, { id: 4, name: 'amount', type: 'decimal(10,2)', required: false },
  ],
};
export const eventsSpec = { 'spec-id': 0, fields: [
  { 'source-id': 3, 'field-id': 1000, name: 'region', transform: 'identity' },
  { 'source-id': 2, 'field-id': 1001, name: 'ts_day', transform: 'day' },
] };

/** A JSON request to the catalog; bodies and answers keep 64-bit integers (BigInt) exact. */
export async function call(c: Pick<CatalogApp, 'base'>, method: string, path: string, token: string, body?: unknown) {
  const res = await fetch(new URL(path, c.base), {
    method, headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : stringifyJson(body),
  });
  const text = await res.text();
  return { status: res.status, text, body: text ? parseJson(text) as any : null, headers: res.headers };
}

export interface Events {
  location: string;
  /** snapshot ids, one per commit, oldest first */
  snapshots: bigint[];
  /** file name -> what was written for it */
  files: Map<string, { region: string; day: number; id: number }>;
}

/**
 * `ws`.`ns`.`name`: 50 partitions (5 regions x 10 days), one file of 100 rows each, each in its own
 * commit (so a manifest per file: the manifest list's partition summaries prune whole manifests).
 */
export async function eventsTable(c: CatalogApp, token: string, ws: string, ns: string, name: string): Promise<Events> {
  const made = await call(c, 'POST', `v1/${ws}/namespaces/${ns}/tables`, token, { name, schema: eventsSchema, 'partition-spec': eventsSpec });
  assert.equal(made.status, 200, made.text);
  const location = made.body.metadata.location as string;
  const s = c.t.services;
  const wh = await findWarehouse(s, ws);
  const out: Events = { location, snapshots: [], files: new Map() };
  let n = 0;
  for (let d = 0; d < DAYS; d++) {
    for (const region of REGIONS) {
      const id = n * 100;
      const start = DAY0 + d * 86_400_000;
      const file = `${region}-${d}.parquet`;
      const done = await commitFiles(s, wh, systemCaller(s), [ns], name, { dataFiles: [{
        path: `${location}/data/${file}`, sizeBytes: 1000 + n, recordCount: 100,
        partition: { region, ts_day: dayOf(d) },
        valueCounts: { 1: 100, 2: 100 }, nullValueCounts: { 1: 0, 2: 0 },
        lowerBounds: { 1: BigInt(id), 2: micros(start), 4: '10.00' }, upperBounds: { 1: BigInt(id + 99), 2: micros(start + 86_399_000), 4: `${10 + n}.00` },
      }] });
      out.snapshots.push(done.snapshotId);
      out.files.set(file, { region, day: d, id });
      n++;
    }
  }
  return out;
}

/** File names of a ScanTasks answer's data files, sorted. */
export const fileNames = (tasks: any[]) => tasks.map((t) => String(t['data-file']['file-path']).split('/').pop()!).sort();
