// Rewrites of svc's bundle (scripts/bundle.mjs) that must not change what it does: fastify, avvio
// and find-my-way, as esbuild plugins, each replacing code they run at every `svc serve` start
// with code that does the same later or once (docs/operations.md "Start-up time"), and failing
// the build when the code it replaces is not found (an upgrade) rather than bundling the original
// silently; and the chunks' characters made ASCII. test/bundle-rewrites.test.ts bundles fastify
// with them and checks it behaves as the original.
import { readFile } from 'node:fs/promises';
import { transform } from 'esbuild';

/**
 * An esbuild plugin that rewrites one file of a package: each anchor (a string or a pattern) must
 * occur exactly once, or the build fails (an upgrade changed the code), rather than bundling the
 * original silently; `append` goes at the end of the file.
 */
function rewrite(name, file, edits, append = '') {
  return {
    name,
    setup(b) {
      b.onLoad({ filter: file }, async (args) => {
        let text = await readFile(args.path, 'utf8');
        for (const [anchor, replacement] of edits) {
          const found = typeof anchor === 'string' ? text.split(anchor).length - 1 : (text.match(new RegExp(anchor.source, 'g')) ?? []).length;
          if (found !== 1) throw new Error(`${args.path}: the code ${name} (scripts/bundle-rewrites.mjs) replaces was found ${found} times, not once`);
          text = text.replace(anchor, () => replacement);
        }
        return { contents: text + append, loader: 'js' };
      });
    },
  };
}

/**
 * find-my-way compiles each static router node's prefix check of 2-15 characters with `new
 * Function` (a chain of charCodeAt comparisons): 360 functions for svc's ~200 routes, parsed and
 * compiled at every `svc serve` start out of reach of V8's compile cache (42 ms of a CPU profile,
 * which inflates compiling; with undici's import, 19 ms of main-thread CPU). A closure over
 * `startsWith` answers the same (the caller has matched the first character already; its own
 * matcher for long prefixes is the same check with indexOf). The build fails if the code it
 * replaces is not found (a find-my-way upgrade), rather than silently bundling the original.
 */
const PREFIX_MATCH = /const lines = \[\][^]*?return new Function\('path', 'i', `'use strict'\\nreturn \$\{lines\.join\(' && '\)\}`\)/;
export const routerPrefixMatch = rewrite('svc-router-prefix-match', /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]node\.js$/,
  [[PREFIX_MATCH, 'return function matchPrefix (path, i) { return path.startsWith(prefix, i) }']]);

/**
 * find-my-way also compiles, with `new Function`, two functions per route as it is added: the one
 * that builds its parameters object and the one that picks a handler by constraints (version,
 * host), which a router whose routes have no constraints never calls. About 450 functions parsed
 * and compiled at every `svc serve` start (10 ms on a slow machine). Each is compiled, as written,
 * when it is first called instead. The build fails if the code it replaces is not found.
 */
const LAZY_PARAMS = '_createParamsObject: this._compileCreateParamsObject(params)';
const LAZY_MATCHER = 'this._compileGetHandlerMatchingConstraints(constrainer, constraints)';
export const routerLazyCompile = rewrite('svc-router-lazy-compile', /[\\/]node_modules[\\/]find-my-way[\\/]lib[\\/]handler-storage\.js$/, [
  [LAZY_PARAMS, '_createParamsObject: svcLazyParamsObject(this, params)'],
  [LAZY_MATCHER, 'this._getHandlerMatchingConstraints = svcLazyMatcher(this, constrainer)'],
], `
function svcLazyParamsObject (storage, params) {
  let compiled
  return function _createParamsObject (param0, param1, param2, param3, extraParams) {
    return (compiled ??= storage._compileCreateParamsObject(params))(param0, param1, param2, param3, extraParams)
  }
}
function svcLazyMatcher (storage, constrainer) {
  return function (derivedConstraints) {
    storage._compileGetHandlerMatchingConstraints(constrainer)
    return storage._getHandlerMatchingConstraints(derivedConstraints)
  }
}
`);

/**
 * fastify finishes each route in an avvio `after` of its own (the route's error handler, body
 * limit and hooks are read once the plugin that declared it has run): an avvio plugin per route,
 * with its queue, timer and turns of the event loop, about 270 at every `svc serve` start. In the
 * bundle, consecutive routes of one instance, declared while the same avvio plugin loads, share
 * one `after`, which finishes them in the order they were declared; a route declared after
 * anything else was queued on the boot (a plugin, an `after`) or by another plugin (one of
 * fastify-plugin's shares the instance) starts a new one, so each is finished at the same point of
 * the boot as before. avvio counts what is queued (`_svcAdds`; without the count, one `after` per
 * route as before). The build fails if the code it replaces is not found.
 */
const ROUTE_AFTER = 'this.after((notHandledErr, done) => {';
const ADD_PLUGIN = 'Boot.prototype._addPlugin = function (pluginFn, opts, isAfter) {';
export const routeAfterBatch = rewrite('svc-route-after-batch', /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]route\.js$/,
  [[ROUTE_AFTER, 'svcBatchedAfter(this, avvio, (notHandledErr, done) => {']], `
const kSvcRouteBatch = Symbol('svc.routeBatch')
function svcBatchedAfter (instance, boot, fn) {
  // (an avvio that does not count what is queued: one after per route, as fastify does)
  if (typeof boot._svcAdds !== 'number') return instance.after(fn)
  const open = Object.hasOwn(instance, kSvcRouteBatch) ? instance[kSvcRouteBatch] : null
  if (open !== null && open.adds === boot._svcAdds && open.loading === boot._current[0]) {
    open.fns.push(fn)
    return
  }
  // loading: the avvio plugin whose queue the after goes to (a plugin that shares the instance,
  // fastify-plugin's, has a queue of its own)
  const batch = { fns: [fn], adds: 0, loading: boot._current[0] }
  instance[kSvcRouteBatch] = batch
  instance.after((notHandledErr, done) => {
    if (instance[kSvcRouteBatch] === batch) instance[kSvcRouteBatch] = null
    for (const f of batch.fns) f(notHandledErr, svcNoop)
    done(notHandledErr)
  })
  batch.adds = boot._svcAdds
}
function svcNoop () {}
`);
export const avvioCountsAdds = rewrite('svc-avvio-counts-adds', /[\\/]node_modules[\\/]avvio[\\/]index\.js$/,
  [[ADD_PLUGIN, `${ADD_PLUGIN}\n  this._svcAdds++`]], '\nBoot.prototype._svcAdds = 0\n');

/** In the order the bundle applies them. */
export const FASTIFY_REWRITES = [routerPrefixMatch, routerLazyCompile, routeAfterBatch, avvioCountsAdds];

/**
 * A chunk in ASCII, if that changes nothing; null if it would. esbuild escapes non-ASCII
 * characters in strings and identifiers but keeps them in comments (a dash in a comment of svc's,
 * kysely's documentation), in regular expressions and in tagged templates, whose raw text a tag
 * reads: one such character makes the whole chunk a two-byte string in V8, slower to decode at
 * every load (Node's ES module loader decodes it as UTF-8) and twice the memory. Each becomes its
 * `\uXXXX` escape, kept only if it is the same program: the code without comments and whitespace
 * (esbuild's) is unchanged, so every such character was in a comment (in a pattern `\—` would
 * have become `\\u2014`; a tag would read the escape).
 */
export async function asciiEscaped(text) {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  const ascii = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const bare = async (code) => (await transform(code, { minifyWhitespace: true, charset: 'utf8', loader: 'js' })).code;
  return await bare(ascii) === await bare(text) ? ascii : null;
}
