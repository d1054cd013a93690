// inTurn (src/util/in-turn.ts): the pieces of work of one key run one after another in the order
// asked, other keys beside them; a failure reaches its caller only; the map empties. No I/O.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { inTurn, type Turns } from '../src/util/in-turn.js';

const tick = () => new Promise((r) => setImmediate(r));

test('one key in order, one at a time; other keys beside it; errors stay with their caller; the map empties', async () => {
  const turns: Turns<string> = new Map();
  const log: string[] = [];
  let running = 0; let most = 0;
  const piece = (key: string, n: number, fail = false) => inTurn(turns, key, async () => {
    running++; most = Math.max(most, running);
    log.push(`${key}${n}+`);
    await tick(); await tick();
    log.push(`${key}${n}-`);
    running--;
    if (fail) throw new Error(`${key}${n} failed`);
    return n;
  });
  const results = await Promise.allSettled([piece('a', 1), piece('a', 2, true), piece('b', 1), piece('a', 3)]);
  assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)), [1, 'a2 failed', 1, 3]);
  const a = log.filter((x) => x.startsWith('a'));
  assert.deepEqual(a, ['a1+', 'a1-', 'a2+', 'a2-', 'a3+', 'a3-'], 'key a: in order, never two at once');
  assert.ok(log.indexOf('b1+') < log.indexOf('a1-'), 'key b ran beside key a');
  assert.equal(most, 2);
  await tick();
  assert.equal(turns.size, 0, 'no entry once the work is done');
});
