import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { GitStore } from '../lib/git/store.ts';
import { UnknownShaError, UnsafeNameError, ConcurrentUpdateError, PathCollisionError } from '../lib/core/errors.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { ManualClock } from '../lib/util/clock.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { fsck, gitIn, tempDir } from './helpers/env.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const ann = { name: 'Ann Author', email: 'ann@example.test' };

let dir: { path: string; cleanup: () => Promise<void> };
let db: Database;
let store: GitStore;
let repos: RepoStore;
let clock: ManualClock;

async function open(root = dir.path) {
  clock = new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0));
  db = await openDatabaseFile(join(root, 'service.db'), 0);
  store = new GitStore({ fs: nodeStoreFs(), root: join(root, 'repos') });
  repos = new RepoStore(store, new PathIndex(db), clock);
}

beforeEach(async () => {
  dir = await tempDir();
  await open();
});
afterEach(async () => {
  // A pack merge the last push queued writes into the repository: let it finish before the files go.
  await store.packMerges();
  await db.close();
  await dir.cleanup();
});

const gitdir = (id: string) => join(dir.path, 'repos', `${id}.git`);

describe('repositories', () => {
  it('init creates a bare repository on main that git accepts; exists and list see it', async () => {
    expect(await store.exists('alpha')).toBe(false);
    expect(await store.init('alpha')).toBe(true);
    expect(await store.init('alpha')).toBe(false);
    await store.init('beta');
    expect(await store.exists('alpha')).toBe(true);
    expect(await store.list()).toEqual(['alpha', 'beta']);
    expect(gitIn(gitdir('alpha'), 'rev-parse', '--is-bare-repository').trim()).toBe('true');
    expect(gitIn(gitdir('alpha'), 'symbolic-ref', 'HEAD').trim()).toBe('refs/heads/main');
    expect(await store.head('alpha')).toBeNull();
    fsck(gitdir('alpha'));
  });

  it('refuses ids and paths that could escape the data root before touching the filesystem', async () => {
    for (const id of ['', '../x', 'a/b', '..', '.git', 'x.y', 'a\u0000', 'é', 'a'.repeat(65)]) {
      await expect(store.init(id)).rejects.toBeInstanceOf(UnsafeNameError);
      expect(() => store.gitdir(id)).toThrow(UnsafeNameError);
    }
    await store.init('safe');
    for (const path of ['../x.md', '/etc/passwd', 'a//b.md', '.git/config', 'wiki/.GIT/x', '-rf', 'wiki/./x.md', 'a\\b.md', 'a\u0001.md', '']) {
      await expect(
        store.commit('safe', { parent: null, writes: [{ path, content: enc('x') }], author: ann, message: 'm', time: 1 }),
      ).rejects.toBeInstanceOf(UnsafeNameError);
    }
    expect(readdirSync(dir.path).sort()).toEqual(['repos', 'service.db', 'service.db-shm', 'service.db-wal'].filter((f) => existsSync(join(dir.path, f))));
    expect(await store.head('safe')).toBeNull();
    expect(existsSync(join(dir.path, 'etc'))).toBe(false);
  });
});

