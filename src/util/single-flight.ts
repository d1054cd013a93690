// Concurrent misses of one cache key share one load: a burst of requests for a flow nobody asked
// for lately (a cold replica, a flow just saved) makes one read, not one per request.
export class SingleFlight<K, V> {
  /** loads in flight, by key: bounded by the callers waiting on them, each removed as it settles */
  private readonly loading = new Map<K, Promise<V>>();

  /** The load in flight for `k`, or a new one started with `load`. */
  run(k: K, load: () => Promise<V>): Promise<V> {
    const running = this.loading.get(k);
    if (running) return running;
    const p = load().finally(() => {
      if (this.loading.get(k) === p) this.loading.delete(k);
    });
    this.loading.set(k, p);
    return p;
  }

  /** Later callers of `k` start a new load (the one in flight may predate a change). */
  forget(k: K): void {
    this.loading.delete(k);
  }
}
