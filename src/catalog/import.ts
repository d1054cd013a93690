// Importing a table written elsewhere (`svc catalog import`): a local copy of an Iceberg table
// whose files name another bucket (s3a://other-bucket/...) becomes a table of a workspace. Every
// file the metadata reaches (manifest lists, manifests, data files, delete files) is copied under
// a new location in the workspace's warehouse, `<warehouse>/<slug>/<namespace id>/<new uuid>`,
// as createTable lays tables out; every absolute path is rewritten: in the metadata JSON, in the
// Avro manifest lists and manifests (decoded and encoded again, lengths and sizes updated), and
// in the position delete files' own `file_path` column (rewritten by DuckDB, which keeps their
// Iceberg field ids). The copy gets a new table uuid, and is registered through the catalog's
// register path. Statistics files and the metadata log are not carried over.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Services } from '../services.js';
import { fieldIds, readAvro, recordOf, writeAvro } from '../iceberg/avro.js';
import { invalid } from '../iceberg/errors.js';
import { DELETE_FILE_PATH_ID, DELETE_POS_ID } from '../iceberg/deletes.js';
import { loadDuckDB } from '../queries/embedded.js';
import { parseJson, stringifyJson } from './json.js';
import { getNamespace } from './namespaces.js';
import { nextMetadataLocation, registerTable, writeMetadata } from './tables.js';
import { warehouseStore, storageKey, type Warehouse } from './warehouse.js';
import type { CatalogCaller } from './access.js';

type Json = Record<string, unknown>;
type Rec = Record<string, unknown>;

export interface ImportedTable { metadataLocation: string; location: string; files: number; bytes: number }

const noScheme = (p: string) => p.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');

/** The newest metadata file of a table folder: version-hint.text, else the highest version. */
async function newestMetadata(folder: string): Promise<string> {
  const dir = path.join(folder, 'metadata');
  const names = await readdir(dir).catch(() => { throw invalid(`${folder} has no metadata folder: it is not an Iceberg table`); });
  const hint = names.includes('version-hint.text') ? (await readFile(path.join(dir, 'version-hint.text'), 'utf8')).trim() : '';
  if (/^\d+$/.test(hint) && names.includes(`v${hint}.metadata.json`)) return path.join(dir, `v${hint}.metadata.json`);
  const version = (n: string) => Number(/^v?(\d+)[.-]/.exec(n)?.[1] ?? -1);
  const json = names.filter((n) => n.endsWith('.metadata.json')).sort((a, b) => version(b) - version(a));
  if (json.length === 0) throw invalid(`${dir} holds no .metadata.json file`);
  return path.join(dir, json[0]);
}

class Importer {
  readonly copied = new Map<string, string>();
  files = 0;
  bytes = 0;
  constructor(private readonly s: Services, private readonly wh: Warehouse, private readonly folder: string, private readonly from: string, readonly to: string) {}

  /** The new location of an absolute path under the old table location. */
  map(p: string): string {
    const rest = noScheme(p).slice(noScheme(this.from).length);
    if (!noScheme(p).startsWith(`${noScheme(this.from)}/`) || rest.split('/').includes('..')) {
      throw invalid(`the table names ${p.slice(0, 300)}, outside its location ${this.from}; svc imports only files under the table's location`);
    }
    return `${this.to}${rest}`;
  }

  local(p: string): string {
    this.map(p);
    return path.join(this.folder, noScheme(p).slice(noScheme(this.from).length));
  }

  private async put(location: string, body: Uint8Array | string | null, localFile?: string): Promise<void> {
    const key = storageKey(this.s, location)!;
    if (localFile) {
      const size = (await stat(localFile).catch(() => { throw invalid(`the table names ${localFile}, which the folder does not have`); })).size;
      await warehouseStore(this.s, this.wh, storageKey(this.s, this.to)!).putStream(key, createReadStream(localFile));
      this.bytes += size;
    } else {
      await warehouseStore(this.s, this.wh, storageKey(this.s, this.to)!).put(key, body!);
      this.bytes += typeof body === 'string' ? Buffer.byteLength(body) : body!.length;
    }
    this.files++;
  }

