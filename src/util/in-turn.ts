// Work on one key, one piece after another, in the order asked; other keys run beside it. The map
// holds the last piece queued per key, and a key leaves it once its queue has run dry, so it holds
// no more entries than keys with work waiting.
export type Turns<K> = Map<K, Promise<unknown>>;

export function inTurn<K, T>(turns: Turns<K>, key: K, fn: () => Promise<T>): Promise<T> {
  const before = turns.get(key);
  const mine = before ? before.then(fn, fn) : fn();
  // Only the order is kept here: `mine`'s error reaches its caller, and the next piece runs regardless.
  const settled = mine.then(() => undefined, () => undefined);
  turns.set(key, settled);
  void settled.then(() => { if (turns.get(key) === settled) turns.delete(key); });
  return mine;
}
