import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { openDatabaseFile } from '../../lib/runtime/node/open-db.ts';
import { Activity } from '../../lib/db/activity.ts';
import { GitStore } from '../../lib/git/store.ts';
import { PathIndex } from '../../lib/repo/path-index.ts';
import { RepoStore, type PushResult } from '../../lib/repo/repo-store.ts';
import { tempDir } from '../helpers/env.ts';
import { fsckStrict, git, gitWithInput } from './helpers/git.ts';
import { orderViolations, recording, type Recorded, type Recording } from './helpers/recording-fs.ts';
import type { FsTraceEvent } from '../../lib/runtime/node/store-fs.ts';

/**
 * Durability ordering, proven deterministically. The kill tests are probabilistic and a
 * SIGKILL never loses the page cache, so they cannot see a missing flush. Here every step the store takes
 * on disk (write, file flush, rename, directory flush: the Node StoreFs's trace) and every database batch
 * is recorded in order, with the moment each push is answered, and orderViolations (helpers/recording-fs.ts)
 * checks, for single pushes and for group commits, that:
 *  - every object the branch's new value reaches (walked by `git rev-list --objects` from that value) had
 *    its bytes and its directory entry flushed before the rename that moved the branch started, and the
 *    lock file renamed over the branch had been flushed;
 *  - every directory the push made (a loose object's fan-out directory `objects/xx`, a re-created
 *    `objects/pack`) had its parent directory flushed after it was made and before that rename started;
 *  - the branch's directory was flushed after that rename and before the push was answered;
 *  - the database batch recording the push's commit had committed before the answer.
 * The lock file's flush runs beside the objects' writes and always ends first on a quiet disk, so the
 * recording also holds it back (holdFlush) to show that the branch waits for it.
 *
 * Each case runs with the Node build's packfiles (one pack + idx per group: the objects are durable once
 * both files are flushed, renamed into objects/pack and that directory flushed) and with loose objects
 * (packs off, as the Durable Object build writes them) in both of writeDurable's flush orders.
 *
 * Shown to fail on the mutation "moved the branch before its objects were written": with
 * GitStore.batch's prepare() changed to start the objects' durable write without awaiting it
 * (`void this.fs.writeDurable(...)`, or for packs `void this.writePacks(...)`), every case below fails
 * with "object … not durable (never renamed into place)" or "(bytes or directory entry not flushed)"; the
 * 20-cycle kill test passes with that mutation, since a killed process loses nothing the kernel already had.
 * Likewise shown to fail with GitStore.batch's prepare() no longer awaiting the lock file's `flushed`
 * ("the branch waits for the flush of its lock file"), and with store-fs.ts (Node) no longer flushing the parent of
 * a directory it made (writeDurable's `flush.add(dirname(d))` for a fan-out directory, packs.write's
 * `fsyncDir(dirname(packDir))` for objects/pack: "directories a push makes").
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Mode = 'packs' | 'each' | 'after-rename';

async function setup(mode: Mode) {
  const dir = await tempDir('kr-order-');
  const rec: Recording = recording(mode === 'packs' ? { packs: true } : { sync: mode, packs: false });
  const db = await openDatabaseFile(join(dir.path, 'kr.db'), Math.floor(Date.now() / 1000));
  cleanup.push(async () => {
    await db.close();
    await dir.cleanup();
  });
  const recDb = rec.wrapDb(db);
  const clock = { now: () => Date.now() };
  const git = new GitStore({ fs: rec.fs, root: join(dir.path, 'repos') });
  const repos = new RepoStore(git, new PathIndex(recDb), clock);
  const activity = new Activity(recDb, clock);
  await repos.create('r');
  const gitdir = join(dir.path, 'repos', 'r.git');
  const author = { name: 'A', email: 'a@example.test' };
  const push = async (label: string, files: Array<{ path: string; content: string | null; parentSha?: string }>): Promise<PushResult> => {
    const r = await repos.commitFiles(
      'r',
      files.map((f) => ({ path: f.path, content: f.content === null ? null : new TextEncoder().encode(f.content), parentSha: f.parentSha })),
      author,
      label,
      { activity: (res) => activity.stmts('r', { userId: 'u', email: 'a@example.test' }, 'push', { paths: res.committedPaths }) },
    );
    if (r.commit) rec.answer(r.commit.sha, label);
    return r;
  };
  return { rec, repos, gitdir, push, activity };
}

const moves = (rec: Recording, gitdir: string) =>
  rec.events.filter((e) => e.kind === 'fs' && e.op === 'rename' && e.phase === 'start' && e.to === `${gitdir}/refs/heads/main`).length;

/** Steps started at or after `from` that have not ended (fs steps by id, database batches by id). */
function unended(events: Recorded[], from: number): Recorded[] {
  const ended = new Set(events.slice(from).flatMap((e) => (e.kind === 'answer' || e.phase !== 'end' ? [] : [`${e.kind}:${e.id}`])));
  return events.slice(from).filter((e) => e.kind !== 'answer' && e.phase === 'start' && !ended.has(`${e.kind}:${e.id}`));
}

