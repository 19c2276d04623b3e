import { afterEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { KeyedMutex } from '../../lib/git/lock.ts';
import { LockTimeoutError, RepoBusyError, toHttpError } from '../../lib/core/errors.ts';
import { GitStore } from '../../lib/git/store.ts';
import { nodeStoreFs } from '../../lib/runtime/node/store-fs.ts';
import { openDatabaseFile } from '../../lib/runtime/node/open-db.ts';
import { memoryLogger } from '../../lib/framework/log.ts';
import { openNodeDeps, startServer } from '../../lib/runtime/node/server.ts';
import { routes } from '../../functions/index.ts';
import { fsck, tempDir, testConfig } from '../helpers/env.ts';

/**
 * The repository lock under a holder that does not come back: waiters give up with 503 `repository busy,
 * retry` (Retry-After) instead of queueing for ever, the watchdog names the holder (request id) and the
 * step it is stuck at, a slow in-process holder's `main.lock` is never taken for a crash's leftover, and
 * the repository serves writes again as soon as the holder finishes. Deadlines are injected, short.
 */

const enc = (s: string) => new TextEncoder().encode(s);
const author = { name: 'Ann', email: 'ann@example.test' };
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

describe('KeyedMutex', () => {
  it('a waiter past its deadline fails with the holder and its step; the queue behind it still moves in order', async () => {
    const m = new KeyedMutex({ waitMs: 50 });
    const held = gate();
    const order: string[] = [];
    const holder = m.run(
      'r',
      async (p) => {
        p.step('write objects');
        await held.wait;
        order.push('holder');
      },
      { owner: 'req-1' },
    );
    const late = m.run('r', async () => void order.push('late'), { owner: 'req-2' });
    await expect(late).rejects.toBeInstanceOf(LockTimeoutError);
    const err = (await late.catch((e: unknown) => e)) as LockTimeoutError;
    expect(err.key).toBe('r');
    expect(err.holder).toMatchObject({ owner: 'req-1', step: 'write objects' });
    expect(m.held()).toEqual([expect.objectContaining({ key: 'r', owner: 'req-1', step: 'write objects', waiting: 0 })]);

    // Past the deadline the holder counts as stuck: a newcomer is turned away at once.
    await expect(m.run('r', async () => 'never', { owner: 'req-3', waitMs: 40 })).rejects.toBeInstanceOf(LockTimeoutError);

    // Waiters with a longer deadline queue in order behind the holder and run once it is done.
    const a = m.run('r', async () => void order.push('a'), { waitMs: 5_000 });
    const b = m.run('r', async () => void order.push('b'), { waitMs: 5_000 });
    expect(m.held()[0]!.waiting).toBe(2);
    held.open();
    await Promise.all([holder, a, b]);
    expect(order).toEqual(['holder', 'a', 'b']);
    expect(m.held()).toEqual([]);
  });

  it('reports what a holder has in flight, and releases after a synchronous throw', async () => {
    const m = new KeyedMutex();
    const g = gate();
    let inside = '';
    const run = m.run('r', async (p) => {
      p.step('publish commit');
      const moved = p.track('move main', g.wait);
      await p.track('record index', Promise.resolve());
      inside = m.held()[0]!.step;
      await moved;
    });
    await new Promise((r) => setTimeout(r, 10));
    expect(inside).toBe('publish commit: move main');
    g.open();
    await run;
    await expect(
      m.run('r', () => {
        throw new Error('sync throw');
      }),
    ).rejects.toThrow('sync throw');
    expect(await m.run('r', async () => 'free again')).toBe('free again');
  });
});

describe('GitStore lock files', () => {
  it('recover leaves a main.lock this store holds alone, however old, and clears a dead one', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
    await store.init('r');
    const lockFile = join(dir.path, 'repos', 'r.git', 'refs', 'heads', 'main.lock');
    const old = new Date(Date.now() - 3_600_000);

    const prepared = await store.withLock('r', () =>
      store.prepareCommit('r', { parent: null, writes: [{ path: 'a.md', content: enc('a') }], author, message: 'm', time: 1 }),
    );
    expect(prepared).not.toBeNull();
    await utimes(lockFile, old, old);
    await store.recover('r');
    expect(existsSync(lockFile)).toBe(true);
    await prepared!.publish();
    expect(existsSync(lockFile)).toBe(false);

    // One nobody in this process holds (a crashed writer's): stale after 30 s, removed.
    await writeFile(lockFile, 'dead\n');
    await store.recover('r');
    expect(existsSync(lockFile)).toBe(true);
    await utimes(lockFile, old, old);
    await store.recover('r');
    expect(existsSync(lockFile)).toBe(false);
  });

  it('a failure between taking main.lock and checking the branch gives main.lock back', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
    await store.init('r');
    const lockFile = join(dir.path, 'repos', 'r.git', 'refs', 'heads', 'main.lock');
    const fs = store.fs as { readFile: (path: string) => Promise<Uint8Array | null> };
    const readFile = fs.readFile.bind(fs);
    let failing = true;
    fs.readFile = async (path) => {
      // The branch check reads the ref once the lock file exists: fail exactly that read (EMFILE, EIO...).
      if (failing && path.endsWith('refs/heads/main') && existsSync(lockFile)) throw new Error('EIO: simulated');
      return readFile(path);
    };
    const commit = () =>
      store.withLock('r', () =>
        store.commit('r', { parent: null, writes: [{ path: 'a.md', content: enc('a') }], author, message: 'm', time: 1 }),
      );
    await expect(commit()).rejects.toThrow('EIO: simulated');
    expect(existsSync(lockFile)).toBe(false);
    failing = false;
    // Not 30 s of "locked by another writer": the next writer goes through at once.
    expect(await commit()).not.toBeNull();
  });

  it('withLock turns a waiter that timed out into RepoBusyError (503, Retry-After)', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos'), lockWaitMs: 30 });
    const g = gate();
    const holder = store.withLock('r', () => g.wait, { owner: 'req-1', step: 'stuck' });
    const err = await store.withLock('r', async () => 'never').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RepoBusyError);
    const http = toHttpError(err)!;
    expect(http.status).toBe(503);
    expect(http.body()).toEqual({ error: 'repository busy, retry', code: 'repo_busy' });
    expect(http.headers['Retry-After']).toMatch(/^\d+$/);
    expect((err as RepoBusyError).lock.holder?.owner).toBe('req-1');
    g.open();
    await holder;
  });
});

