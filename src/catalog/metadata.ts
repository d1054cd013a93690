// Iceberg table metadata as the REST catalog manages it (pure functions, no I/O): the metadata
// of a new table, the requirements a commit asserts (any that fails is 409 CommitFailed), and
// every update type of the REST specification for format versions 1 to 3. Ids the client sends
// (schema fields, partition fields) are kept; the ids the table assigns (schema-id, spec-id,
// order-id) follow the Java reference: an identical one is reused, else the highest plus one,
// and -1 in a set-* update means "the one added last in this commit".
import { randomUUID } from 'node:crypto';
import { badRequest, commitFailed } from './errors.js';
import { isLong, sameLong, type Long } from './json.js';
import { parseSchema } from '../iceberg/types.js';
import { checkPartitionSpec, checkSortOrder } from '../iceberg/specs.js';

export type Json = Record<string, unknown>;
export type TableMetadata = Json & {
  'format-version': number; 'table-uuid': string; location: string; 'last-updated-ms': number;
  'last-column-id': number; schemas: Json[]; 'current-schema-id': number;
  'partition-specs': Json[]; 'default-spec-id': number; 'last-partition-id': number;
  properties: Record<string, string>; 'sort-orders': Json[]; 'default-sort-order-id': number;
  snapshots: Json[]; refs: Record<string, Json>; 'snapshot-log': Json[]; 'metadata-log': Json[];
  'last-sequence-number': Long; 'current-snapshot-id'?: Long;
};

export const MAX_FORMAT_VERSION = 3;
const PARTITION_FIELD_BASE = 999;

const obj = (v: unknown, what: string): Json => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw badRequest(`${what} must be an object`);
  return v as Json;
};
const int = (v: unknown, what: string): number => {
  if (typeof v !== 'number' || !Number.isInteger(v)) throw badRequest(`${what} must be an integer`);
  return v;
};
const long = (v: unknown, what: string): Long => {
  if (!isLong(v)) throw badRequest(`${what} must be an integer`);
  return v;
};
const str = (v: unknown, what: string): string => {
  if (typeof v !== 'string' || v === '') throw badRequest(`${what} must be a non-empty string`);
  return v;
};
const arr = (v: unknown, what: string): unknown[] => {
  if (!Array.isArray(v)) throw badRequest(`${what} must be an array`);
  return v;
};
const props = (v: unknown, what: string): Record<string, string> => {
  const o = obj(v, what);
  for (const [k, x] of Object.entries(o)) if (typeof x !== 'string') throw badRequest(`${what}.${k} must be a string`);
  return o as Record<string, string>;
};

/** Highest field id anywhere in a schema (nested structs, lists, maps). */
function maxFieldId(type: unknown, depth = 0): number {
  if (depth > 64 || typeof type !== 'object' || type === null) return 0;
  const t = type as Json;
  let max = 0;
  const seen = (id: unknown) => { if (typeof id === 'number' && id > max) max = id; };
  if (t.type === 'struct' && Array.isArray(t.fields)) {
    for (const f of t.fields as Json[]) { seen(f.id); max = Math.max(max, maxFieldId(f.type, depth + 1)); }
  } else if (t.type === 'list') {
    seen(t['element-id']); max = Math.max(max, maxFieldId(t.element, depth + 1));
  } else if (t.type === 'map') {
    seen(t['key-id']); seen(t['value-id']);
    max = Math.max(max, maxFieldId(t.key, depth + 1), maxFieldId(t.value, depth + 1));
  }
  return max;
}

/**
 * A schema as the specification defines it (types, unique ids and names, identifier fields) for a
 * table of `formatVersion` (views: 3, the most a type may need); anything else is 400.
 */
export function checkSchema(v: unknown, formatVersion = MAX_FORMAT_VERSION): Json {
  const s = obj(v, 'schema');
  if (s.type !== 'struct' || !Array.isArray(s.fields)) throw badRequest('schema must be a struct with fields');
  parseSchema(s, formatVersion);
  return s;
}

