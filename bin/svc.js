#!/usr/bin/env node
// Entry point of the `svc` binary: runs the compiled CLI (npm run build writes dist/).
//
// This file is CommonJS (bin/package.json) so that it runs before libuv's thread pool starts: the
// pool serves sign-in (argon2), token signing, file I/O, DNS and every DuckDB call, its size is
// read once when it starts, and an ES module entry has already started it (the module loader
// reads files through it). 16 threads by default, of which the embedded engine uses at most 12
// (docs/engines.md "Thread pool"); an operator's UV_THREADPOOL_SIZE wins.
if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = '16';
// The AWS SDK warns on every start about its future Node requirement; that is for the
// maintainers (docs/decisions.md), not a line operators should see on each command.
const emitWarning = process.emitWarning;
process.emitWarning = function (warning, ...rest) {
  const text = typeof warning === 'string' ? warning : warning && warning.message;
  const type = (rest[0] && typeof rest[0] === 'object' ? rest[0].type : rest[0]) || (warning && warning.name);
  if (type === 'NodeVersionSupportWarning' || /AWS SDK for JavaScript \(v3\)/.test(String(text))) return;
  return emitWarning.call(process, warning, ...rest);
};
import('../dist/cli/main.js').then((m) => m.main(process.argv)).catch((err) => {
  process.stderr.write(`svc: ${err && err.message ? err.message : String(err)}\n`);
  process.exit(1);
});