describe('a push stuck holding the repository lock', () => {
  it('is logged with its request id and step; other writers get 503 and Retry-After; the repository recovers when it finishes', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const log = memoryLogger();
    const deps = await openNodeDeps(testConfig(dir.path), { log, lockWaitMs: 300 });
    const server = await startServer(deps, routes, { slowCheckMs: 25, lockHeldMs: 100, lockStuckMs: 300 });
    const g = gate();
    // Cleanups run last first: the held push is let go before the server is closed (close waits for it).
    cleanups.push(() => server.close());
    cleanups.push(async () => g.open());
    const push = (path: string, content: string) =>
      fetch(`${server.url}/v1/repos/r/sync/push`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-legacy-key', 'content-type': 'application/json' },
        body: JSON.stringify({ files: [{ path, content }] }),
      });
    expect((await push('first.md', 'first')).status).toBe(200);
    // Only what the log says from here on (on a busy machine the first push may have been slow, too).
    const from = log.lines.length;

    // The next push stops where its branch move (rename of main.lock over main) would happen.
    const fs = deps.repos.git.fs as { renameDurable: (from: string, to: string) => Promise<void> };
    const rename = fs.renameDurable.bind(fs);
    let blocked = true;
    let reached = false;
    fs.renameDurable = async (from, to) => {
      if (blocked && from.endsWith('main.lock')) {
        reached = true;
        await g.wait;
      }
      return rename(from, to);
    };
    const stuck = push('stuck.md', 'stuck');
    const until = async (what: string, ok: () => boolean) => {
      for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
      if (!ok()) throw new Error(`timed out waiting for ${what}:\n${log.lines.join('\n')}`);
    };
    // Where the holder is, as the watchdog reads it: moving the branch (the index row is written by then).
    await until('the push to reach the branch move', () => reached && deps.repos.git.locks()[0]?.step === 'publish commit: move main');
    const events = () =>
      log.lines
        .slice(from)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .filter((e) => e.event === 'lock_held');
    await until('lock_held warning and error', () => events().some((e) => e.level === 'warn') && events().some((e) => e.level === 'error'));
    const [warned, stuckLine] = [events().find((e) => e.level === 'warn')!, events().find((e) => e.level === 'error')!];
    expect(warned).toMatchObject({ repo: 'r', lock: 'write', waiting: 0 });
    expect(warned.ms as number).toBeGreaterThanOrEqual(100);
    expect(stuckLine).toMatchObject({ repo: 'r', lock: 'write', id: warned.id, stuck: true });
    expect(stuckLine.ms as number).toBeGreaterThanOrEqual(300);
    // The step is the holder's at that moment: on a slow machine the object writes may still have been going.
    for (const e of [warned, stuckLine]) expect(e.step).toMatch(/^(read index|prepare commit|publish commit)/);

    // A writer behind it: 503 with Retry-After, not a wait for ever.
    const busy = await push('other.md', 'other');
    expect(busy.status).toBe(503);
    expect(await busy.json()).toEqual({ error: 'repository busy, retry', code: 'repo_busy' });
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/);

    // The holder finishes: its answer carries the request id the log named, and writes go through again.
    blocked = false;
    g.open();
    const done = await stuck;
    expect(done.status).toBe(200);
    expect(done.headers.get('x-request-id')).toBe(warned.id);
    expect((await push('other.md', 'other')).status).toBe(200);
    expect(deps.repos.git.locks()).toEqual([]);
    fsck(join(dir.path, 'repos', 'r.git'));
  });
});

