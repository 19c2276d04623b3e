import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { GitStore } from '../lib/git/store.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import type { StoreFs } from '../lib/git/fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { PathCaseError } from '../lib/core/errors.ts';
import { GROUP_PUSHES, RepoStore, type PushFile, type PushResult } from '../lib/repo/repo-store.ts';
import { tempDir } from './helpers/env.ts';
import { fsckStrict, git } from './reliability/helpers/git.ts';

/**
 * Group commit: pushes to one repository that queue behind its writer are committed
 * together — each its own commit on top of the previous one, with its own conflict check and answer — and
 * the branch moves once per group. Real git store on disk, real libSQL, checked with `git fsck --strict`.
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const author = { name: 'A', email: 'a@example.test' };

async function setup() {
  const dir = await tempDir('kr-group-');
  const db = await openDatabaseFile(join(dir.path, 'kr.db'), Math.floor(Date.now() / 1000));
  cleanup.push(async () => {
    await db.close();
    await dir.cleanup();
  });
  const inner = nodeStoreFs();
  let branchMoves = 0;
  const fs: StoreFs = {
    ...inner,
    renameDurable: async (from, to) => {
      if (to.endsWith('/refs/heads/main')) branchMoves++;
      return inner.renameDurable(from, to);
    },
  };
  const repos = new RepoStore(new GitStore({ fs, root: join(dir.path, 'repos') }), new PathIndex(db), { now: () => Date.now() });
  await repos.create('r');
  const gitdir = join(dir.path, 'repos', 'r.git');
  const push = (files: Array<{ path: string; content: string | null; parentSha?: string }>, message = 'm') =>
    repos.commitFiles(
      'r',
      files.map((f): PushFile => ({ path: f.path, content: f.content === null ? null : enc(f.content), ...(f.parentSha ? { parentSha: f.parentSha } : {}) })),
      author,
      message,
    );
  return { repos, gitdir, push, moves: () => branchMoves };
}

/**
 * Starts the pushes `start` makes while the repository's writer is busy, so that they all queue behind it,
 * then lets the writer go: they form one group. Settles with every push's outcome.
 */
async function queuedTogether<T>(repos: RepoStore, start: () => Array<Promise<T>>): Promise<Array<PromiseSettledResult<T>>> {
  let release!: () => void;
  let held!: () => void;
  const holding = new Promise<void>((r) => (held = r));
  const busy = repos.git.withLock('r', () => {
    held();
    return new Promise<void>((r) => (release = r));
  });
  await holding;
  const pushes = start();
  // Every push is queued behind the writer (they queue after a few awaits of their own), however slow the machine.
  const queued = () => (repos as unknown as { groups: { queues: Map<string, unknown[]> } }).groups.queues.get('r')?.length ?? 0;
  for (let i = 0; i < 2000 && queued() < pushes.length; i++) await new Promise((r) => setTimeout(r, 5));
  expect(queued()).toBe(pushes.length);
  release();
  await busy;
  return Promise.allSettled(pushes);
}
const values = <T,>(s: Array<PromiseSettledResult<T>>) => s.map((x) => (x as PromiseFulfilledResult<T>).value);