  async copyFile(p: string): Promise<{ location: string; size?: number }> {
    const hit = this.copied.get(p);
    if (hit) return { location: hit };
    const location = this.map(p);
    await this.put(location, null, this.local(p));
    this.copied.set(p, location);
    return { location };
  }

  async readLocal(p: string): Promise<Uint8Array> {
    return readFile(this.local(p)).catch(() => { throw invalid(`the table names ${p.slice(0, 300)}, which the folder does not have`); });
  }

  /** Re-encodes an Avro file after `edit` changed its records; the writer's metadata is kept. */
  async rewriteAvro(p: string, edit: (records: Rec[], schema: unknown) => Promise<void>): Promise<{ location: string; size: number }> {
    const file = await readAvro(await this.readLocal(p), p);
    await edit(file.records as Rec[], file.schema);
    const meta = Object.fromEntries(Object.entries(file.meta).filter(([k]) => !k.startsWith('avro.')));
    const bytes = await writeAvro(file.schema, file.records, meta);
    const location = this.map(p);
    await this.put(location, bytes);
    return { location, size: bytes.length };
  }

  /** A position delete file with its `file_path` column rewritten; its new size and path bounds. */
  async rewritePositionDeletes(p: string, tmp: string): Promise<{ location: string; size: number; lower: string; upper: string }> {
    const src = path.join(tmp, `in-${this.files}.parquet`);
    const dst = path.join(tmp, `out-${this.files}.parquet`);
    await writeFile(src, await this.readLocal(p));
    const { DuckDBInstance } = await loadDuckDB();
    const db = await DuckDBInstance.create(':memory:');
    const c = await db.connect();
    const q = (v: string) => `'${v.replace(/'/g, "''")}'`;
    const old = `${noScheme(this.from)}/`;
    const stripped = `regexp_replace(file_path, '^[a-zA-Z][a-zA-Z0-9+.-]*://', '')`;
    let bounds = { lower: '', upper: '' };
    try {
      const outside = await c.runAndReadAll(`SELECT count(*) FROM read_parquet(${q(src)}) WHERE NOT starts_with(${stripped}, ${q(old)})`);
      if (Number(outside.getRows()[0][0]) > 0) throw invalid(`the position delete file ${p.slice(0, 300)} names data files outside the table location`);
      await c.run(`COPY (SELECT ${q(`${this.to}/`)} || substr(${stripped}, ${old.length + 1}) AS file_path, pos FROM read_parquet(${q(src)})) TO ${q(dst)} (FORMAT parquet, FIELD_IDS {file_path: ${DELETE_FILE_PATH_ID}, pos: ${DELETE_POS_ID}})`);
      const range = (await c.runAndReadAll(`SELECT min(file_path), max(file_path) FROM read_parquet(${q(dst)})`)).getRows()[0];
      bounds = { lower: String(range[0] ?? ''), upper: String(range[1] ?? '') };
    } finally {
      c.closeSync();
      db.closeSync();
    }
    const bytes = await readFile(dst);
    const location = this.map(p);
    await this.put(location, bytes);
    return { location, size: bytes.length, ...bounds };
  }
}

/** Rewrites one manifest's entries (paths, and position delete files with their sizes). */
async function importManifest(im: Importer, p: string, tmp: string): Promise<{ location: string; size: number }> {
  return im.rewriteAvro(p, async (records, schema) => {
    const entryIds = fieldIds(schema);
    const fileName = entryIds.get(2)!.name;
    const ids = fieldIds(recordOf(entryIds.get(2)!.type));
    const n = (id: number) => ids.get(id)?.name;
    for (const r of records) {
      const d = r[fileName] as Rec;
      const filePath = String(d[n(100)!]);
      const isPosDelete = Number(d[n(134) ?? ''] ?? 0) === 1 && String(d[n(101)!]).toLowerCase() === 'parquet';
      if (isPosDelete) {
        const out = await im.rewritePositionDeletes(filePath, tmp);
        d[n(100)!] = out.location;
        d[n(104)!] = out.size;
        for (const id of [108, 132]) if (n(id)) d[n(id)!] = null; // column sizes and split offsets described the old file
        // the file_path bounds (often truncated to 16 characters by the writer) become the copy's exact range
        for (const [id, v] of [[125, out.lower], [128, out.upper]] as const) {
          if (!n(id)) continue;
          const kept = ((d[n(id)!] as Array<{ key: number; value: Buffer }> | null) ?? []).filter((kv) => kv.key !== DELETE_FILE_PATH_ID);
          d[n(id)!] = [...kept, { key: DELETE_FILE_PATH_ID, value: Buffer.from(v) }];
        }
      } else {
        d[n(100)!] = (await im.copyFile(filePath)).location;
      }
      const ref = n(143) ? d[n(143)!] : null;
      if (typeof ref === 'string') d[n(143)!] = im.map(ref);
    }
  });
}

