// Iceberg view metadata (format version 1) as the REST catalog manages it, pure: a new view's
// metadata, the one view requirement (assert-view-uuid) and the view updates. As in the Java
// reference, an identical schema or version is reused, else the highest id plus one; -1 in
// set-current-view-version (or in a version's schema-id) means the one added last.
import { randomUUID } from 'node:crypto';
import { badRequest, commitFailed } from './errors.js';
import { checkSchema, idFor, type Json } from './metadata.js';

export type ViewMetadata = Json & {
  'view-uuid': string; 'format-version': number; location: string; 'current-version-id': number;
  versions: Json[]; 'version-log': Json[]; schemas: Json[]; properties: Record<string, string>;
};

const obj = (v: unknown, what: string): Json => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest(`${what} must be an object`);
  return v as Json;
};

export function createViewUpdates(req: Json, location: string): Json[] {
  const properties = obj(req.properties ?? {}, 'properties');
  for (const [k, v] of Object.entries(properties)) if (typeof v !== 'string') throw badRequest(`properties.${k} must be a string`);
  return [
    { action: 'add-schema', schema: checkSchema(req.schema) },
    { action: 'add-view-version', 'view-version': { ...obj(req['view-version'], 'view-version'), 'schema-id': -1 } },
    { action: 'set-current-view-version', 'view-version-id': -1 },
    { action: 'set-location', location },
    { action: 'set-properties', updates: properties },
  ];
}

export function emptyView(location: string): ViewMetadata {
  return { 'view-uuid': randomUUID(), 'format-version': 1, location, 'current-version-id': -1, versions: [], 'version-log': [], schemas: [], properties: {} };
}

export function checkViewRequirement(base: ViewMetadata, r: unknown): void {
  const q = obj(r, 'requirement');
  if (q.type !== 'assert-view-uuid') throw badRequest(`unknown view requirement type: ${String(q.type)}`);
  if (q.uuid !== base['view-uuid']) throw commitFailed(`Requirement failed: view UUID does not match: expected ${String(q.uuid)} != ${base['view-uuid']}`);
}

function checkVersion(v: unknown): Json {
  const version = obj(v, 'view-version');
  if (!Array.isArray(version.representations) || version.representations.length === 0) throw badRequest('view-version needs representations');
  for (const r of version.representations as unknown[]) {
    const rep = obj(r, 'representation');
    if (rep.type !== 'sql' || typeof rep.sql !== 'string' || typeof rep.dialect !== 'string') throw badRequest('a representation is {type: "sql", sql, dialect}');
  }
  const dialects = (version.representations as Json[]).map((r) => String(r.dialect).toLowerCase());
  if (new Set(dialects).size !== dialects.length) throw badRequest('a view version has one representation per dialect');
  if (!Array.isArray(version['default-namespace'])) throw badRequest('view-version needs default-namespace');
  if (typeof version.summary !== 'object' || version.summary === null) throw badRequest('view-version needs a summary');
  return version;
}

export function applyViewUpdates(base: ViewMetadata | undefined, updates: unknown[], fresh: () => ViewMetadata, now: number): ViewMetadata {
  if (updates.length > 10_000) throw badRequest('at most 10000 updates in one commit');
  const m: ViewMetadata = base ? structuredClone(base) : fresh();
  let lastSchema: number | undefined;
  let lastVersion: number | undefined;
  for (const u of updates) {
    const x = obj(u, 'update');
    switch (x.action) {
      case 'assign-uuid':
        if (typeof x.uuid !== 'string' || (base && x.uuid !== m['view-uuid'])) throw badRequest('Cannot reassign view uuid');
        m['view-uuid'] = x.uuid;
        break;
      case 'upgrade-format-version':
        if (x['format-version'] !== 1) throw badRequest('views have format version 1');
        break;
      case 'add-schema': {
        const schema = checkSchema(x.schema);
        const { id, existing } = idFor(m.schemas, { ...schema, 'schema-id': 0 }, 'schema-id');
        if (!existing) m.schemas.push({ ...schema, 'schema-id': id });
        lastSchema = id;
        break;
      }
      case 'add-view-version': {
        const version = { ...checkVersion(x['view-version']) };
        if (version['schema-id'] === -1) {
          if (lastSchema === undefined) throw badRequest('Cannot set last added schema: no schema has been added');
          version['schema-id'] = lastSchema;
        }
        if (!m.schemas.some((s) => s['schema-id'] === version['schema-id'])) throw badRequest(`Cannot add version with unknown schema: ${String(version['schema-id'])}`);
        const key = (v: Json) => JSON.stringify({ ...v, 'version-id': undefined, 'timestamp-ms': undefined });
        const same = m.versions.find((v) => key(v) === key(version));
        if (same) { lastVersion = same['version-id'] as number; break; }
        const id = m.versions.reduce((mx, v) => Math.max(mx, v['version-id'] as number), 0) + 1;
        m.versions.push({ ...version, 'version-id': id, 'timestamp-ms': typeof version['timestamp-ms'] === 'number' ? version['timestamp-ms'] : now });
        lastVersion = id;
        break;
      }
      case 'set-current-view-version': {
        let id = x['view-version-id'];
        if (id === -1) { if (lastVersion === undefined) throw badRequest('Cannot set last added view version: no view version has been added'); id = lastVersion; }
        if (!m.versions.some((v) => v['version-id'] === id)) throw badRequest(`Cannot set current version to unknown version: ${String(id)}`);
        if (m['current-version-id'] !== id) {
          m['current-version-id'] = id as number;
          m['version-log'].push({ 'version-id': id, 'timestamp-ms': now });
        }
        break;
      }
      case 'set-location':
        if (typeof x.location !== 'string' || x.location === '') throw badRequest('location must be a non-empty string');
        m.location = x.location.replace(/\/+$/, '');
        break;
      case 'set-properties':
        for (const [k, v] of Object.entries(obj(x.updates, 'updates'))) {
          if (typeof v !== 'string') throw badRequest(`updates.${k} must be a string`);
          m.properties[k] = v;
        }
        break;
      case 'remove-properties':
        if (!Array.isArray(x.removals)) throw badRequest('removals must be an array');
        for (const k of x.removals) delete m.properties[String(k)];
        break;
      default:
        throw badRequest(`unknown view update action: ${String(x.action)}`);
    }
  }
  if (m['current-version-id'] < 0) throw badRequest('a view needs a current version');
  // Keep the newest versions (version.history.num-entries, default 10) and the current one.
  const keep = Number(m.properties['version.history.num-entries'] ?? 10);
  const max = Number.isInteger(keep) && keep >= 1 ? keep : 10;
  if (m.versions.length > max) {
    const newest = [...m.versions].sort((a, b) => (b['version-id'] as number) - (a['version-id'] as number)).slice(0, max);
    const ids = new Set([...newest.map((v) => v['version-id']), m['current-version-id']]);
    m.versions = m.versions.filter((v) => ids.has(v['version-id']));
    m['version-log'] = m['version-log'].filter((e) => ids.has(e['version-id']));
  }
  return m;
}
