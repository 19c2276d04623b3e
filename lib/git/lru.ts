/** A size-bounded least-recently-used cache (Map keeps insertion order; a hit re-inserts). */
export class LruCache<V> {
  private map = new Map<string, { value: V; size: number }>();
  private used = 0;

  constructor(
    private readonly capacity: number,
    private readonly sizeOf: (v: V) => number,
  ) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    this.map.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V): void {
    const size = this.sizeOf(value);
    if (size > this.capacity) return;
    const old = this.map.get(key);
    if (old) {
      this.used -= old.size;
      this.map.delete(key);
    }
    this.map.set(key, { value, size });
    this.used += size;
    for (const [k, v] of this.map) {
      if (this.used <= this.capacity) break;
      this.map.delete(k);
      this.used -= v.size;
    }
  }

  delete(key: string): void {
    const old = this.map.get(key);
    if (!old) return;
    this.used -= old.size;
    this.map.delete(key);
  }

  /** Drops every entry. */
  clear(): void {
    this.map.clear();
    this.used = 0;
  }

  get bytes(): number {
    return this.used;
  }

  /** The most bytes it holds. */
  get limit(): number {
    return this.capacity;
  }
}