/**
 * Imports the table in local `folder` (its newest metadata, or `metadataFile`) as table `name` of
 * namespace `namespace` of workspace `wh`. On failure the copied objects are removed.
 */
export async function importTable(s: Services, wh: Warehouse, caller: CatalogCaller, namespace: string[], name: string, folder: string, metadataFile?: string): Promise<ImportedTable> {
  const file = metadataFile ?? await newestMetadata(folder);
  const metadata = parseJson(await readFile(file, 'utf8').catch(() => { throw invalid(`cannot read ${file}`); })) as Json;
  if (typeof metadata?.location !== 'string' || typeof metadata['table-uuid'] !== 'string' || typeof metadata['format-version'] !== 'number') throw invalid(`${file} is not Iceberg table metadata`);
  const ns = await getNamespace(s.db, wh, namespace);
  const uuid = randomUUID();
  const im = new Importer(s, wh, folder, metadata.location.replace(/\/+$/, ''), `${wh.root}/${ns.id}/${uuid}`);
  const tmp = await mkdtemp(path.join(tmpdir(), 'svc-import-'));
  try {
    const manifests = new Map<string, { location: string; size: number }>();
    const manifest = async (p: string) => {
      let m = manifests.get(p);
      if (!m) { m = await importManifest(im, p, tmp); manifests.set(p, m); }
      return m;
    };
    for (const snap of (metadata.snapshots ?? []) as Json[]) {
      if (typeof snap['manifest-list'] === 'string') {
        const list = await im.rewriteAvro(snap['manifest-list'], async (records, schema) => {
          const ids = fieldIds(schema);
          for (const r of records) {
            const m = await manifest(String(r[ids.get(500)!.name]));
            r[ids.get(500)!.name] = m.location;
            r[ids.get(501)!.name] = m.size;
          }
        });
        snap['manifest-list'] = list.location;
      } else if (Array.isArray(snap.manifests)) {
        snap.manifests = await Promise.all((snap.manifests as string[]).map(async (p) => (await manifest(p)).location));
      }
    }
    metadata['table-uuid'] = uuid;
    metadata.location = im.to;
    metadata['metadata-log'] = [];
    metadata.statistics = [];
    metadata['partition-statistics'] = [];
    const props = (metadata.properties ?? {}) as Record<string, string>;
    for (const k of ['write.data.path', 'write.metadata.path', 'write.object-storage.path', 'write.folder-storage.path']) {
      if (props[k] === undefined) continue;
      try { props[k] = im.map(props[k]); } catch { delete props[k]; }
    }
    const metadataLocation = nextMetadataLocation(im.to, null);
    await writeMetadata(s, wh, metadataLocation, stringifyJson(metadata));
    const created = await registerTable(s, wh, caller, namespace, { name, 'metadata-location': metadataLocation });
    return { metadataLocation: created.location ?? metadataLocation, location: im.to, files: im.files + 1, bytes: im.bytes };
  } catch (err) {
    await warehouseStore(s, wh, storageKey(s, im.to)!).deletePrefix(`${storageKey(s, im.to)!}/`).catch((e: Error) => s.logging.module('svc::catalog').warn({ err: e.message, location: im.to }, 'could not remove the files of a failed import'));
    throw err;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