describe('commits', () => {
  it('writes and deletes many files as ONE commit that git reads back exactly', async () => {
    await repos.create('r');
    const first = await repos.commitFiles(
      'r',
      [
        { path: 'wiki/concepts/a.md', content: enc('# A\n') },
        { path: 'wiki/entities/b.md', content: enc('B\n') },
        { path: 'wiki/concepts/ünï 漢字.md', content: enc('unicode ✓\n') },
      ],
      ann,
      'first push\n\nwith a body',
    );
    expect(first.commit?.sha).toBe(gitIn(gitdir('r'), 'rev-parse', 'main').trim());
    expect(first.outcomes.map((o) => o.kind)).toEqual(['committed', 'committed', 'committed']);
    const log1 = gitIn(gitdir('r'), 'log', '--format=%H|%an|%ae|%at|%s', 'main').trim().split('\n');
    expect(log1).toEqual([`${first.commit!.sha}|Ann Author|ann@example.test|${Date.UTC(2026, 4, 17, 10) / 1000}|first push`]);

    clock.advance(60_000);
    const second = await repos.commitFiles(
      'r',
      [
        { path: 'wiki/concepts/a.md', content: enc('# A v2\n') },
        { path: 'wiki/entities/b.md', content: null },
        { path: 'wiki/concepts/c.md', content: enc('C\n') },
      ],
      ann,
      'second',
    );
    const log2 = gitIn(gitdir('r'), 'log', '--format=%H', 'main').trim().split('\n');
    expect(log2).toEqual([second.commit!.sha, first.commit!.sha]);
    expect(gitIn(gitdir('r'), 'show', '--name-status', '--format=', 'main').trim().split('\n').sort()).toEqual([
      'A\twiki/concepts/c.md',
      'D\twiki/entities/b.md',
      'M\twiki/concepts/a.md',
    ]);
    expect(gitIn(gitdir('r'), 'show', 'main:wiki/concepts/a.md')).toBe('# A v2\n');
    expect(gitIn(gitdir('r'), 'show', `${first.commit!.sha}:wiki/entities/b.md`)).toBe('B\n');
    expect(gitIn(gitdir('r'), '-c', 'core.quotePath=false', 'ls-tree', '-r', '--name-only', 'main').trim().split('\n')).toEqual([
      'wiki/concepts/a.md',
      'wiki/concepts/c.md',
      'wiki/concepts/ünï 漢字.md',
    ]);
    fsck(gitdir('r'));

    // Reads at head and at a sha, abbreviations included.
    expect(dec((await repos.page('r', 'wiki/concepts/a.md'))!.content)).toBe('# A v2\n');
    expect(await repos.page('r', 'wiki/entities/b.md')).toBeNull();
    const abbrev = first.commit!.sha.slice(0, 10);
    const resolved = await repos.resolve('r', abbrev);
    expect(resolved.sha).toBe(first.commit!.sha);
    expect(dec(await repos.fileAt('r', resolved.sha, 'wiki/entities/b.md'))).toBe('B\n');
    expect(await repos.fileAt('r', resolved.sha, 'wiki/concepts/c.md')).toBeNull();
    await expect(repos.resolve('r', 'deadbeef')).rejects.toBeInstanceOf(UnknownShaError);
    await expect(repos.resolve('r', 'main')).rejects.toBeInstanceOf(UnknownShaError);
    await expect(repos.resolve('r', 'HEAD~1')).rejects.toBeInstanceOf(UnknownShaError);

    // Per-path history, last commit touching a path, changed paths, pages at head.
    expect((await repos.history('r', 'wiki/concepts/a.md', 50)).map((c) => c.sha)).toEqual([second.commit!.sha, first.commit!.sha]);
    expect((await repos.history('r', 'wiki/concepts/ünï 漢字.md', 50)).map((c) => c.sha)).toEqual([first.commit!.sha]);
    expect((await repos.page('r', 'wiki/concepts/ünï 漢字.md'))!.entry.commit.sha).toBe(first.commit!.sha);
    expect(await store.changedPaths('r', first.commit!.sha, second.commit!.sha)).toEqual([
      { path: 'wiki/concepts/a.md', blob: gitIn(gitdir('r'), 'rev-parse', 'main:wiki/concepts/a.md').trim() },
      { path: 'wiki/concepts/c.md', blob: gitIn(gitdir('r'), 'rev-parse', 'main:wiki/concepts/c.md').trim() },
      { path: 'wiki/entities/b.md', blob: null },
    ]);
    expect([...(await store.listFiles('r', second.commit!.sha)).keys()]).toEqual(
      gitIn(gitdir('r'), '-c', 'core.quotePath=false', 'ls-tree', '-r', '--name-only', 'main').trim().split('\n'),
    );
    expect((await repos.pages('r')).map((p) => [p.path, p.commit.sha])).toEqual([
      ['wiki/concepts/a.md', second.commit!.sha],
      ['wiki/concepts/c.md', second.commit!.sha],
      ['wiki/concepts/ünï 漢字.md', first.commit!.sha],
    ]);
    const since = await repos.pull('r', first.commit!.sha);
    expect(since.files.map((f) => f.entry.path)).toEqual(['wiki/concepts/a.md', 'wiki/concepts/c.md']);
    expect(since.deleted).toEqual(['wiki/entities/b.md']);
  });

  it('resolves a unique abbreviation and refuses an ambiguous one', async () => {
    await repos.create('amb');
    const shas: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await repos.commitFiles('amb', [{ path: 'p.md', content: enc(`v${i}`) }], ann, `c${i}`);
      shas.push(r.commit!.sha);
    }
    const firstChars = new Map<string, number>();
    for (const s of shas) firstChars.set(s[0]!, (firstChars.get(s[0]!) ?? 0) + 1);
    const shared = [...firstChars].find(([, n]) => n > 1)![0];
    await expect(repos.resolve('amb', shared)).rejects.toBeInstanceOf(UnknownShaError);
    for (const s of shas) {
      const unique = [4, 5, 6, 7, 8, 40].map((n) => s.slice(0, n)).find((p) => shas.filter((x) => x.startsWith(p)).length === 1)!;
      expect((await repos.resolve('amb', unique.toUpperCase())).sha).toBe(s);
    }
    expect((await repos.history('amb', 'p.md', 5)).map((c) => c.message)).toEqual(['c39', 'c38', 'c37', 'c36', 'c35']);
    expect(Number(gitIn(gitdir('amb'), 'rev-list', '--count', 'main').trim())).toBe(40);
  });

  it('applies per-file parent checks: conflicts are left out, the rest is one commit', async () => {
    await repos.create('pc');
    const a = await repos.commitFiles('pc', [{ path: 'x.md', content: enc('x1') }, { path: 'y.md', content: enc('y1') }], ann, 'a');
    const b = await repos.commitFiles('pc', [{ path: 'x.md', content: enc('x2') }], ann, 'b');
    const res = await repos.commitFiles(
      'pc',
      [
        { path: 'x.md', content: enc('x3'), parentSha: a.commit!.sha },  // stale → conflict
        { path: 'y.md', content: enc('y2'), parentSha: a.commit!.sha.slice(0, 12) }, // abbreviation of its last commit → fine
        { path: 'z.md', content: enc('z1'), parentSha: b.commit!.sha },  // new page → no conflict
        { path: 'gone.md', content: null },                               // deleting a missing page → no-op
      ],
      ann,
      'c',
    );
    expect(res.outcomes).toEqual([
      { path: 'x.md', kind: 'conflict', currentSha: b.commit!.sha, currentContent: enc('x2'), expectedParentSha: a.commit!.sha, ancestorContent: enc('x1') },
      { path: 'y.md', kind: 'committed' },
      { path: 'z.md', kind: 'committed' },
      { path: 'gone.md', kind: 'absent' },
    ]);
    expect(gitIn(gitdir('pc'), 'show', '--name-only', '--format=', 'main').trim().split('\n')).toEqual(['y.md', 'z.md']);
    // Unchanged content: no commit, reported with the page's own last commit.
    const same = await repos.commitFiles('pc', [{ path: 'y.md', content: enc('y2') }], ann, 'd');
    expect(same.commit).toBeNull();
    expect(same.outcomes).toEqual([{ path: 'y.md', kind: 'unchanged', sha: res.commit!.sha }]);
    expect(same.head).toBe(res.commit!.sha);
    // Every file conflicting: nothing committed.
    const none = await repos.commitFiles('pc', [{ path: 'x.md', content: enc('x9'), parentSha: 'abc' }], ann, 'e');
    expect(none.commit).toBeNull();
    expect(none.outcomes[0]).toMatchObject({ kind: 'conflict', expectedParentSha: 'abc' });
    expect(none.outcomes[0]).not.toHaveProperty('ancestorContent');
    expect(Number(gitIn(gitdir('pc'), 'rev-list', '--count', 'main').trim())).toBe(3);
  });

  it('refuses a file where a directory is, and the reverse, writing nothing', async () => {
    await repos.create('col');
    await repos.commitFiles('col', [{ path: 'a/b.md', content: enc('1') }], ann, 'a');
    await expect(repos.commitFiles('col', [{ path: 'a', content: enc('2') }], ann, 'b')).rejects.toBeInstanceOf(PathCollisionError);
    await expect(repos.commitFiles('col', [{ path: 'a/b.md/c.md', content: enc('2') }], ann, 'b')).rejects.toBeInstanceOf(PathCollisionError);
    expect(Number(gitIn(gitdir('col'), 'rev-list', '--count', 'main').trim())).toBe(1);
    fsck(gitdir('col'));
  });

  it('moves the branch only if it still points where the writer started', async () => {
    await store.init('cas');
    const one = await store.commit('cas', { parent: null, writes: [{ path: 'a.md', content: enc('1') }], author: ann, message: 'one', time: 1 });
    const two = await store.commit('cas', { parent: one!.meta.sha, writes: [{ path: 'a.md', content: enc('2') }], author: ann, message: 'two', time: 2 });
    await expect(
      store.commit('cas', { parent: one!.meta.sha, writes: [{ path: 'a.md', content: enc('3') }], author: ann, message: 'stale', time: 3 }),
    ).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(await store.head('cas')).toBe(two!.meta.sha);
    expect(existsSync(join(gitdir('cas'), 'refs/heads/main.lock'))).toBe(false);
    fsck(gitdir('cas'));
  });

  it('20 concurrent writers on one repository: no update lost, history linear', async () => {
    await repos.create('many');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        repos.commitFiles('many', [{ path: `pages/p${i}.md`, content: enc(`page ${i}\n`) }], ann, `writer ${i}`),
      ),
    );
    expect(results.every((r) => r.commit !== null)).toBe(true);
    expect(Number(gitIn(gitdir('many'), 'rev-list', '--count', 'main').trim())).toBe(20);
    expect(gitIn(gitdir('many'), 'rev-list', '--merges', 'main').trim()).toBe('');
    expect(gitIn(gitdir('many'), 'ls-tree', '-r', '--name-only', 'main').trim().split('\n').length).toBe(20);
    expect((await repos.pages('many')).length).toBe(20);
    fsck(gitdir('many'));

    // Same page, same parent: exactly one wins, the others conflict.
    const base = (await repos.page('many', 'pages/p0.md'))!.entry.commit.sha;
    const racers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        repos.commitFiles('many', [{ path: 'pages/p0.md', content: enc(`racer ${i}\n`), parentSha: base }], ann, `racer ${i}`),
      ),
    );
    expect(racers.filter((r) => r.commit !== null).length).toBe(1);
    expect(racers.filter((r) => r.outcomes[0]!.kind === 'conflict').length).toBe(19);
    expect(Number(gitIn(gitdir('many'), 'rev-list', '--count', 'main').trim())).toBe(21);
  });
});