/**
 * Lets a push run until it can go no further: a database batch ended since `from`, every step started
 * since then has ended but those `waiting` accepts, and a whole turn of the event loop (every callback
 * and promise ready run) adds no event. Or until the push has settled (`settled`).
 */
async function settle(rec: Recording, from: number, waiting: (e: Recorded) => boolean, settled: () => boolean): Promise<void> {
  while (!settled()) {
    const seen = rec.events.length;
    await new Promise((r) => setImmediate(r));
    const dbEnded = rec.events.slice(from).some((e) => e.kind === 'db' && e.phase === 'end');
    if (dbEnded && rec.events.length === seen && unended(rec.events, from).every(waiting)) return;
  }
}

/** The subdirectories of `objects` that hold loose objects (the fan-out directories). */
const fanOut = async (gitdir: string) => (await readdir(join(gitdir, 'objects'))).filter((n) => /^[0-9a-f]{2}$/.test(n)).sort();

/** The id git gives a blob of `content`. */
const blobId = (content: string) => {
  const bytes = Buffer.from(content);
  return createHash('sha1').update(Buffer.concat([Buffer.from(`blob ${bytes.byteLength}\0`), bytes])).digest('hex');
};

/** The directories the recorded mkdirs made (missing when each started), relative to `gitdir`. */
const made = (events: Recorded[], gitdir: string) =>
  events.flatMap((e) => (e.kind === 'fs' && e.op === 'mkdir' && e.phase === 'start' ? (e.creates ?? []) : [])).map((d) => d.slice(gitdir.length + 1));

describe.each(['packs', 'each', 'after-rename'] as const)('durability order (%s)', (sync) => {
  it('single pushes: objects and lock flushed before the branch moves, the branch flushed and the index committed before the answer', async () => {
    const { rec, gitdir, push } = await setup(sync);
    const first = await push('first', [
      { path: 'a.md', content: '# A\n' },
      { path: 'dir/sub/b.md', content: '# B\n' },
    ]);
    await push('second', [{ path: 'a.md', content: '# A2\n', parentSha: first.commit!.sha }]);
    // Back to content already stored: the object exists, and is still flushed before the branch reaches it.
    await push('third', [{ path: 'a.md', content: '# A\n' }, { path: 'dir/sub/b.md', content: null }]);
    expect(moves(rec, gitdir)).toBe(3);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
  });

  it('a group commit: one branch move for many pushes, each answered only after all of it is durable', async () => {
    const { rec, gitdir, push, repos, activity } = await setup(sync);
    const seed = await push('seed', Array.from({ length: 8 }, (_, i) => ({ path: `p${i}.md`, content: `# ${i}\n` })));
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        push(`g${i}`, [
          { path: `p${i % 8}.md`, content: `# ${i} updated\n`, parentSha: i < 8 ? seed.commit!.sha : undefined },
          { path: `new/${i}.md`, content: `new ${i}\n` },
        ]),
      ),
    );
    const shas = results.map((r) => r.commit!.sha);
    expect(new Set(shas).size).toBe(12);
    // Groups formed: fewer branch moves than commits.
    const n = moves(rec, gitdir);
    expect(n).toBeLessThan(13);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
    // Each push its own commit and its own activity entry.
    const timeline = await repos.timeline('r', 100);
    expect(timeline.map((c) => c.sha).slice(0, 12).sort()).toEqual([...shas].sort());
    expect((await activity.list('r', 100, 0)).total).toBe(13);
  });

  it('the branch waits for the flush of its lock file, however late that flush ends', async () => {
    const { rec, gitdir, push } = await setup(sync);
    const ref = `${gitdir}/refs/heads/main`;
    const first = await push('first', [{ path: 'a.md', content: '# A\n' }]);
    const hold = rec.holdFlush(`${ref}.lock`);
    const from = rec.events.length;
    let answered = false;
    const second = push('second', [{ path: 'a.md', content: '# A2\n', parentSha: first.commit!.sha }]).finally(() => (answered = true));
    await Promise.race([hold.reached, second.catch(() => undefined)]);
    // The push does all it can without that flush: its objects written and flushed, its index batch committed.
    const lockFlush = (e: Recorded): e is Extract<Recorded, { kind: 'fs' }> => e.kind === 'fs' && e.op === 'fsync' && e.path === `${ref}.lock`;
    await settle(rec, from, lockFlush, () => answered);
    const after = rec.events.slice(from);
    // The branch has not moved (nor been touched), and the push is not answered …
    expect(after.filter((e) => e.kind === 'fs' && (e.path === ref || e.to === ref))).toEqual([]);
    expect(answered).toBe(false);
    // … while the lock file's flush is all that is left.
    expect(unended(rec.events, from).map((e) => e.kind === 'fs' && `${e.op} ${e.path}`)).toEqual([`fsync ${ref}.lock`]);
    expect(after.some((e) => e.kind === 'db' && e.phase === 'end' && !e.failed)).toBe(true);
    hold.release();
    await second;
    const flushEnd = rec.events.findIndex((e, i) => i >= from && lockFlush(e) && e.phase === 'end');
    const move = rec.events.findIndex((e, i) => i >= from && e.kind === 'fs' && e.op === 'rename' && e.phase === 'start' && e.to === ref);
    expect(flushEnd).toBeGreaterThan(from);
    expect(move).toBeGreaterThan(flushEnd);
    expect(moves(rec, gitdir)).toBe(2);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
  });
});