/** The table's current schema, parsed: what a partition spec or sort order is checked against. */
function currentSchema(m: TableMetadata, what: string) {
  const json = m.schemas.find((x) => x['schema-id'] === m['current-schema-id']);
  if (!json) throw badRequest(`Cannot add ${what}: the table has no current schema`);
  return parseSchema(json, m['format-version']);
}

const withoutId = (o: Json, key: string) => JSON.stringify({ ...o, [key]: undefined });
/** Reuses an identical entry's id, else assigns the highest plus one. */
export function idFor(list: Json[], entry: Json, key: string): { id: number; existing: boolean } {
  const same = list.find((x) => withoutId(x, key) === withoutId(entry, key));
  if (same) return { id: same[key] as number, existing: true };
  return { id: list.reduce((m, x) => Math.max(m, x[key] as number), -1) + 1, existing: false };
}

function checkSpec(v: unknown, lastPartitionId: number): { spec: Json; last: number } {
  const s = obj(v, 'partition-spec');
  let last = lastPartitionId;
  const fields = arr(s.fields ?? [], 'partition-spec fields').map((f) => {
    const field = obj(f, 'partition field');
    int(field['source-id'], 'partition field source-id');
    str(field.transform, 'partition field transform');
    str(field.name, 'partition field name');
    const id = field['field-id'] === undefined ? ++last : int(field['field-id'], 'partition field field-id');
    last = Math.max(last, id);
    return { name: field.name, transform: field.transform, 'source-id': field['source-id'], 'field-id': id };
  });
  return { spec: { 'spec-id': 0, fields }, last };
}

function checkOrder(v: unknown): Json {
  const o = obj(v, 'sort-order');
  const fields = arr(o.fields ?? [], 'sort-order fields').map((f) => {
    const field = obj(f, 'sort field');
    int(field['source-id'], 'sort field source-id');
    str(field.transform, 'sort field transform');
    if (field.direction !== 'asc' && field.direction !== 'desc') throw badRequest('sort field direction must be asc or desc');
    if (field['null-order'] !== 'nulls-first' && field['null-order'] !== 'nulls-last') throw badRequest('sort field null-order must be nulls-first or nulls-last');
    return { transform: field.transform, 'source-id': field['source-id'], direction: field.direction, 'null-order': field['null-order'] };
  });
  return { 'order-id': fields.length === 0 ? 0 : int(o['order-id'] ?? 1, 'order-id'), fields };
}

/** An empty table: the base a create (or a staged create's commit) applies its updates to. */
export function emptyMetadata(location: string, now: number): TableMetadata {
  return {
    'format-version': 2, 'table-uuid': randomUUID(), location, 'last-sequence-number': 0, 'last-updated-ms': now,
    'last-column-id': 0, schemas: [], 'current-schema-id': -1, 'partition-specs': [], 'default-spec-id': -1,
    'last-partition-id': PARTITION_FIELD_BASE, properties: {}, 'sort-orders': [], 'default-sort-order-id': -1,
    snapshots: [], refs: {}, 'snapshot-log': [], 'metadata-log': [], statistics: [], 'partition-statistics': [],
  };
}

/** The updates a CreateTableRequest stands for (how the Java client describes a create). */
export function createUpdates(req: Json, location: string): Json[] {
  const properties = req.properties === undefined ? {} : { ...props(req.properties, 'properties') };
  const fv = properties['format-version'];
  delete properties['format-version'];
  const format = fv === undefined ? 2 : Number(fv);
  if (!Number.isInteger(format) || format < 1 || format > MAX_FORMAT_VERSION) throw badRequest(`format-version must be 1 to ${MAX_FORMAT_VERSION}`);
  return [
    { action: 'upgrade-format-version', 'format-version': format },
    { action: 'add-schema', schema: checkSchema(req.schema, format) },
    { action: 'set-current-schema', 'schema-id': -1 },
    { action: 'add-spec', spec: req['partition-spec'] ?? { 'spec-id': 0, fields: [] } },
    { action: 'set-default-spec', 'spec-id': -1 },
    { action: 'add-sort-order', 'sort-order': req['write-order'] ?? { 'order-id': 0, fields: [] } },
    { action: 'set-default-sort-order', 'sort-order-id': -1 },
    { action: 'set-location', location },
    { action: 'set-properties', updates: properties },
  ];
}

