/**
 * A repository's handle (Repos.open, lib/repo/repos.ts): opening one reads nothing, on either build, and a push
 * asks whether its repository exists, and who the pusher is there, once (lib/usecases/open-repo.ts pushTarget).
 */
import { afterEach, describe, expect, it } from 'vitest';
import syncPush from '../functions/sync/push.ts';
import pagesList from '../functions/pages/list.ts';
import { RemoteRepos } from '../lib/runtime/workers/remote-repos.ts';
import type { RepoNamespace, RepoStub } from '../lib/runtime/workers/rpc.ts';
import type { SqlDatabase } from '../lib/db/sql.ts';
import { systemClock } from '../lib/util/clock.ts';
import { mountHandler, type MountedHandler } from './helpers/handler.ts';

let h: MountedHandler | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Counts every call of the object's methods (own and inherited), by name, still calling them. */
function countCalls(target: object): Map<string, number> {
  const counts = new Map<string, number>();
  const names = new Set<string>();
  for (let o: object | null = target; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const n of Object.getOwnPropertyNames(o)) names.add(n);
  }
  for (const name of names) {
    if (name === 'constructor') continue;
    const desc = Object.getOwnPropertyDescriptor(target, name) ?? findDescriptor(target, name);
    if (!desc || typeof desc.value !== 'function') continue;
    const fn = desc.value as (...a: unknown[]) => unknown;
    Object.defineProperty(target, name, {
      configurable: true,
      writable: true,
      value(this: unknown, ...args: unknown[]) {
        counts.set(name, (counts.get(name) ?? 0) + 1);
        return fn.apply(this, args);
      },
    });
  }
  return counts;
}

function findDescriptor(target: object, name: string): PropertyDescriptor | undefined {
  for (let o: object | null = Object.getPrototypeOf(target); o; o = Object.getPrototypeOf(o)) {
    const d = Object.getOwnPropertyDescriptor(o, name);
    if (d) return d;
  }
  return undefined;
}

const total = (counts: Map<string, number>) => [...counts.values()].reduce((a, b) => a + b, 0);

describe('Repos.open', () => {
  it('Node: hands out a view bound to the id without touching git or the database; calls then reach the store', async () => {
    h = await mountHandler(pagesList);
    await h.commit('notes', { 'a.md': 'a' });
    const git = countCalls(h.deps.repos.git);
    const db = countCalls(h.deps.repos.index.database);
    const index = countCalls(h.deps.repos.index);
    const missing = h.deps.repos.open('missing');
    const notes = h.deps.repos.open('notes');
    expect([missing.id, notes.id]).toEqual(['missing', 'notes']);
    expect(notes.index).toBeDefined();
    expect(total(git) + total(db) + total(index)).toBe(0);
    expect((await notes.pages()).map((p) => p.path)).toEqual(['a.md']);
    expect(total(git) + total(db) + total(index)).toBeGreaterThan(0);
    await expect(missing.head()).rejects.toThrow('repo not found: missing');
  });

  it('Workers: the handle is the object\'s stub bound to the id; opening it sends nothing and asks D1 nothing', async () => {
    const calls: string[] = [];
    const stub = new Proxy({} as RepoStub, {
      get: (_t, name) => {
        if (name === 'then') return undefined;
        return async (...args: unknown[]) => {
          calls.push(`${String(name)}(${args.map((a) => JSON.stringify(a)).join(', ')})`);
          return { ok: true, value: null };
        };
      },
    });
    const ns: RepoNamespace = {
      idFromName: (name: string) => (calls.push(`idFromName(${name})`), name),
      get: () => stub,
    };
    const db = new Proxy({} as SqlDatabase, {
      get: (_t, name) => () => {
        calls.push(`db.${String(name)}`);
        throw new Error('no query expected');
      },
    });
    const repos = new RemoteRepos(ns, db, systemClock);
    const repo = repos.open('notes');
    expect(repo.id).toBe('notes');
    expect(repo.commitDatabase).toBeUndefined();
    // Naming the object is all opening does (no request: the stub makes none until called).
    expect(calls).toEqual(['idFromName(notes)']);
    await repo.pages();
    await repo.index.resolve('abc');
    expect(calls.slice(1)).toEqual(['pages()', 'indexResolve("abc")']);
  });
});

describe('a push asks once', () => {
  it('into an existing repository: one existence check, one membership lookup', async () => {
    h = await mountHandler(syncPush);
    const alice = await h.user('alice@example.com');
    await h.commit('notes', { 'a.md': 'a' });
    await h.deps.members.add('notes', alice.id, 'member');
    const repos = countCalls(h.deps.repos);
    const members = countCalls(h.deps.members);
    const res = await alice.request('/v1/repos/notes/sync/push', { method: 'POST', json: { files: [{ path: 'b.md', content: 'b' }] } });
    expect(res.status).toBe(200);
    expect(repos.get('exists')).toBe(1);
    expect(members.get('roleOf')).toBe(1);
    expect(repos.get('open')).toBe(1);
    expect(repos.get('create') ?? 0).toBe(0);
  });

  it('into a missing one: checked before the body, made after it (its creation asks again, under the lock)', async () => {
    h = await mountHandler(syncPush);
    const alice = await h.user('alice@example.com');
    const repos = countCalls(h.deps.repos);
    const members = countCalls(h.deps.members);
    const res = await alice.request('/v1/repos/fresh/sync/push', { method: 'POST', json: { files: [{ path: 'b.md', content: 'b' }] } });
    expect(res.status).toBe(200);
    expect(repos.get('exists')).toBe(2);
    expect(repos.get('createOwned')).toBe(1);
    expect(members.get('roleOf') ?? 0).toBe(0);
    expect(await h.deps.members.roleOf('fresh', alice.id)).toBe('owner');
  });
});