describe.each(['each', 'after-rename'] as const)('directories a push makes: loose objects (%s)', (sync) => {
  it('each new fan-out directory objects/xx has its parent flushed before the branch moves', async () => {
    const { rec, gitdir, push } = await setup(sync);
    // A new repository has no fan-out directory: the first push makes one for each of its objects' prefixes.
    expect(await fanOut(gitdir)).toEqual([]);
    await push('first', [{ path: 'a.md', content: '# A\n' }]);
    const dirs = await fanOut(gitdir);
    expect(made(rec.events, gitdir).sort()).toEqual(dirs.map((d) => `objects/${d}`));
    // A later push whose blob goes to a prefix no object has yet, beside the directories already made.
    let content = '';
    for (let i = 0; content === ''; i++) if (!dirs.includes(blobId(`new ${i}\n`).slice(0, 2))) content = `new ${i}\n`;
    const from = rec.events.length;
    await push('second', [{ path: 'b.md', content }]);
    expect(made(rec.events.slice(from), gitdir)).toContain(`objects/${blobId(content).slice(0, 2)}`);
    expect(moves(rec, gitdir)).toBe(2);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
  });
});

describe('directories a push makes: objects/pack (packs)', () => {
  it('objects/pack missing from a repository is made again, its parent flushed before the branch moves', async () => {
    const { rec, gitdir, push } = await setup('packs');
    await rm(join(gitdir, 'objects', 'pack'), { recursive: true });
    await push('first', [{ path: 'a.md', content: '# A\n' }]);
    expect(made(rec.events, gitdir)).toEqual(['objects/pack']);
    expect((await readdir(join(gitdir, 'objects', 'pack'))).filter((n) => n.endsWith('.idx'))).toHaveLength(1);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
  });

  it('objects/pack removed between two pushes (its objects unpacked) is made again, its parent flushed before the branch moves', async () => {
    const { rec, gitdir, push } = await setup('packs');
    const first = await push('first', [{ path: 'a.md', content: '# A\n' }]);
    // An operator unpacks the repository's objects (git unpack-objects only writes objects the repository
    // lacks, so the pack leaves first) and removes the emptied directory.
    const packDir = join(gitdir, 'objects', 'pack');
    const [packName] = (await readdir(packDir)).filter((n) => n.endsWith('.pack'));
    const pack = await readFile(join(packDir, packName!));
    await rm(packDir, { recursive: true });
    await gitWithInput(gitdir, pack, 'unpack-objects', '-q');
    await fsckStrict(gitdir);
    // The store's filesystem knows the directory from the first push: the second finds it gone and makes it again.
    const from = rec.events.length;
    await push('second', [{ path: 'a.md', content: '# A2\n', parentSha: first.commit!.sha }]);
    expect(made(rec.events.slice(from), gitdir)).toEqual(['objects/pack']);
    expect(moves(rec, gitdir)).toBe(2);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    await fsckStrict(gitdir);
    expect(await git(gitdir, 'show', 'main:a.md')).toBe('# A2\n');
  });
});

