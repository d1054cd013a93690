// A bounded map whose entries expire after a fixed time; the oldest entry goes first when full.
export class TtlCache<K, V> {
  private readonly map = new Map<K, { v: V; at: number }>();

  constructor(private readonly max: number, private readonly ttlMs: number, private readonly now: () => number = Date.now) {}

  get(k: K): V | undefined {
    const e = this.map.get(k);
    if (!e) return undefined;
    if (this.now() - e.at >= this.ttlMs) { this.map.delete(k); return undefined; }
    return e.v;
  }

  set(k: K, v: V): void {
    this.map.delete(k);
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value as K);
    this.map.set(k, { v, at: this.now() });
  }

  delete(k: K): void { this.map.delete(k); }
  clear(): void { this.map.clear(); }
  get size(): number { return this.map.size; }
}