describe('a holder of the creation lock that does not come back', () => {
  it('(every push takes it) is logged, and pushes get 503 instead of waiting behind it', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const log = memoryLogger();
    const deps = await openNodeDeps(testConfig(dir.path), { log, lockWaitMs: 200 });
    const server = await startServer(deps, routes, { slowCheckMs: 25, lockHeldMs: 50, lockStuckMs: 200 });
    const g = gate();
    cleanups.push(() => server.close());
    cleanups.push(async () => g.open());
    const holder = deps.repos.creation.run('r', () => g.wait);
    const busy = await fetch(`${server.url}/v1/repos/r/sync/push`, {
      method: 'POST',
      headers: { authorization: 'Bearer test-legacy-key', 'content-type': 'application/json' },
      body: JSON.stringify({ files: [{ path: 'a.md', content: 'a' }] }),
    });
    expect(busy.status).toBe(503);
    expect(await busy.json()).toEqual({ error: 'repository busy, retry', code: 'repo_busy' });
    for (let i = 0; i < 400 && !log.lines.some((l) => l.includes('"lock_held"')); i++) await new Promise((r) => setTimeout(r, 10));
    const line = log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((e) => e.event === 'lock_held');
    expect(line).toMatchObject({ repo: 'r', lock: 'creation', id: 'create or authorize' });
    g.open();
    await holder;
  });
});

describe('database connections', () => {
  it('every connection of the pool waits for a lock another process holds (busy timeout), not only the first', async () => {
    const dir = await tempDir('kr-lock-');
    cleanups.push(dir.cleanup);
    const db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
    cleanups.push(() => db.close());
    // Reads issued together borrow one connection each: the pool opens new ones for them.
    const rows = await Promise.all(Array.from({ length: 8 }, () => db.all<Record<string, unknown>>('PRAGMA busy_timeout')));
    expect(rows.map((r) => Number(Object.values(r[0]!)[0]))).toEqual(Array(8).fill(5000));
  });
});
