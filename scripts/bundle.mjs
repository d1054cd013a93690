// Bundles the compiled CLI (dist/cli/main.js and what it imports) into dist/bundle/, the code
// bin/svc.js runs (docs/operations.md "Start-up time"). Loading about a thousand modules one by
// one (resolution, a file read and a compilation each) was most of the start of every command:
// in one file per chunk they load in a few reads. Dynamic imports stay chunks of their own, so
// what a command loads lazily is still loaded late.
//
// Kept out (loaded from node_modules as before):
//  - native modules and what loads them: DuckDB, argon2, msgpackr and its extract;
//  - heavy clients loaded on first use: the Kubernetes client, dockerode, the AWS SDK and Smithy,
//    playwright;
//  - packages svc loads lazily with createRequire, which would otherwise be there twice (bullmq with
//    ioredis, yaml) or loaded at every start (avsc, on the first Avro file), bull-board (its UI's files by path), and packages that start workers from a
//    file path (pino and its transports) or read their own files (@fastify/swagger).
// Rewritten on the way in:
//  - `import.meta.url` in svc's own modules becomes the URL of the compiled file it came from, so
//    the files they read beside them (migrations, package.json, the catalog's YAML, ui/dist, the
//    prebuilt API document) are found as before;
//  - `__dirname` and `__filename` in a bundled package (ioredis, before it was kept out) name the
//    package's own folder and file under node_modules, found from the chunk's URL; in an ES module
//    they would be a ReferenceError on the path that uses them;
//  - fastify, avvio and find-my-way: what they compile or queue per route as it is added, done on
//    first use or once (scripts/bundle-rewrites.mjs); zod's translations other than English; a
//    few packages some importers load at their require() for a later use (below).
// Every chunk is then made ASCII (asciiOnly, below).
import { build } from 'esbuild';
import path from 'node:path';
import { createRequire } from 'node:module';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { FASTIFY_REWRITES, asciiEscaped } from './bundle-rewrites.mjs';

const root = path.resolve(import.meta.dirname, '..');
const dist = path.join(root, 'dist');
const outdir = path.join(dist, 'bundle');

export const EXTERNAL = [
  '@duckdb/*', '@node-rs/*', 'msgpackr', 'msgpackr-extract',
  '@kubernetes/client-node', 'dockerode', '@aws-sdk/*', '@smithy/*', 'playwright-core',
  'bullmq', 'ioredis', 'yaml', 'avsc', '@bull-board/*', 'pino', 'pino-pretty', 'thread-stream', '@fastify/swagger',
  // loaded on first use only, if ever (fast-json-stringify with ajv for a route's first compiled
  // answer, fastify's inject for the queue dashboard, its default compilers never): in the bundle
  // their 900 KiB would be read and compiled at every start all the same
  'fast-json-stringify', '@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler', 'light-my-request',
];

const fromBundle = (file) => JSON.stringify(path.relative(outdir, file).split(path.sep).join('/'));

/** The rewrites above, of svc's compiled modules and of bundled packages that name their own path. */
const rewrites = {
  name: 'svc-rewrites',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?js$/ }, async (args) => {
      if (args.path.startsWith(outdir + path.sep)) return undefined;
      let text = await readFile(args.path, 'utf8');
      if (args.path.startsWith(dist + path.sep)) {
        text = text.replaceAll('import.meta.url', `new URL(${fromBundle(args.path)}, import.meta.url).href`);
        return { contents: text, loader: 'js' };
      }
      if (!/\b__(dirname|filename)\b/.test(text)) return undefined;
      // (the chunk's URL from its banner: `import.meta` here would make esbuild read the package as ESM)
      const own = `var __filename = __svcFileURLToPath(new URL(${fromBundle(args.path)}, __svcChunkUrl)), __dirname = __svcDirname(__filename);\n`;
      return { contents: own + text, loader: 'js' };
    });
  },
};

/**
 * zod's `locales` namespace (`z.locales`, about 360 KiB of translated messages, in every command's
 * start) holds only English, the one zod is configured with and svc uses: the others were read,
 * compiled and evaluated at every start for nothing.
 */
const englishOnly = {
  name: 'svc-zod-english',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => (
      args.importer.includes(`${path.sep}node_modules${path.sep}zod${path.sep}`) ? { path: path.join(args.resolveDir, '../locales/index.js'), namespace: 'svc-zod-english' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'svc-zod-english' }, (args) => ({
      contents: "export { default as en } from './en.js';\n", resolveDir: path.dirname(args.path), loader: 'js',
    }));
  },
};

/**
 * Packages that some importers load at their require() for what a request needs later, if ever:
 * 15-25 ms of every `svc serve` start. @fastify/static (the console's files, src/api/routes/ui.ts)
 * and @fastify/send under it load mime's table of about 1 000 types (to choose a content type,
 * which ui.ts sets itself), http-errors with depd's stack inspection (for a failed send) and glob
 * (only with `wildcard: false`, which svc does not use); fastify's server module loads Node's
 * http2 (only for `http2: true`, which svc does not use); commander loads Node's child_process
 * (only for stand-alone executable subcommands, which svc has none of). Those importers get a
 * stand-in that loads the package when called.
 */
