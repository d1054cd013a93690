// Module load hooks of the `svc` binary, installed by bin/svc.js before the bundle loads.
const nodeModule = require('node:module');
/**
 * ioredis defines each of its ~290 commands and their Buffer forms one by one on a class's
 * prototype, which V8 keeps in fast mode: every addition copies the prototype's property
 * descriptors, so the 580 additions are quadratic (25-45 ms of every start that loads ioredis,
 * `svc serve`'s first). One property added and deleted first puts the prototype in
 * dictionary mode, where they take about 1 ms; V8 makes it fast again, in one step, when it is first
 * used as a prototype. The source is rewritten as Node loads it (module.registerHooks, Node 22.15+);
 * without the line it expects (another ioredis), it is loaded unchanged (test/startup.test.ts
 * fails on the installed version). Returns whether it has rewritten it, for that test.
 */
function ioredisCommandsInDictionaryMode() {
  const state = { rewritten: false };
  if (!nodeModule.registerHooks) return state;
  const FILE = '/node_modules/ioredis/built/utils/Commander.js';
  const BEFORE = 'const commands = commands_1.list.filter(';
  nodeModule.registerHooks({
    load(url, context, nextLoad) {
      const loaded = nextLoad(url, context);
      if (!url.endsWith(FILE)) return loaded;
      const source = String(loaded.source);
      if (!source.includes(BEFORE)) return loaded;
      state.rewritten = true;
      return { ...loaded, source: source.replace(BEFORE, `Commander.prototype.__svcDictionary = 0; delete Commander.prototype.__svcDictionary; ${BEFORE}`) };
    },
  });
  return state;
}

module.exports = { ioredisCommandsInDictionaryMode };