describe('derived index', () => {
  it('is rebuilt from git when the database is lost, and catches up when behind', async () => {
    await repos.create('idx');
    const shas: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await repos.commitFiles(
        'idx',
        [{ path: `p${i % 3}.md`, content: enc(`v${i}`) }, ...(i === 7 ? [{ path: 'p1.md', content: null }] : [])],
        ann,
        `c${i}`,
      );
      shas.push(r.commit!.sha);
    }
    const before = {
      pages: await repos.pages('idx'),
      history: await repos.history('idx', 'p1.md', 50),
      timeline: await repos.timeline('idx', 100),
    };
    // Lose the database entirely.
    await db.close();
    const { rm } = await import('node:fs/promises');
    for (const f of ['service.db', 'service.db-wal', 'service.db-shm']) await rm(join(dir.path, f), { force: true });
    await open();
    expect(await repos.pages('idx')).toEqual(before.pages);
    expect(await repos.history('idx', 'p1.md', 50)).toEqual(before.history);
    expect(await repos.timeline('idx', 100)).toEqual(before.timeline);

    // A commit made behind the index's back (straight into git) is picked up.
    const head = await store.head('idx');
    const behind = await store.commit('idx', { parent: head, writes: [{ path: 'new.md', content: enc('n') }], author: ann, message: 'behind', time: 99 });
    repos.invalidate('idx');
    expect((await repos.head('idx'))!.sha).toBe(behind!.meta.sha);
    expect((await repos.pages('idx')).map((p) => p.path)).toContain('new.md');

    // An index that claims commits git does not have is cut back to git's branch.
    gitIn(gitdir('idx'), 'update-ref', 'refs/heads/main', shas[9]!);
    repos.invalidate('idx');
    expect((await repos.head('idx'))!.sha).toBe(shas[9]);
    expect((await repos.pages('idx')).map((p) => p.path)).not.toContain('new.md');
    expect((await repos.timeline('idx', 100)).length).toBe(10);
  });
});

