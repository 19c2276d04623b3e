/**
 * A small seeded PRNG (sfc32, seeded through splitmix32) so every generated request, kill moment and
 * interleaving is reproducible: the seed is printed by each test and can be forced with RELIABILITY_SEED.
 */

export interface Rng {
  readonly seed: number;
  /** Uniform in [0, 1). */
  next(): number;
  /** Integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number;
  /** true with probability p. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** Picks by weight: [[weight, value], ...]. */
  weighted<T>(items: ReadonlyArray<readonly [number, T]>): T;
  shuffle<T>(items: T[]): T[];
  /** `n` bytes. */
  bytes(n: number): Uint8Array;
  /** A string of `n` characters drawn from `alphabet`. */
  str(n: number, alphabet?: string): string;
}

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function rng(seed: number): Rng {
  let s = seed >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  const u32 = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = ((c << 21) | (c >>> 11)) >>> 0;
    c = (c + t) >>> 0;
    return t;
  };
  for (let i = 0; i < 12; i++) u32();
  const r: Rng = {
    seed,
    next: () => u32() / 4294967296,
    int: (lo, hi) => lo + Math.floor(r.next() * (hi - lo + 1)),
    chance: (p) => r.next() < p,
    pick: (items) => items[Math.floor(r.next() * items.length)]!,
    weighted: (items) => {
      const total = items.reduce((n, [w]) => n + w, 0);
      let x = r.next() * total;
      for (const [w, v] of items) {
        if ((x -= w) < 0) return v;
      }
      return items[items.length - 1]![1];
    },
    shuffle: (items) => {
      for (let i = items.length - 1; i > 0; i--) {
        const j = Math.floor(r.next() * (i + 1));
        [items[i], items[j]] = [items[j]!, items[i]!];
      }
      return items;
    },
    bytes: (n) => {
      const out = new Uint8Array(n);
      for (let i = 0; i < n; i++) out[i] = u32() & 0xff;
      return out;
    },
    str: (n, alphabet = ALNUM) => {
      let out = '';
      for (let i = 0; i < n; i++) out += alphabet[Math.floor(r.next() * alphabet.length)];
      return out;
    },
  };
  return r;
}

/** The seed for a test: RELIABILITY_SEED when set, else the given default (fixed, so CI is reproducible). */
export function seedFor(name: string, fallback: number): number {
  const env = process.env.RELIABILITY_SEED;
  if (env && /^\d+$/.test(env)) {
    // Derive per-test seeds from the one given, so forcing a seed still varies the tests from each other.
    let h = Number(env) >>> 0;
    for (const ch of name) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    return h;
  }
  return fallback;
}
