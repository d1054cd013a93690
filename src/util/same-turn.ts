// Group commit: what callers hand over in the same turn of the event loop is passed on once.

/**
 * Gathers the items callers hand over in the same turn of the event loop and passes them to
 * `flush` once, in the check phase (setImmediate) after it. Each caller's promise settles as the
 * flush holding its items does, so a caller still waits until its items are stored, as it did
 * when it stored them itself. A batch holding `max` items or more takes no more.
 */
export function sameTurn<T, R = void>(flush: (items: T[]) => Promise<R>, max: number): (items: T[]) => Promise<R> {
  let batch: { items: T[]; done: Promise<R> } | undefined;
  return (items) => {
    if (!batch || batch.items.length >= max) {
      const mine: T[] = [];
      const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        if (batch?.items === mine) batch = undefined;
        return flush(mine);
      });
      batch = { items: mine, done };
    }
    batch.items.push(...items);
    return batch.done;
  };
}
