/**
 * lib/core/errors.ts: every named error crosses an RPC boundary by its code (structured-cloned, as native RPC does)
 * and comes back as the same class with the same message, fields and HTTP form; the one mapping to HTTP gives
 * the exact statuses and bodies of the API.
 */
import { describe, expect, it } from 'vitest';
import {
  ConcurrentUpdateError,
  CorruptObjectError,
  DomainError,
  errorFromWire,
  errorToWire,
  HttpError,
  LockTimeoutError,
  ObjectMissingError,
  PathCaseError,
  PathCollisionError,
  RepoBusyError,
  RepoNotFoundError,
  SearchQueryError,
  StoreError,
  toHttpError,
  UnknownShaError,
  UnsafeNameError,
} from '../lib/core/errors.ts';

const lock = new LockTimeoutError('r', 60_000, { owner: 'req-1', step: 'publish commit', heldMs: 61_000 });
/** One of each class, and what HTTP makes of it (null: a 500 `internal error`). */
const CASES: Array<[DomainError, { status: number; body: unknown; headers: Record<string, string> } | null]> = [
  [new HttpError(402, 'quota_repos', 'plan limit reached', { limit: 3 }), { status: 402, body: { error: 'plan limit reached', code: 'quota_repos', limit: 3 }, headers: {} }],
  [new HttpError(429, 'too_many_streams', 'too many event streams', undefined, { 'Retry-After': '5' }), { status: 429, body: { error: 'too many event streams', code: 'too_many_streams' }, headers: { 'Retry-After': '5' } }],
  [new StoreError('object x is a tree, not a blob'), null],
  [new UnsafeNameError('unsafe repository id: ..'), { status: 400, body: { error: 'unsafe repository id: ..', code: 'unsafe_name' }, headers: {} }],
  [new UnknownShaError('abc123'), { status: 400, body: { error: 'unknown sha: abc123', code: 'unknown_sha' }, headers: {} }],
  [new ConcurrentUpdateError('main moved'), { status: 409, body: { error: 'concurrent update, retry', code: 'concurrent_update' }, headers: {} }],
  [new PathCollisionError('a/b.md'), { status: 409, body: { error: 'path collides with an existing page or directory: a/b.md', code: 'path_collision' }, headers: {} }],
  [new PathCaseError('A.md', 'a.md'), { status: 400, body: { error: 'path "A.md" differs only in letter case from "a.md"', code: 'path_case' }, headers: {} }],
  [new RepoNotFoundError('r'), { status: 404, body: { error: 'repo not found', code: 'repo_not_found' }, headers: {} }],
  [new RepoBusyError(lock), { status: 503, body: { error: 'repository busy, retry', code: 'repo_busy' }, headers: { 'Retry-After': '5' } }],
  [lock, null],
  [new ObjectMissingError('0'.repeat(40)), null],
  [new CorruptObjectError('0'.repeat(40), 'record header'), null],
  [new SearchQueryError(null), { status: 400, body: { error: 'q required', code: 'q_required' }, headers: {} }],
  [new SearchQueryError('unbalanced quote'), { status: 400, body: { error: 'invalid query: unbalanced quote', code: 'invalid_query' }, headers: {} }],
];

const httpForm = (e: unknown) => {
  const h = toHttpError(e);
  return h && { status: h.status, body: h.body(), headers: h.headers };
};

describe('named errors', () => {
  it('each code is one class, and each class one code', () => {
    const byCode = new Map<string, Set<unknown>>();
    for (const [e] of CASES) byCode.set(e.code, (byCode.get(e.code) ?? new Set()).add(e.constructor));
    for (const [code, classes] of byCode) expect(classes.size, code).toBe(1);
    expect(new Set(CASES.map(([e]) => e.constructor)).size).toBe(byCode.size);
  });

  it.each(CASES.map(([e, http]) => [e.code, e, http] as const))('%s: its HTTP form', (_, e, http) => {
    expect(httpForm(e)).toEqual(http);
  });

  it.each(CASES.map(([e]) => [e.code, e] as const))('%s: crosses by code and is rebuilt as the same class', (_, e) => {
    const wire = structuredClone(errorToWire(e)!);
    expect(wire.code).toBe(e.code);
    const back = errorFromWire(wire);
    expect(back.constructor).toBe(e.constructor);
    expect(back.message).toBe(e.message);
    expect(back.fields()).toEqual(e.fields());
    expect(httpForm(back)).toEqual(httpForm(e));
  });

  it('an error without a code has no wire form and no HTTP form', () => {
    expect(errorToWire(new Error('boom'))).toBeNull();
    expect(toHttpError(new TypeError('x'))).toBeNull();
    expect(toHttpError('a string')).toBeNull();
  });

  it('a rebuilt RepoBusyError keeps who held the lock', () => {
    const back = errorFromWire(structuredClone(errorToWire(new RepoBusyError(lock))!)) as RepoBusyError;
    expect(back.lock).toBeInstanceOf(LockTimeoutError);
    expect(back.lock.holder).toEqual({ owner: 'req-1', step: 'publish commit', heldMs: 61_000 });
  });
});