const FASTIFY_STATIC = /[\\/]node_modules[\\/]@fastify[\\/](static|send)[\\/]/;
const LAZY = {
  // @fastify/static sets default_type at its load: kept until mime loads, then given to it.
  mime: { from: FASTIFY_STATIC, body: (real) => `let m, defaultType;
const load = () => { if (!m) { m = require(${real}); if (defaultType !== undefined) m.default_type = defaultType; } return m; };
module.exports = {
  getType: (p) => load().getType(p), getExtension: (t) => load().getExtension(t), define: (...a) => load().define(...a),
  get default_type() { return m ? m.default_type : defaultType ?? load().default_type; },
  set default_type(v) { defaultType = v; if (m) m.default_type = v; },
};` },
  'http-errors': { from: FASTIFY_STATIC, body: (real) => `module.exports = (...a) => require(${real})(...a);` },
  glob: { from: FASTIFY_STATIC, body: (real) => `module.exports = { glob: (...a) => require(${real}).glob(...a) };` },
  'node:http2': {
    from: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]server\.js$/,
    body: (real) => `module.exports = { createServer: (...a) => require(${real}).createServer(...a), createSecureServer: (...a) => require(${real}).createSecureServer(...a) };`,
  },
  'node:child_process': {
    from: /[\\/]node_modules[\\/]commander[\\/]lib[\\/]command\.js$/,
    body: (real) => `module.exports = { spawn: (...a) => require(${real}).spawn(...a) };`,
  },
};
const lazyPackages = {
  name: 'svc-lazy-packages',
  setup(b) {
    b.onResolve({ filter: /^(mime|http-errors|glob|node:http2|node:child_process)$/ }, async (args) => {
      if (args.pluginData === 'svc-lazy-real' || !LAZY[args.path].from.test(args.importer)) return undefined;
      if (args.path.startsWith('node:')) return { path: args.path, namespace: 'svc-lazy', pluginData: args.path };
      const real = await b.resolve(args.path, { resolveDir: args.resolveDir, kind: args.kind, pluginData: 'svc-lazy-real' });
      if (real.errors.length) return { errors: real.errors };
      return { path: real.path, namespace: 'svc-lazy', pluginData: args.path };
    });
    b.onLoad({ filter: /.*/, namespace: 'svc-lazy' }, (args) => ({
      contents: LAZY[args.pluginData].body(JSON.stringify(args.path)), resolveDir: args.path.startsWith('node:') ? root : path.dirname(args.path), loader: 'js',
    }));
  },
};

/**
 * A package kept out is found from dist/bundle at run time, not from the folder of the package
 * that imports it: the build fails if the two are different copies (a nested node_modules), which
 * would load a version the importer was not installed with.
 */
const EXTERNAL_MATCH = new RegExp(`^(${EXTERNAL.map((e) => e.replace(/[.]/g, '\\.').replace(/\/\*$/, '/[^/]+')).join('|')})(/|$)`);
const sameExternals = {
  name: 'svc-same-externals',
  setup(b) {
    b.onResolve({ filter: EXTERNAL_MATCH }, (args) => {
      const from = (dir) => { try { return createRequire(path.join(dir, 'x.js')).resolve(args.path); } catch { return undefined; } };
      const theirs = from(args.resolveDir);
      const ours = from(outdir);
      if (theirs && ours && theirs !== ours) return { errors: [{ text: `${args.path}: ${args.importer} would get ${ours} from the bundle, not its own ${theirs} (scripts/bundle.mjs sameExternals)` }] };
      return undefined;
    });
  },
};

await rm(outdir, { recursive: true, force: true });
await build({
  entryPoints: [path.join(dist, 'cli/main.js')],
  bundle: true, splitting: true, format: 'esm', platform: 'node', target: 'node24',
  outdir, external: EXTERNAL, logLevel: 'warning', legalComments: 'none',
  // CommonJS packages inside the bundle call require() for Node's own modules and kept-out packages.
  banner: { js: "import { createRequire as __svcCreateRequire } from 'node:module'; import { fileURLToPath as __svcFileURLToPath } from 'node:url'; import { dirname as __svcDirname } from 'node:path'; const __svcChunkUrl = import.meta.url; const require = __svcCreateRequire(__svcChunkUrl);" },
  plugins: [sameExternals, ...FASTIFY_REWRITES, lazyPackages, rewrites, englishOnly],
});
await asciiOnly();

/** Every chunk in ASCII where that changes nothing (asciiEscaped, scripts/bundle-rewrites.mjs). */
async function asciiOnly() {
  for (const file of await readdir(outdir)) {
    if (!file.endsWith('.js')) continue;
    const text = await readFile(path.join(outdir, file), 'utf8');
    const ascii = await asciiEscaped(text);
    if (ascii === null) console.warn(`bundle: ${file} keeps non-ASCII characters outside comments (a pattern or a tagged template): left as it is`);
    else if (ascii !== text) await writeFile(path.join(outdir, file), ascii);
  }
}
