// A bounded map whose entries expire after a fixed time; the oldest entry goes first when full.
// Bounded by count, and optionally in bytes too: `bytes.sizeOf` estimates an entry's size.
export interface ByteBound<K, V> { max: number; sizeOf: (k: K, v: V) => number }

export class TtlCache<K, V> {
  private readonly map = new Map<K, { v: V; at: number; size: number }>();
  private used = 0;

  constructor(
    private readonly max: number,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly bytes?: ByteBound<K, V>,
  ) {}

  get(k: K): V | undefined {
    const e = this.map.get(k);
    if (!e) return undefined;
    if (this.now() - e.at >= this.ttlMs) { this.delete(k); return undefined; }
    return e.v;
  }

  set(k: K, v: V): void {
    this.delete(k);
    const size = this.bytes ? this.bytes.sizeOf(k, v) : 0;
    if (this.bytes && size > this.bytes.max) return; // larger than the whole budget: not kept
    while (this.map.size > 0 && (this.map.size >= this.max || (this.bytes && this.used + size > this.bytes.max))) {
      this.delete(this.map.keys().next().value as K);
    }
    this.map.set(k, { v, at: this.now(), size });
    this.used += size;
  }

  delete(k: K): void {
    const e = this.map.get(k);
    if (!e) return;
    this.map.delete(k);
    this.used -= e.size;
  }

  clear(): void { this.map.clear(); this.used = 0; }
  get size(): number { return this.map.size; }
  /** Bytes held, as `bytes.sizeOf` counts them (0 without a byte bound). */
  get byteSize(): number { return this.used; }
}
