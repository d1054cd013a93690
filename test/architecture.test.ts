// The shape of src/, checked on every run: no import cycle, imports point down the layers, no
// source file over 500 lines (nor test file: test/ is read and changed as often). Static analysis
// of the source (madge); no service runs.
//
// Only imports that exist at run time count: `import type` is erased by the compiler, so it can
// neither form a cycle at load time nor drag a module in. That is what lets every module name the
// `Services` type that services.ts (a composition root) builds from them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import madge from 'madge';

const SRC = join(import.meta.dirname, '..', 'src');
const TEST = import.meta.dirname;

/**
 * The layers, top first (docs/architecture.md draws them). A module may import from its own layer
 * and the layers below it, never from one above. Each entry is a directory under src/, a file at
 * its root (without .ts), or a file inside a directory (with .ts) placed apart from its directory.
 * The queue registry and startWorker (src/queue) are infrastructure any domain may use, below the
 * workers of src/jobs. A new directory must be placed here.
 */
const LAYERS: Array<{ layer: string; parts: string[] }> = [
  { layer: 'entry', parts: ['cli', 'bootstrap', 'services'] },
  { layer: 'api', parts: ['api'] },
  { layer: 'jobs', parts: ['jobs'] },
  { layer: 'features', parts: ['workflows', 'runners', 'catalog', 'engines', 'queries', 'policy', 'idp', 'automation', 'data-api', 'apps'] },
  { layer: 'core', parts: ['identity', 'auth', 'access', 'audit', 'workspaces', 'secrets'] },
  { layer: 'platform', parts: ['db', 'config', 'log', 'storage', 'util', 'clock', 'errors', 'metrics', 'version', 'iceberg', 'queue'] },
];

const MAX_LINES = 500;

const rank = new Map(LAYERS.flatMap((l, i) => l.parts.map((p) => [p, i] as const)));
const partOf = (file: string) => (rank.has(file) ? file : file.includes('/') ? file.slice(0, file.indexOf('/')) : file.replace(/\.ts$/, ''));

let graph: Promise<{ deps: Record<string, string[]>; cycles: string[][]; skipped: string[] }> | undefined;
function load() {
  return (graph ??= madge(SRC, { fileExtensions: ['ts'], tsConfig: join(SRC, '..', 'tsconfig.json'), detectiveOptions: { ts: { skipTypeImports: true } } })
    .then((res) => ({ deps: res.obj(), cycles: res.circular(), skipped: res.warnings().skipped })));
}

test('every import of src/ resolves (else the checks below would miss it)', async () => {
  const { deps, skipped } = await load();
  assert.deepEqual(skipped, []);
  assert.ok(Object.keys(deps).length > 50, 'madge read the source tree');
});

test('no import cycle in src/', async () => {
  const { cycles } = await load();
  assert.deepEqual(cycles.map((c) => c.join(' -> ')), []);
});

test('every part of src/ sits in a layer', async () => {
  const { deps } = await load();
  const unplaced = [...new Set(Object.keys(deps).map(partOf))].filter((p) => !rank.has(p));
  assert.deepEqual(unplaced, [], 'place these in LAYERS (test/architecture.test.ts) and in docs/architecture.md');
});

test('imports point down the layers', async () => {
  const { deps } = await load();
  const upward: string[] = [];
  for (const [file, imported] of Object.entries(deps)) {
    const from = rank.get(partOf(file));
    for (const dep of imported) {
      const to = rank.get(partOf(dep));
      if (from !== undefined && to !== undefined && to < from) upward.push(`${file} (${LAYERS[from].layer}) -> ${dep} (${LAYERS[to].layer})`);
    }
  }
  assert.deepEqual(upward, []);
});

/**
 * The .ts and .sh files under `dir` longer than MAX_LINES, relative to `dir`. With `skipGenerated`,
 * a file a tool wrote (its opening says `@generated` or "auto-generated") is passed over: it is
 * no one's to split.
 */
function tooLong(dir: string, skipGenerated = false): string[] {
  const long: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|sh)$/.test(e.name)) {
        const text = readFileSync(p, 'utf8');
        const lines = text.split('\n').length - 1;
        if (lines > MAX_LINES && !(skipGenerated && /@generated|auto-generated/i.test(text.slice(0, 300)))) long.push(`${relative(dir, p)}: ${lines} lines`);
      }
    }
  };
  walk(dir);
  return long;
}

test(`no source file over ${MAX_LINES} lines`, () => {
  assert.deepEqual(tooLong(SRC), [], 'split these by concern (docs/architecture.md)');
});

test(`no test file over ${MAX_LINES} lines`, () => {
  assert.deepEqual(tooLong(TEST, true), [], 'split these by concern, shared set-up in test/helpers/ (docs/architecture.md)');
});

test('only src/storage reaches the raw object store: everything else goes through the storage rule', () => {
  // The raw store (Services.s3) performs any call on any key; src/storage/tenant-store.ts puts
  // each call through the ownership decision first (docs/architecture.md, the storage rule).
  const raw = /\bs3\s*\.\s*(put|putStream|get|getStream|head|delete|list|deletePrefix)\s*\(/;
  const offenders: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) { if (p !== join(SRC, 'storage')) walk(p); } else if (e.name.endsWith('.ts')) {
        readFileSync(p, 'utf8').split('\n').forEach((line, i) => { if (raw.test(line)) offenders.push(`${relative(SRC, p)}:${i + 1}`); });
      }
    }
  };
  walk(SRC);
  assert.deepEqual(offenders, []);
});
