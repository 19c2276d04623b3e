import type { Result, Router } from 'hono/router';
import { RegExpRouter } from 'hono/router/reg-exp-router';
import { SmartRouter } from 'hono/router/smart-router';
import { TrieRouter } from 'hono/router/trie-router';

/**
 * Hono's default router (SmartRouter: RegExpRouter, else TrieRouter) with the answers for recent
 * (method, path) pairs kept. Our routes mix a static segment and a parameter at one level
 * (`POST /v1/repos/join` beside `POST /v1/repos/:id`), which RegExpRouter refuses, so every request
 * walked TrieRouter's whole tree: every `:id` branch, every `{.+}` pattern and every `*` middleware at
 * each level (4.5 µs a match in a loop, 4–5% of a page read's server CPU in a profile).
 *
 * Exact: a match depends only on the method, the path and the routes added, the cache is emptied by
 * any `add`, and Hono only reads a match (its handlers and raw parameter values; `c.req.param()` decodes
 * into new strings). Bounded: at most {@link MATCH_CACHE_ENTRIES} pairs, the oldest dropped first, and
 * paths longer than {@link MATCH_CACHE_PATH_CHARS} are matched without being kept.
 */
export const MATCH_CACHE_ENTRIES = 512;
export const MATCH_CACHE_PATH_CHARS = 512;

export class CachingRouter<T> implements Router<T> {
  readonly name: string;
  readonly #inner: Router<T>;
  readonly #cache = new Map<string, Result<T>>();

  constructor(inner: Router<T> = new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] })) {
    this.#inner = inner;
    this.name = `CachingRouter + ${inner.name}`;
  }

  add(method: string, path: string, handler: T): void {
    this.#cache.clear();
    this.#inner.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    if (path.length > MATCH_CACHE_PATH_CHARS) return this.#inner.match(method, path);
    const key = `${method} ${path}`;
    let hit = this.#cache.get(key);
    if (hit === undefined) {
      hit = this.#inner.match(method, path);
      if (this.#cache.size >= MATCH_CACHE_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(key, hit);
    }
    return hit;
  }

  /** Pairs kept now (tests). */
  get size(): number {
    return this.#cache.size;
  }
}
