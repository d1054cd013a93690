#!/usr/bin/env node
// Entry point of the `svc` binary: runs the compiled CLI (npm run build writes dist/).
//
// This file is CommonJS (bin/package.json) so that it runs before libuv's thread pool starts: the
// pool serves sign-in (argon2), token signing, file I/O, DNS and every DuckDB call, its size is
// read once when it starts, and an ES module entry has already started it (the module loader
// reads files through it). 16 threads by default, of which the embedded engine uses at most 12
// (docs/engines.md "Thread pool"); an operator's UV_THREADPOOL_SIZE wins.
if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = '16';
const { existsSync } = require('node:fs');
const path = require('node:path');
const nodeModule = require('node:module');

const NEEDED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
// A checkout on a machine whose Node.js is older than the project's (these machines have 20):
// run on the Node 24 that scripts/node.sh put under the project, so `npx svc ...` and the scripts
// agree. The child gets the terminal, the environment (the pool size too) and the signals; its
// exit is ours.
const local = path.join(__dirname, '..', '.tools', 'node', 'node_modules', '.bin', 'node');
if (major < NEEDED_MAJOR && existsSync(local)) {
  const child = require('node:child_process').spawn(local, [__filename, ...process.argv.slice(2)], { stdio: 'inherit' });
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => child.kill(s));
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
    }
    process.exit(code ?? 1);
  });
} else {
  // V8's code cache on disk (Node 22.1+): a later start skips compiling what it loads again
  // (os.tmpdir()/node-compile-cache; a directory that cannot be written leaves it off).
  if (nodeModule.enableCompileCache) nodeModule.enableCompileCache();
  require('./load-hooks.js').ioredisCommandsInDictionaryMode();
  // The bundle the build writes (scripts/bundle.mjs): a few files instead of about a thousand
  // modules to resolve and read; the compiled tree when there is none (a bare `tsc`).
  const bundle = path.join(__dirname, '..', 'dist', 'bundle', 'main.js');
  import(existsSync(bundle) ? require('node:url').pathToFileURL(bundle).href : '../dist/cli/main.js').then((m) => m.main(process.argv)).catch((err) => {
    process.stderr.write(`svc: ${err && err.message ? err.message : String(err)}\n`);
    process.exit(1);
  });
}

