// The cross-workspace matrix of issue 24 (test/storage-tenancy-*.test.ts): the victim
// workspace's objects, read straight from the bucket before and after the other workspace's
// principals tried every route, must be the same keys with the same bytes.
import assert from 'node:assert/strict';
import type { ObjectStore } from '../../src/storage/object-store.js';

/** Every object under the prefixes: key -> content. */
export async function objectsUnder(s3: ObjectStore, prefixes: string[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const p of prefixes) {
    for (const o of await s3.list(p)) out.set(o.key, Buffer.from((await s3.get(o.key))!).toString());
  }
  return out;
}

/** What a principal got back: never a success, never a byte of the victim's secrets. */
export function assertRefused(what: string, status: number, body: string, allowed: number[], secrets: string[]): void {
  assert.ok(allowed.includes(status), `${what}: ${status} ${body.slice(0, 300)}`);
  for (const s of secrets) assert.ok(!body.includes(s), `${what}: the answer carries ${s}`);
}