describe('group commit', () => {
  it('concurrent pushes of one page on the same parent: one lands, the others get their conflict with the winner content', async () => {
    const { push, gitdir, moves, repos } = await setup();
    const seed = await push([{ path: 'p.md', content: 'v0\n' }, { path: 'q.md', content: 'q\n' }]);
    const before = moves();
    const results = values(
      await queuedTogether(repos, () =>
        Array.from({ length: 10 }, (_, i) => push([{ path: 'p.md', content: `v${i + 1}\n`, parentSha: seed.commit!.sha }], `p${i}`)),
      ),
    );
    const winners = results.filter((r) => r.commit);
    expect(winners).toHaveLength(1);
    const won = winners[0]!;
    const wonContent = `v${results.indexOf(won) + 1}\n`;
    for (const r of results.filter((x) => !x.commit)) {
      const c = r.outcomes[0]!;
      expect(c.kind).toBe('conflict');
      if (c.kind !== 'conflict') continue;
      expect(c.currentSha).toBe(won.commit!.sha);
      expect(dec(c.currentContent)).toBe(wonContent);
      expect(dec(c.ancestorContent!)).toBe('v0\n');
    }
    // One group: the first push of it won, the branch moved once.
    expect(results.indexOf(won)).toBe(0);
    expect(moves() - before).toBe(1);
    expect(await git(gitdir, 'show', 'main:p.md')).toBe(wonContent);
    await fsckStrict(gitdir);
  });

  it('each push of a group is its own commit, parent = the previous one, in arrival order, with its own answer', async () => {
    const { push, repos, gitdir, moves } = await setup();
    await push([{ path: 'seed.md', content: 's\n' }]);
    const before = moves();
    const results = values(
      await queuedTogether(repos, () => Array.from({ length: 20 }, (_, i) => push([{ path: `p${i}.md`, content: `${i}\n` }], `push ${i}`))),
    );
    expect(moves() - before).toBe(1);
    const log = (await git(gitdir, 'log', '--format=%H %P %s', 'main')).trim().split('\n').reverse().slice(1);
    expect(log).toHaveLength(20);
    for (let i = 0; i < 20; i++) {
      const [sha, parent, ...subject] = log[i]!.split(' ');
      expect(subject.join(' ')).toBe(`push ${i}`);
      expect(results[i]!.commit!.sha).toBe(sha);
      if (i > 0) expect(parent).toBe(log[i - 1]!.split(' ')[0]);
      expect(results[i]!.committedPaths).toEqual([`p${i}.md`]);
    }
    // The index agrees with git, sequence numbers included.
    const timeline = await repos.timeline('r', 100);
    expect(timeline.map((c) => c.sha)).toEqual(log.map((l) => l.split(' ')[0]).reverse().concat(timeline.slice(20).map((c) => c.sha)));
    expect(results.map((r) => r.commit!.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    await fsckStrict(gitdir);
  });

  it('a push refused on its own (case twin, path collision) leaves the rest of its group alone', async () => {
    const { push, gitdir, repos, moves } = await setup();
    await push([{ path: 'dir/x.md', content: 'x\n' }]);
    const before = moves();
    const outcomes = await queuedTogether(repos, () => [
      push([{ path: 'Notes.md', content: 'N\n' }]),
      push([{ path: 'notes.md', content: 'n\n' }]), // case twin of a page created earlier in the group
      push([{ path: 'dir', content: 'file where a directory is\n' }]), // collides
      push([{ path: 'Notes.md', content: null }, { path: 'other.md', content: 'o\n' }]), // deletes the page the group created
      push([{ path: 'notes.md', content: 'now free\n' }]), // the twin is gone: allowed
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
    expect(moves() - before).toBe(1);
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(PathCaseError);
    const last = (outcomes[4] as PromiseFulfilledResult<PushResult>).value;
    expect(await git(gitdir, 'rev-parse', 'main')).toBe(`${last.commit!.sha}\n`);
    expect((await git(gitdir, 'ls-tree', '-r', '--name-only', 'main')).trim().split('\n')).toEqual(['dir/x.md', 'notes.md', 'other.md']);
    await fsckStrict(gitdir);
  });

  it(`a group takes at most ${GROUP_PUSHES} pushes`, async () => {
    const { push, gitdir, moves, repos } = await setup();
    await push([{ path: 'seed.md', content: 's\n' }]);
    const before = moves();
    const n = GROUP_PUSHES * 2 + 5;
    const results = values(await queuedTogether(repos, () => Array.from({ length: n }, (_, i) => push([{ path: `p/${i}.md`, content: `${i}\n` }]))));
    expect(results.every((r) => r.commit)).toBe(true);
    expect(moves() - before).toBe(3);
    expect(Number((await git(gitdir, 'rev-list', '--count', 'main')).trim())).toBe(n + 1);
    await fsckStrict(gitdir);
  });

  it('an unchanged push in a group answers the sha of the commit that left the page so, even one of the group', async () => {
    const { push, repos } = await setup();
    await push([{ path: 'seed.md', content: 's\n' }]);
    const [a, b] = values(await queuedTogether(repos, () => [push([{ path: 'p.md', content: 'same\n' }]), push([{ path: 'p.md', content: 'same\n' }])]));
    expect(a.commit).not.toBeNull();
    expect(b.commit).toBeNull();
    expect(b.outcomes[0]).toEqual({ path: 'p.md', kind: 'unchanged', sha: a.commit!.sha });
    expect(b.head).toBe(a.commit!.sha);
  });

  it('a page deleted by an earlier push of the group: a later write from an older parent is a conflict naming that deletion', async () => {
    const { push, repos, gitdir } = await setup();
    const seed = await push([{ path: 'p.md', content: 'v0\n' }, { path: 'q.md', content: 'q\n' }]);
    const [del, edit, again] = values(
      await queuedTogether(repos, () => [
        push([{ path: 'p.md', content: null, parentSha: seed.commit!.sha }], 'delete'),
        push([{ path: 'p.md', content: 'v1\n', parentSha: seed.commit!.sha }, { path: 'q.md', content: 'q1\n', parentSha: seed.commit!.sha }], 'edit'),
        push([{ path: 'p.md', content: null, parentSha: seed.commit!.sha }], 'delete again'),
      ]),
    );
    expect(del.commit).not.toBeNull();
    // The write's other file lands; the page stays deleted.
    expect(edit.commit).not.toBeNull();
    expect(edit.outcomes).toEqual([
      { path: 'p.md', kind: 'conflict', currentSha: del.commit!.sha, currentContent: new Uint8Array(0), expectedParentSha: seed.commit!.sha, ancestorContent: enc('v0\n'), deleted: true },
      { path: 'q.md', kind: 'committed' },
    ]);
    // Deleting it again is a no-op.
    expect(again.commit).toBeNull();
    expect(again.outcomes).toEqual([{ path: 'p.md', kind: 'absent' }]);
    expect((await git(gitdir, 'ls-tree', '-r', '--name-only', 'main')).trim().split('\n')).toEqual(['q.md']);
    await fsckStrict(gitdir);
  });
});