export const MAX_UPDATES = 10_000;

/** Checks one requirement against the current metadata (undefined: the table does not exist). */
export function checkRequirement(base: TableMetadata | undefined, r: unknown): void {
  const q = obj(r, 'requirement');
  const fail = (m: string) => { throw commitFailed(`Requirement failed: ${m}`); };
  if (q.type === 'assert-create') { if (base) fail('table already exists'); return; }
  if (!base) { fail('table does not exist'); return; }
  switch (q.type) {
    case 'assert-table-uuid':
      if (q.uuid !== base['table-uuid']) fail(`UUID does not match: expected ${String(q.uuid)} != ${base['table-uuid']}`);
      return;
    case 'assert-ref-snapshot-id': {
      const ref = str(q.ref, 'assert-ref-snapshot-id ref');
      const cur = base.refs[ref];
      const want = q['snapshot-id'];
      if (want === null || want === undefined) { if (cur) fail(`${ref} was created concurrently`); return; }
      if (!cur) fail(`${ref} is missing, expected ${String(want)}`);
      else if (!sameLong(cur['snapshot-id'], want)) fail(`${ref} has changed: expected id ${String(want)} != ${String(cur['snapshot-id'])}`);
      return;
    }
    case 'assert-last-assigned-field-id':
      if (q['last-assigned-field-id'] !== base['last-column-id']) fail(`last assigned field id changed: expected ${String(q['last-assigned-field-id'])} != ${base['last-column-id']}`);
      return;
    case 'assert-current-schema-id':
      if (q['current-schema-id'] !== base['current-schema-id']) fail(`current schema changed: expected ${String(q['current-schema-id'])} != ${base['current-schema-id']}`);
      return;
    case 'assert-last-assigned-partition-id':
      if (q['last-assigned-partition-id'] !== base['last-partition-id']) fail(`last assigned partition id changed: expected ${String(q['last-assigned-partition-id'])} != ${base['last-partition-id']}`);
      return;
    case 'assert-default-spec-id':
      if (q['default-spec-id'] !== base['default-spec-id']) fail(`default partition spec changed: expected ${String(q['default-spec-id'])} != ${base['default-spec-id']}`);
      return;
    case 'assert-default-sort-order-id':
      if (q['default-sort-order-id'] !== base['default-sort-order-id']) fail(`default sort order changed: expected ${String(q['default-sort-order-id'])} != ${base['default-sort-order-id']}`);
      return;
    default:
      throw badRequest(`unknown requirement type: ${String(q.type)}`);
  }
}

interface Pending { schema?: number; spec?: number; order?: number; snapshots: Set<string> }

function setRef(m: TableMetadata, name: string, ref: Json, now: number, p: Pending): void {
  const id = long(ref['snapshot-id'], 'set-snapshot-ref snapshot-id');
  const snap = m.snapshots.find((s) => sameLong(s['snapshot-id'], id));
  if (!snap) throw badRequest(`Cannot set ${name} to unknown snapshot: ${String(id)}`);
  const type = ref.type;
  if (type !== 'branch' && type !== 'tag') throw badRequest('set-snapshot-ref type must be branch or tag');
  if (name === 'main' && type !== 'branch') throw badRequest('main must be a branch');
  const out: Json = { 'snapshot-id': id, type };
  for (const k of ['max-ref-age-ms', 'max-snapshot-age-ms', 'min-snapshots-to-keep']) if (ref[k] !== undefined && ref[k] !== null) out[k] = long(ref[k], k);
  const prev = m.refs[name];
  m.refs[name] = out;
  if (name === 'main' && !(prev && sameLong(prev['snapshot-id'], id))) {
    m['current-snapshot-id'] = id;
    const ts = p.snapshots.has(String(id)) ? (snap['timestamp-ms'] as number) : now;
    m['snapshot-log'].push({ 'timestamp-ms': ts, 'snapshot-id': id });
  }
}

