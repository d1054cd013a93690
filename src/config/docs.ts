// Renders docs/configuration.md from the schema. As a script (`node dist/config/docs.js`,
// `npm run docs:config`) it prints the markdown to stdout.
import { pathToFileURL } from 'node:url';
import type { z } from 'zod';
import { STARTUP_CHECKS } from './checks.js';
import { envName } from './env.js';
import { configSchema, defaultConfig } from './schema.js';
import { isStrict, recordPlaceholder, recordValue, shapeOf, unwrap, type Unwrapped } from './introspect.js';

interface Row {
  path: string[];
  info: Unwrapped;
}

interface Table {
  path: string[];
  info: Unwrapped;
  rows: Row[];
}

/** Objects this deep get their own heading ([section] and [section.sub]); deeper tables
 * (workflow.cluster.default_resources.request, ...) are flattened into their parent. */
const HEADING_DEPTH = 2;

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

function valueAt(v: unknown, path: string[]): unknown {
  for (const k of path) {
    if (typeof v !== 'object' || v === null) return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function renderDefault(v: unknown): string {
  if (v === undefined) return 'unset';
  if (v === '') return 'empty';
  if (typeof v === 'string') return `\`${v}\``;
  if (Array.isArray(v)) return `\`${JSON.stringify(v)}\``;
  if (typeof v === 'object' && v !== null) return Object.keys(v).length === 0 ? 'empty' : `\`${JSON.stringify(v)}\``;
  return `\`${String(v)}\``;
}

function collect(schema: z.ZodType, path: string[], tables: Table[]): void {
  const info = unwrap(schema);
  const table: Table = { path, info, rows: [] };
  tables.push(table);
  const rows = (s: z.ZodType, p: string[]): void => {
    const i = unwrap(s);
    if (i.kind === 'object') {
      // only deeper than HEADING_DEPTH here: flattened into this table
      for (const [k, v] of Object.entries(shapeOf(i.base))) rows(v, [...p, k]);
      return;
    }
    if (i.kind === 'record' && unwrap(recordValue(i.base)).kind === 'object') {
      const value = unwrap(recordValue(i.base));
      for (const [k, v] of Object.entries(shapeOf(value.base))) rows(v, [...p, recordPlaceholder(p), k]);
      return;
    }
    table.rows.push({ path: p, info: i });
  };
  // rows of this table first, then its sub-tables with their own headings
  const subs: Array<[z.ZodType, string[]]> = [];
  for (const [k, v] of Object.entries(shapeOf(info.base))) {
    const p = [...path, k];
    if (unwrap(v).kind === 'object' && p.length <= HEADING_DEPTH) subs.push([v, p]);
    else rows(v, p);
  }
  for (const [s, p] of subs) collect(s, p, tables);
}

function meaning(row: Row): string {
  const parts: string[] = [];
  const desc = (row.info.meta.description ?? '').trim();
  if (desc) parts.push(/[.)]$/.test(desc) ? desc : `${desc}.`);
  if (row.info.kind === 'array') parts.push('A list: TOML syntax in the variable.');
  if (row.info.kind === 'record') parts.push('A table: TOML syntax in the variable.');
  const req = row.info.meta.required;
  if (req === 'always') parts.push('**Required.**');
  else if (req) parts.push(`**Required ${req}.**`);
  return cell(parts.join(' '));
}

function renderTable(t: Table, defaults: unknown): string[] {
  const name = t.path.join('.');
  const out: string[] = [];
  out.push(`${'#'.repeat(t.path.length + 2)} [${name}]`, '');
  const desc = t.info.meta.description;
  if (desc) out.push(`${desc[0].toUpperCase()}${desc.slice(1)}.`, '');
  if (isStrict(t.info.base)) {
    const nested = t.rows.some((r) => r.path.length > t.path.length + 1);
    out.push(`Unknown keys in this table${nested ? ' and in its nested tables' : ''} are rejected.`, '');
  }
  if (name === 'olap') {
    out.push('`<dialect>` is a dialect name; it is lower-cased, from the file and from a variable alike (`SVC_OLAP__JDBC_DRIVERS__POSTGRES__DRIVER_URL` sets `olap.jdbc_drivers.postgres.driver_url`). In the file: `[olap.jdbc_drivers.postgres]` then `driver_url = "..."`.', '');
  }
  if (name === 'redis') {
    out.push('**Addition to the specification:** this section is not in SPEC part 8; the job queues (BullMQ) need a Redis connection.', '');
  }
  if (t.rows.length === 0) return out;
  out.push('| Key | Default | Environment variable | Meaning |', '|---|---|---|---|');
  for (const r of t.rows) {
    out.push(
      `| \`${r.path.join('.')}\` | ${renderDefault(valueAt(defaults, r.path))} | \`${envName(r.path)}\` | ${meaning(r)} |`,
    );
  }
  out.push('');
  return out;
}

/** The markdown of docs/configuration.md. */
export function renderConfigDocs(): string {
  const defaults = defaultConfig();
  const tables: Table[] = [];
  for (const [k, v] of Object.entries(shapeOf(unwrap(configSchema).base))) collect(v, [k], tables);

  const lines: string[] = [
    '# Configuration',
    '',
    '<!-- Generated from src/config/schema.ts by `npm run build && npm run docs:config`; do not edit by hand. -->',
    '',
    'Every key, its default, its environment variable and its meaning. The zod schema in',
    '`src/config/schema.ts` is the single source of this page.',
    '',
    '## How the configuration is read',
    '',
    '1. Layers, lowest to highest: built-in defaults, then the file `svc.toml` in the working directory, then environment variables. The environment wins. A missing `svc.toml` is fine.',
    '2. The variable for `[section] key` is `SVC_<SECTION>__<KEY>` in upper case, two underscores between section and key. A key in a sub-table adds another pair: `[workflow.storage] max_file_bytes` is `SVC_WORKFLOW__STORAGE__MAX_FILE_BYTES`. An underscore inside a name is kept: `[data_api] public_url` is `SVC_DATA_API__PUBLIC_URL`. Each segment is lower-cased to find the key, so a record key such as the dialect in `SVC_OLAP__JDBC_DRIVERS__<DIALECT>__DRIVER_URL` is lower case.',
    '3. Values of variables are typed by the key: numbers are parsed strictly (`12abc` is refused; integer keys take integers only), booleans accept `true`, `false`, `1`, `0`, `yes`, `no` (any case), strings are taken as they are.',
    '4. Lists and tables in a variable use TOML syntax, e.g. `SVC_OIDC__SCOPES=\'["openid","email","profile"]\'` or `SVC_WORKFLOW__PLUGIN_CONFIGURATIONS=\'[{type="x", values={"allowed-images"=["a/*"]}}]\'`. A table given in a variable is merged key by key over the file; a variable for a nested key overrides one for its whole table.',
    '5. An unknown key is silently ignored at the top level and in most sections (a typo leaves the default in place). The tables `workflow.storage`, `workflow.cluster` (with its nested resource tables), `workflow.plugin_host`, `apps.storage` and every entry of `workflow.plugin_configurations` reject unknown keys, from the file and from variables alike. Variables without `__` (such as `SVC_ADMIN_EMAIL`) are not configuration keys.',
    '6. A key marked **Required** has an empty default and a check at start; the server refuses to start without it.',
    '7. Every error is one line naming its source (`svc.toml`, the variable, or `default`) and the problem, e.g. `svc.toml: unknown key workflow.storage.max_bytes`, `SVC_SERVER__PORT: expected a number, got "abc"`, `workflow.storage.prefix must end with "/", got "wf" (from svc.toml)`.',
    '8. In `svc.toml`, a key that takes a string may be written `key = { file = "path" }`: the value is that file\'s content without its trailing newline (a relative path is relative to `svc.toml`\'s directory; at most 64 KiB). A secret then stays out of `svc.toml` while every command reads it, e.g. `master_key = { file = ".run/secrets/master_key" }` as `scripts/serve-dev.sh` writes, or a Kubernetes Secret mounted as files.',
    '',
    '## Startup checks',
    '',
    'They run before `svc serve` listens and in every command that touches the database, in this order; the first failure prints one line and the command exits.',
    '',
    '| Rule | Message |',
    '|---|---|',
    ...STARTUP_CHECKS.map(([rule, message]) => `| ${cell(rule)} | \`${cell(message)}\` |`),
    '',
    '## Keys',
    '',
    'Defaults: "empty" is the empty string (or an empty table), "unset" means the key is absent.',
    'Durations are in the unit the key names.',
    '',
  ];
  for (const t of tables) lines.push(...renderTable(t, defaults));
  lines.push(
    '## Environment variables outside the configuration file',
    '',
    '| Variable | Meaning |',
    '|---|---|',
    '| `SVC_ADMIN_EMAIL` | bootstrap administrator email (`init`, `workspace add-group`); has a fixed default |',
    '| `SVC_ADMIN_PASSWORD` | bootstrap password; random and printed once if unset |',
    '| `SVC_ENGINE_TLS_INSECURE` | `1`, `true` or `yes` skip TLS verification to engines; development only |',
    '| `DATABASE_URL` | compile-time query checking and tests only; the server reads `SVC_DATABASE__URL` |',
    '',
  );
  return lines.join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.stdout.write(renderConfigDocs());
}