describe('crash safety', () => {
  it('a writer killed with SIGKILL mid-push leaves a valid repository holding every acknowledged commit', async () => {
    const cycles = Number(process.env.CRASH_CYCLES ?? 3);
    const acked: string[] = [];
    for (let cycle = 0; cycle < cycles; cycle++) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/crash-writer.ts', dir.path, `w${cycle}`], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (err += d));
      // Wait until it has acknowledged a few commits, then kill it at a random instant.
      const wanted = 3 + Math.floor(Math.random() * 10);
      await new Promise<void>((resolve, reject) => {
        const t = setInterval(() => {
          if ((out.match(/^ACK /gm) ?? []).length >= wanted) {
            clearInterval(t);
            setTimeout(() => {
              child.kill('SIGKILL');
              resolve();
            }, Math.random() * 40);
          }
        }, 2);
        child.once('exit', (code) => {
          clearInterval(t);
          if (code !== null) reject(new Error(`writer exited ${code}: ${err}`));
        });
      });
      await new Promise((r) => child.once('close', r));
      acked.push(...[...out.matchAll(/^ACK ([0-9a-f]{40})$/gm)].map((m) => m[1]!));
      fsck(gitdir('crash'));
      for (const sha of acked) gitIn(gitdir('crash'), 'merge-base', '--is-ancestor', sha, 'main');
    }
    expect(acked.length).toBeGreaterThanOrEqual(cycles * 3);
    // After the crashes the service still writes (stale locks cleared at boot) and the index catches up.
    await store.recoverAll();
    const r = await repos.commitFiles('crash', [{ path: 'after.md', content: enc('alive') }], ann, 'after');
    expect(r.commit?.sha).toBe(gitIn(gitdir('crash'), 'rev-parse', 'main').trim());
    expect((await repos.history('crash', 'after.md', 1))[0]!.sha).toBe(r.commit!.sha);
    expect(Number(gitIn(gitdir('crash'), 'rev-list', '--count', 'main').trim())).toBe((await repos.timeline('crash', 1000)).length);
    fsck(gitdir('crash'));
  });
});