/** Applies one update to `m` in place. */
export function applyUpdate(m: TableMetadata, u: unknown, now: number, p: Pending): void {
  const x = obj(u, 'update');
  switch (x.action) {
    case 'assign-uuid': {
      const uuid = str(x.uuid, 'assign-uuid uuid');
      if (m.schemas.length > 0 && uuid !== m['table-uuid']) throw badRequest('Cannot reassign uuid');
      m['table-uuid'] = uuid;
      return;
    }
    case 'upgrade-format-version': {
      const v = int(x['format-version'], 'format-version');
      if (v > MAX_FORMAT_VERSION) throw badRequest(`Cannot upgrade table to unsupported format version: v${v} (supported: v${MAX_FORMAT_VERSION})`);
      if (v < m['format-version'] && m.schemas.length > 0) throw badRequest(`Cannot downgrade v${m['format-version']} table to v${v}`);
      m['format-version'] = v;
      return;
    }
    case 'add-schema': {
      const schema = checkSchema(x.schema, m['format-version']);
      const { id, existing } = idFor(m.schemas, { ...schema, 'schema-id': 0 }, 'schema-id');
      if (!existing) m.schemas.push({ ...schema, 'schema-id': id });
      const last = x['last-column-id'] === undefined ? 0 : int(x['last-column-id'], 'last-column-id');
      m['last-column-id'] = Math.max(m['last-column-id'], last, maxFieldId(schema));
      p.schema = id;
      return;
    }
    case 'set-current-schema': {
      let id = int(x['schema-id'], 'schema-id');
      if (id === -1) { if (p.schema === undefined) throw badRequest('Cannot set last added schema: no schema has been added'); id = p.schema; }
      if (!m.schemas.some((s) => s['schema-id'] === id)) throw badRequest(`Cannot set current schema to unknown schema: ${id}`);
      m['current-schema-id'] = id;
      return;
    }
    case 'add-spec': {
      checkPartitionSpec(x.spec, currentSchema(m, 'a partition spec'));
      const { spec, last } = checkSpec(x.spec, m['last-partition-id']);
      const { id, existing } = idFor(m['partition-specs'], spec, 'spec-id');
      if (!existing) m['partition-specs'].push({ ...spec, 'spec-id': id });
      m['last-partition-id'] = Math.max(m['last-partition-id'], last);
      p.spec = id;
      return;
    }
    case 'set-default-spec': {
      let id = int(x['spec-id'], 'spec-id');
      if (id === -1) { if (p.spec === undefined) throw badRequest('Cannot set last added spec: no spec has been added'); id = p.spec; }
      if (!m['partition-specs'].some((s) => s['spec-id'] === id)) throw badRequest(`Cannot set default partition spec to unknown spec: ${id}`);
      m['default-spec-id'] = id;
      return;
    }
    case 'add-sort-order': {
      checkSortOrder(x['sort-order'], currentSchema(m, 'a sort order'));
      const order = checkOrder(x['sort-order']);
      const { id, existing } = (order.fields as unknown[]).length === 0 ? { id: 0, existing: m['sort-orders'].some((o) => o['order-id'] === 0) } : idFor(m['sort-orders'].filter((o) => o['order-id'] !== 0), order, 'order-id');
      const assigned = id === 0 && (order.fields as unknown[]).length > 0 ? 1 : id;
      if (!existing) m['sort-orders'].push({ ...order, 'order-id': assigned });
      p.order = assigned;
      return;
    }
    case 'set-default-sort-order': {
      let id = int(x['sort-order-id'], 'sort-order-id');
      if (id === -1) { if (p.order === undefined) throw badRequest('Cannot set last added sort order: no sort order has been added'); id = p.order; }
      if (!m['sort-orders'].some((o) => o['order-id'] === id)) throw badRequest(`Cannot set default sort order to unknown order: ${id}`);
      m['default-sort-order-id'] = id;
      return;
    }
    case 'add-snapshot': {
      const s = obj(x.snapshot, 'snapshot');
      const id = long(s['snapshot-id'], 'snapshot-id');
      long(s['timestamp-ms'], 'snapshot timestamp-ms');
      str(s['manifest-list'], 'snapshot manifest-list');
      obj(s.summary, 'snapshot summary');
      if (m.snapshots.some((e) => sameLong(e['snapshot-id'], id))) throw badRequest(`Snapshot already exists: ${String(id)}`);
      const seq = s['sequence-number'];
      if (m['format-version'] >= 2) {
        long(seq, 'snapshot sequence-number');
        if (BigInt(seq as Long) <= BigInt(m['last-sequence-number']) && s['parent-snapshot-id'] !== undefined && s['parent-snapshot-id'] !== null) {
          throw badRequest(`Cannot add snapshot with sequence number ${String(seq)} older than last sequence number ${String(m['last-sequence-number'])}`);
        }
      }
      const snap: Json = { ...s };
      if (m['format-version'] >= 3 && isLong(s['added-rows'])) {
        const next = (m['next-row-id'] as Long | undefined) ?? 0;
        snap['first-row-id'] = next;
        m['next-row-id'] = Number(next) + Number(s['added-rows']);
      }
      m.snapshots.push(snap);
      if (isLong(seq) && BigInt(seq) > BigInt(m['last-sequence-number'])) m['last-sequence-number'] = seq;
      m['last-updated-ms'] = Number(s['timestamp-ms']);
      p.snapshots.add(String(id));
      return;
    }
    case 'set-snapshot-ref':
      setRef(m, str(x['ref-name'], 'ref-name'), x, now, p);
      return;
    case 'remove-snapshots': {
      const ids = new Set(arr(x['snapshot-ids'], 'snapshot-ids').map((i) => String(long(i, 'snapshot-ids'))));
      m.snapshots = m.snapshots.filter((s) => !ids.has(String(s['snapshot-id'])));
      for (const [name, ref] of Object.entries(m.refs)) if (ids.has(String(ref['snapshot-id']))) delete m.refs[name];
      if (m['current-snapshot-id'] !== undefined && ids.has(String(m['current-snapshot-id']))) delete m['current-snapshot-id'];
      m['snapshot-log'] = m['snapshot-log'].filter((e) => !ids.has(String(e['snapshot-id'])));
      m.statistics = (m.statistics as Json[] ?? []).filter((e) => !ids.has(String(e['snapshot-id'])));
      m['partition-statistics'] = (m['partition-statistics'] as Json[] ?? []).filter((e) => !ids.has(String(e['snapshot-id'])));
      return;
    }
    case 'remove-snapshot-ref': {
      const name = str(x['ref-name'], 'ref-name');
      delete m.refs[name];
      if (name === 'main') delete m['current-snapshot-id'];
      return;
    }
    case 'set-location':
      m.location = str(x.location, 'location').replace(/\/+$/, '');
      return;
    case 'set-properties':
      Object.assign(m.properties, props(x.updates, 'updates'));
      return;
    case 'remove-properties':
      for (const k of arr(x.removals, 'removals')) delete m.properties[str(k, 'removals')];
      return;
    case 'set-statistics': {
      const st = obj(x.statistics, 'statistics');
      const id = long(st['snapshot-id'], 'statistics snapshot-id');
      m.statistics = [...(m.statistics as Json[] ?? []).filter((e) => !sameLong(e['snapshot-id'], id)), st];
      return;
    }
    case 'remove-statistics': {
      const id = long(x['snapshot-id'], 'snapshot-id');
      m.statistics = (m.statistics as Json[] ?? []).filter((e) => !sameLong(e['snapshot-id'], id));
      return;
    }
    case 'set-partition-statistics': {
      const st = obj(x['partition-statistics'], 'partition-statistics');
      const id = long(st['snapshot-id'], 'partition-statistics snapshot-id');
      m['partition-statistics'] = [...(m['partition-statistics'] as Json[] ?? []).filter((e) => !sameLong(e['snapshot-id'], id)), st];
      return;
    }
    case 'remove-partition-statistics': {
      const id = long(x['snapshot-id'], 'snapshot-id');
      m['partition-statistics'] = (m['partition-statistics'] as Json[] ?? []).filter((e) => !sameLong(e['snapshot-id'], id));
      return;
    }
    case 'remove-partition-specs': {
      const ids = arr(x['spec-ids'], 'spec-ids').map((i) => int(i, 'spec-ids'));
      if (ids.includes(m['default-spec-id'])) throw badRequest('Cannot remove the default partition spec');
      m['partition-specs'] = m['partition-specs'].filter((s) => !ids.includes(s['spec-id'] as number));
      return;
    }
    case 'remove-schemas': {
      const ids = arr(x['schema-ids'], 'schema-ids').map((i) => int(i, 'schema-ids'));
      if (ids.includes(m['current-schema-id'])) throw badRequest('Cannot remove the current schema');
      m.schemas = m.schemas.filter((s) => !ids.includes(s['schema-id'] as number));
      return;
    }
    case 'add-encryption-key': {
      const key = obj(x['encryption-key'], 'encryption-key');
      str(key['key-id'], 'encryption-key key-id');
      m['encryption-keys'] = [...((m['encryption-keys'] as Json[] | undefined) ?? []).filter((k) => k['key-id'] !== key['key-id']), key];
      return;
    }
    case 'remove-encryption-key': {
      const id = str(x['key-id'], 'key-id');
      m['encryption-keys'] = ((m['encryption-keys'] as Json[] | undefined) ?? []).filter((k) => k['key-id'] !== id);
      return;
    }
    default:
      throw badRequest(`unknown update action: ${String(x.action)}`);
  }
}

