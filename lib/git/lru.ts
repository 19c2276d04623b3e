/**
 * A size-bounded least-recently-used cache (Map keeps insertion order; a hit re-inserts, unless it is the
 * most recent entry already: a page read many times over cost a delete and an insert into a Map of
 * thousands each time, about 1.5% of a page read's server CPU in a CPU profile).
 */
export class LruCache<V> {
  private map = new Map<string, { value: V; size: number }>();
  private used = 0;
  /** The key of the most recently inserted entry, while it is in the map. */
  private newest: string | undefined;

  constructor(
    private readonly capacity: number,
    private readonly sizeOf: (v: V) => number,
  ) {}

  get(key: string): V | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    if (key !== this.newest) {
      this.map.delete(key);
      this.map.set(key, hit);
      this.newest = key;
    }
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
    this.newest = key;
    this.used += size;
    for (const [k, v] of this.map) {
      if (this.used <= this.capacity) break;
      this.map.delete(k);
      this.used -= v.size;
      if (k === this.newest) this.newest = undefined;
    }
  }

  delete(key: string): void {
    const old = this.map.get(key);
    if (!old) return;
    this.used -= old.size;
    this.map.delete(key);
    if (key === this.newest) this.newest = undefined;
  }

  /** Drops every entry. */
  clear(): void {
    this.map.clear();
    this.used = 0;
    this.newest = undefined;
  }

  get bytes(): number {
    return this.used;
  }

  /** The most bytes it holds. */
  get limit(): number {
    return this.capacity;
  }
}