describe('cache budget', () => {
  it('the store and its head entries stay within cacheBytes, whatever is read', async () => {
    const budget = 96 * 1024;
    const small = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos'), cacheBytes: budget });
    const smallRepos = new RepoStore(small, new PathIndex(db), clock);
    await smallRepos.create('cache');
    const files = Array.from({ length: 300 }, (_, i) => ({ path: `d${i % 10}/p${i}.md`, content: enc(`# ${i}\n${'x'.repeat(1000)}\n`) }));
    for (let i = 0; i < files.length; i += 100) await smallRepos.commitFiles('cache', files.slice(i, i + 100), ann, `part ${i}`);
    let peak = 0;
    for (const f of files) {
      expect(dec((await smallRepos.page('cache', f.path))!.content)).toBe(dec(f.content));
      peak = Math.max(peak, small.cachedBytes());
    }
    await small.listFiles('cache', (await small.head('cache'))!);
    // Blobs 1/2, trees 1/4, commits 1/8 of the budget; head entries 1/8.
    expect(peak).toBeGreaterThan(budget / 4);
    expect(small.cachedBytes()).toBeLessThanOrEqual((budget * 7) / 8);
    expect(smallRepos.cachedBytes()).toBeGreaterThan(0);
    expect(smallRepos.cachedBytes()).toBeLessThanOrEqual(budget / 8);
    // The default budget: 32 MiB.
    expect(store.headCacheBytes).toBe(4 * 1024 * 1024);
  });

  it('a cached blob holds its own bytes only, not the larger buffer it came in (what the budget counts is what is kept)', async () => {
    await store.init('own');
    // Small node Buffers are views into a shared 8 KiB pool: as a push's content, the cache kept the pool.
    const pooled = Buffer.from('# A page\n\nsmall\n');
    expect(pooled.buffer.byteLength).toBeGreaterThan(pooled.byteLength);
    const made = await store.commit('own', { parent: null, writes: [{ path: 'a.md', content: pooled }], author: ann, message: 'm', time: 1 });
    const oid = (await store.listFiles('own', made!.meta.sha)).get('a.md')!;
    const owns = (b: Uint8Array) => b.byteOffset === 0 && b.buffer.byteLength === b.byteLength;
    for (const b of [await store.readBlob('own', oid), (await store.readBlobs('own', [oid]))[0]!]) {
      expect(dec(b)).toBe('# A page\n\nsmall\n');
      expect(owns(b)).toBe(true);
    }
    // Read from disk by a store that has nothing cached: the same.
    const fresh = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
    const read = await fresh.readBlob('own', oid);
    expect(dec(read)).toBe('# A page\n\nsmall\n');
    expect(owns(read)).toBe(true);
    expect(owns(await fresh.readBlob('own', oid))).toBe(true);
  });
});