/**
 * The metadata after `updates` on `base` (or on an empty table for a create): the previous file
 * goes into the metadata log (bounded by write.metadata.previous-versions-max, default 100).
 */
export function applyUpdates(base: TableMetadata | undefined, baseLocation: string | null, updates: unknown[], fresh: () => TableMetadata, now: number): TableMetadata {
  if (updates.length > MAX_UPDATES) throw badRequest(`at most ${MAX_UPDATES} updates in one commit`);
  const m: TableMetadata = base ? structuredClone(base) : fresh();
  const p: Pending = { snapshots: new Set() };
  for (const u of updates) applyUpdate(m, u, now, p);
  if (m.schemas.length === 0 || m['current-schema-id'] < 0) throw badRequest('a table needs a current schema');
  if (m['partition-specs'].length === 0) m['partition-specs'].push({ 'spec-id': 0, fields: [] });
  if (m['default-spec-id'] < 0) m['default-spec-id'] = 0;
  if (m['sort-orders'].length === 0) m['sort-orders'].push({ 'order-id': 0, fields: [] });
  if (m['default-sort-order-id'] < 0) m['default-sort-order-id'] = 0;
  if (p.snapshots.size === 0 || m['last-updated-ms'] < now) m['last-updated-ms'] = now;
  if (base && baseLocation) {
    m['metadata-log'].push({ 'timestamp-ms': base['last-updated-ms'], 'metadata-file': baseLocation });
    const keep = Number(m.properties['write.metadata.previous-versions-max'] ?? 100);
    const max = Number.isInteger(keep) && keep >= 1 ? keep : 100;
    if (m['metadata-log'].length > max) m['metadata-log'] = m['metadata-log'].slice(-max);
  }
  // Format v1 readers want the single schema and spec fields as well.
  if (m['format-version'] === 1) {
    m.schema = m.schemas.find((s) => s['schema-id'] === m['current-schema-id']);
    m['partition-spec'] = (m['partition-specs'].find((s) => s['spec-id'] === m['default-spec-id'])?.fields) ?? [];
  }
  return m;
}

/** LoadTableResult's metadata with only the snapshots that refs reach (`snapshots=refs`). */
export function onlyRefSnapshots(m: TableMetadata): TableMetadata {
  const live = new Set(Object.values(m.refs).map((r) => String(r['snapshot-id'])));
  return { ...m, snapshots: m.snapshots.filter((s) => live.has(String(s['snapshot-id']))) };
}