describe('overlap with the disk (packs)', () => {
  it("the index batch starts only once the pack's flushes are requested, and before they end", async () => {
    const { rec, gitdir, push } = await setup('packs');
    const first = await push('first', [{ path: 'a.md', content: '# A\n' }]);
    const from = rec.events.length;
    await push('second', [{ path: 'a.md', content: '# A2\n', parentSha: first.commit!.sha }]);
    const events = rec.events.slice(from);
    const packDir = `${gitdir}/objects/pack/`;
    const flushes = events.filter(
      (e): e is FsTraceEvent & { seq: number; kind: 'fs' } => e.kind === 'fs' && e.op === 'fsync' && e.path.startsWith(`${packDir}tmp_`),
    );
    // Both files of the one pack, each flush recorded as it starts and as it ends.
    expect(flushes.filter((e) => e.phase === 'start').length).toBe(2);
    const batch = events.find((e) => e.kind === 'db' && e.phase === 'start');
    expect(batch).toBeDefined();
    const lastStart = Math.max(...flushes.filter((e) => e.phase === 'start').map((e) => e.seq));
    const lastEnd = Math.max(...flushes.filter((e) => e.phase !== 'start').map((e) => e.seq));
    expect(batch!.seq).toBeGreaterThan(lastStart);
    // The batch runs on this thread while the disk works: it begins before the flushes have both ended.
    expect(batch!.seq).toBeLessThan(lastEnd);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
  });
});

describe('the checker itself', () => {
  it('reports a branch moved before its pack was flushed, or before it was renamed into objects/pack', async () => {
    const { rec, gitdir, push } = await setup('packs');
    await push('one', [{ path: 'a.md', content: '# A\n' }]);
    expect(await orderViolations(rec.events, gitdir)).toEqual([]);
    for (const drop of [
      (e: (typeof rec.events)[number]) => e.kind === 'fs' && e.op === 'fsync' && e.path.includes('/objects/pack/tmp_pack_'),
      (e: (typeof rec.events)[number]) => e.kind === 'fs' && e.op === 'fsync' && e.path.includes('/objects/pack/tmp_idx_'),
      (e: (typeof rec.events)[number]) => e.kind === 'fs' && e.op === 'fsyncDir' && e.path.endsWith('/objects/pack'),
      (e: (typeof rec.events)[number]) => e.kind === 'fs' && e.op === 'rename' && e.to !== undefined && e.to.endsWith('.idx'),
    ]) {
      const problems = await orderViolations(rec.events.filter((e) => !drop(e)), gitdir);
      expect(problems.some((p) => p.includes('not durable'))).toBe(true);
    }
  });

  it('reports a directory made by a push whose parent was not flushed before the branch moved', async () => {
    for (const mode of ['packs', 'each'] as const) {
      const { rec, gitdir, push } = await setup(mode);
      if (mode === 'packs') await rm(join(gitdir, 'objects', 'pack'), { recursive: true });
      await push('one', [{ path: 'a.md', content: '# A\n' }]);
      expect(await orderViolations(rec.events, gitdir)).toEqual([]);
      // Replay the recording with every flush of `objects` (the parent of the directories made) dropped.
      const tampered = rec.events.filter((e) => !(e.kind === 'fs' && e.op === 'fsyncDir' && e.path === `${gitdir}/objects`));
      const problems = await orderViolations(tampered, gitdir);
      const dirs = made(rec.events, gitdir);
      expect(dirs.length).toBeGreaterThan(0);
      expect(problems.filter((p) => p.includes('its parent not flushed after')).map((p) => p.replace(/.*: directory (\S+) made.*/, '$1')).sort()).toEqual(
        [...dirs].sort(),
      );
    }
  });

  it('reports a branch moved before its objects were flushed', async () => {
    const { rec, gitdir, push } = await setup('each');
    await push('one', [{ path: 'a.md', content: '# A\n' }]);
    // Replay the recording with every flush of an object's temporary file dropped.
    const tampered = rec.events.filter((e) => !(e.kind === 'fs' && e.op === 'fsync' && e.path.includes('/objects/tmp_obj_')));
    const problems = await orderViolations(tampered, gitdir);
    expect(problems.some((p) => p.includes('not durable'))).toBe(true);
    // … and an answer given before the branch's directory was flushed.
    const answer = rec.events.find((e) => e.kind === 'answer')!;
    const early = rec.events.filter((e) => e !== answer);
    const at = early.findIndex((e) => e.kind === 'fs' && e.op === 'rename' && e.phase === 'start' && e.to === `${gitdir}/refs/heads/main`);
    early.splice(at, 0, { ...answer });
    expect((await orderViolations(early.map((e, i) => ({ ...e, seq: i })), gitdir)).some((p) => p.includes('answer one'))).toBe(true);
  });
});
