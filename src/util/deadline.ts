// A bounded wait: a request that depends on something slow or gone answers after a known time
// instead of hanging (the work may still finish later; the caller decides what that means).

/** Whether `p` settles within `ms` (false when not; it rejects as `p` does; the timer never outlives the answer). */
export async function endsWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => { timer = setTimeout(r, ms, false); });
  try { return await Promise.race([p.then(() => true), late]); } finally { clearTimeout(timer); }
}

/** Settles as `p` does, or rejects with `onTimeout()` after `ms` (the timer never outlives it). */
export async function within<T>(p: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(onTimeout()), ms); });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
