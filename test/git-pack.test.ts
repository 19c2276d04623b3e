import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as nodeFs from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import git from 'isomorphic-git';
import { GitStore, MAX_SMALL_PACKS, SMALL_PACK_BYTES, mergeable } from '../lib/git/store.ts';
import { nodeCodec, nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { buildPack, buildPacks, copyableRecords, crc32, readIdx, splitEntries } from '../lib/git/pack.ts';
import { encodeObject, serializeCommit, serializeTree, webCodec, type ObjectType } from '../lib/git/objects.ts';
import { buildBundle } from '../lib/git/bundle.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { ManualClock } from '../lib/util/clock.ts';
import type { StoreFs } from '../lib/git/fs.ts';
import { tempDir } from './helpers/env.ts';
import { catFiles, fsckStrict, git as gitCmd, revList } from './reliability/helpers/git.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
const ann = { name: 'Ann Author', email: 'ann@example.test' };

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('kr-pack-');
});
afterEach(async () => {
  await dir.cleanup();
});

const packFiles = async (gitdir: string) => (await readdir(join(gitdir, 'objects', 'pack'))).sort();
const looseObjects = async (gitdir: string) =>
  (await readdir(join(gitdir, 'objects'))).filter((n) => /^[0-9a-f]{2}$/.test(n));

describe('pack writer', () => {
  it('crc32 matches zlib', () => {
    for (const s of ['', 'a', 'hello world', 'x'.repeat(10_000)]) expect(crc32(enc(s))).toBe(zlibCrc32(enc(s)));
  });

  it('a pack + idx written by hand is accepted by git (fsck --strict, verify-pack, cat-file) and isomorphic-git', async () => {
    const gitdir = join(dir.path, 'r.git');
    await mkdir(gitdir, { recursive: true });
    execFileSync('git', ['init', '--bare', '-q', gitdir]);
    for (const codec of [nodeCodec, webCodec]) {
      const entries: Array<{ oid: string; record: Uint8Array }> = [];
      const put = async (type: ObjectType, content: Uint8Array) => {
        const o = await encodeObject(codec, type, content, 'pack');
        // The same id as the loose form.
        expect(o.oid).toBe((await encodeObject(nodeCodec, type, content)).oid);
        entries.push({ oid: o.oid, record: o.deflated });
        return o.oid;
      };
      const big = enc('big '.repeat(50_000)); // a size needing several header bytes
      const blob = await put('blob', enc(`# page (${codec === webCodec ? 'web' : 'node'})\n`));
      const bigBlob = await put('blob', big);
      const empty = await put('blob', new Uint8Array());
      const tree = await put(
        'tree',
        serializeTree([
          { mode: '100644', name: 'a.md', oid: blob, type: 'blob' },
          { mode: '100644', name: 'big.md', oid: bigBlob, type: 'blob' },
          { mode: '100644', name: 'empty.md', oid: empty, type: 'blob' },
        ]),
      );
      const commit = await put('commit', serializeCommit({ tree, parents: [], author: ann, time: 1_700_000_000, message: 'packed\n' }));
      const built = await buildPack(codec, entries);
      // Named by the pack's own checksum, which the idx repeats.
      expect(built.name).toBe(createHash('sha1').update(built.pack.subarray(0, built.pack.length - 20)).digest('hex'));
      expect(readIdx(built.idx).map((e) => e.oid)).toEqual(entries.map((e) => e.oid).sort());
      await writeFile(join(gitdir, 'objects', 'pack', `pack-${built.name}.pack`), built.pack);
      await writeFile(join(gitdir, 'objects', 'pack', `pack-${built.name}.idx`), built.idx);
      await writeFile(join(gitdir, 'refs', 'heads', 'main'), `${commit}\n`);
      await gitCmd(gitdir, 'verify-pack', join(gitdir, 'objects', 'pack', `pack-${built.name}.idx`));
      await fsckStrict(gitdir);
      const [a, b] = await catFiles(gitdir, ['main:a.md', 'main:big.md']);
      expect(a!.toString()).toContain('# page');
      expect(b!.equals(Buffer.from(big))).toBe(true);
      const { blob: viaIso } = await git.readBlob({ fs: nodeFs, gitdir, oid: bigBlob });
      expect(Buffer.from(viaIso).equals(Buffer.from(big))).toBe(true);
      // Records copy out of a pack as they are.
      const copied = copyableRecords(built.pack, built.idx);
      expect(copied.deltas).toEqual([]);
      expect(copied.entries.map((e) => e.oid).sort()).toEqual(entries.map((e) => e.oid).sort());
      // In the same order, the same pack: the same name, the same idx.
      const again = await buildPack(codec, copied.entries);
      expect(again.name).toBe(built.name);
      expect(Buffer.from(again.idx).equals(Buffer.from(built.idx))).toBe(true);
    }
  });

  it('splits past the size limit, keeps one copy of an id, refuses an empty pack', async () => {
    const rec = (oid: string, n: number) => ({ oid, record: new Uint8Array(n) });
    const runs = splitEntries([rec('a'.repeat(40), 60), rec('b'.repeat(40), 60), rec('a'.repeat(40), 60), rec('c'.repeat(40), 30)], 100);
    expect(runs.map((r) => r.map((e) => e.oid[0]))).toEqual([['a'], ['b', 'c']]);
    expect(() => splitEntries([rec('d'.repeat(40), 200)], 100)).toThrow(RangeError);
    await expect(buildPack(nodeCodec, [])).rejects.toThrow(RangeError);
    expect(await buildPacks(nodeCodec, [])).toEqual([]);
  });
});

async function openRepos(root: string, fs: StoreFs = nodeStoreFs()) {
  const clock = new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0));
  const db = await openDatabaseFile(join(root, `service-${Math.random().toString(36).slice(2)}.db`), 0);
  const store = new GitStore({ fs, root: join(root, 'repos') });
  const repos = new RepoStore(store, new PathIndex(db), clock);
  return { db, store, repos };
}

describe('the store writes one pack per group', () => {
  it('after many groups the pack count stays bounded, fsck is clean, and every page reads back', async () => {
    const { db, store, repos } = await openRepos(dir.path);
    const gitdir = join(dir.path, 'repos', 'r.git');
    try {
      await repos.create('r');
      const expected = new Map<string, string>();
      let pushes = 0;
      for (let round = 0; round < 40; round++) {
        // Some rounds are concurrent (grouped), some single.
        const n = round % 3 === 0 ? 6 : 1;
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) => {
            const path = `pages/p${(round * 7 + i) % 25}.md`;
            const content = `# ${path}\n\nround ${round} push ${i}\n`;
            expected.set(path, content);
            pushes++;
            return repos.commitFiles('r', [{ path, content: enc(content) }], ann, `round ${round} push ${i}`);
          }),
        );
        for (const r of results) expect(r.commit).not.toBeNull();
        const files = await packFiles(gitdir);
        expect(files.filter((f) => f.endsWith('.idx')).length).toBeLessThanOrEqual(MAX_SMALL_PACKS + 2);
      }
      await store.packMerges();
      // No loose objects at all: every group went into a pack.
      expect(await looseObjects(gitdir)).toEqual([]);
      const files = await packFiles(gitdir);
      const idx = files.filter((f) => f.endsWith('.idx'));
      expect(idx.length).toBeGreaterThan(0);
      expect(idx.length).toBeLessThanOrEqual(MAX_SMALL_PACKS + 1);
      expect(files.filter((f) => f.endsWith('.pack')).length).toBe(idx.length);
      expect(files.filter((f) => f.startsWith('tmp_'))).toEqual([]);
      await fsckStrict(gitdir);
      expect((await revList(gitdir)).length).toBe(pushes + 0);
      const log = (await gitCmd(gitdir, 'log', '--format=%s', 'main')).split('\n').filter(Boolean);
      expect(log.length).toBe(pushes);

      // A second store (cold caches) reads everything from the packs (lib/git/object-reader.ts).
      const cold = await openRepos(dir.path);
      try {
        const head = (await cold.store.head('r'))!;
        const listed = await cold.store.listFiles('r', head);
        expect([...listed.keys()].sort()).toEqual([...expected.keys()].sort());
        for (const [path, content] of expected) {
          expect(dec(await cold.store.readFileAt('r', head, path))).toBe(content);
          const obj = await cold.store.readObject('r', listed.get(path)!);
          expect(obj.type).toBe('blob');
          expect(dec(obj.content)).toBe(content);
        }
        const meta = await cold.store.readCommit('r', head);
        expect((await cold.store.readTree('r', meta.tree)).map((e) => e.path)).toEqual(['pages']);
        // The path index rebuilt from git alone (an empty database), and the bundle export.
        expect(await cold.repos.pages('r').then((p) => p.length)).toBe(expected.size);
        const bundle = await buildBundle(cold.store, 'r');
        expect(bundle).not.toBeNull();
        const file = join(dir.path, 'r.bundle');
        await writeFile(file, bundle!);
        await gitCmd(gitdir, 'bundle', 'verify', file);
        const [first] = await catFiles(gitdir, [`main:${[...expected.keys()][0]}`]);
        expect(first!.toString()).toBe([...expected.values()][0]);
      } finally {
        await cold.db.close();
      }
    } finally {
      await store.packMerges();
      await db.close();
    }
  });

  it('a large push is one large pack; small packs merge into one pack of any size; large packs are never merged', async () => {
    const { db, store, repos } = await openRepos(dir.path);
    const gitdir = join(dir.path, 'repos', 'r.git');
    const packDir = join(gitdir, 'objects', 'pack');
    const sizes = async () => (await packFiles(gitdir)).filter((n) => n.endsWith('.pack')).map((f) => nodeFs.statSync(join(packDir, f)).size);
    // Text that deflate cannot shrink much, so sizes on disk are close to sizes pushed.
    const noise = (n: number) => randomBytes(n).toString('base64');
    const expected = new Map<string, string>();
    try {
      await repos.create('r');
      const big = `# big\n${noise(1_200_000)}\n`;
      expected.set('big.md', big);
      expect((await repos.commitFiles('r', [{ path: 'big.md', content: enc(big) }], ann, 'a large push')).commit).not.toBeNull();
      expect(await looseObjects(gitdir)).toEqual([]);
      const [large] = await sizes();
      expect(await sizes()).toHaveLength(1);
      expect(large).toBeGreaterThan(SMALL_PACK_BYTES);

      // Small pushes, one pack each, until a merge is due; together they pass SMALL_PACK_BYTES.
      for (let i = 0; i <= MAX_SMALL_PACKS; i++) {
        const content = `# p${i}\n${noise(90_000)}\n`;
        expected.set(`p${i}.md`, content);
        await repos.commitFiles('r', [{ path: `p${i}.md`, content: enc(content) }], ann, `small ${i}`);
      }
      await store.packMerges();
      // The large pack as it was, and the merged one (past SMALL_PACK_BYTES, so it is not merged again).
      const after = (await sizes()).sort((a, b) => a - b);
      expect(after).toHaveLength(2);
      expect(after).toContain(large);
      expect(Math.min(...after)).toBeGreaterThan(SMALL_PACK_BYTES);
      expect(await looseObjects(gitdir)).toEqual([]);
      await fsckStrict(gitdir);
      expect((await revList(gitdir)).length).toBe(MAX_SMALL_PACKS + 2);
      const cold = await openRepos(dir.path);
      try {
        const head = (await cold.store.head('r'))!;
        for (const [path, content] of expected) expect(dec(await cold.store.readFileAt('r', head, path))).toBe(content);
      } finally {
        await cold.db.close();
      }
    } finally {
      await store.packMerges();
      await db.close();
    }
  });

  it('a merge takes the smallest packs up to the first twice their size together (at least two), the same whatever the order listed', () => {
    const packs = (sizes: number[]) => sizes.map((bytes, i) => ({ name: `p${String(i).padStart(2, '0')}`, bytes }));
    const taken = (sizes: number[]) => mergeable(packs(sizes)).map((p) => p.bytes);
    // Sixteen new packs under an old merged one: only the new ones.
    expect(taken([1000, ...Array(16).fill(10)])).toEqual(Array(16).fill(10));
    // A rung that is not yet twice what is below it goes along, the next one that is stays.
    expect(taken([200, 60, 15, 10, 10])).toEqual([10, 10, 15, 60]);
    // Packs of one size: all of them.
    expect(taken(Array(17).fill(90))).toHaveLength(17);
    // Never fewer than two.
    expect(taken([1, 100])).toEqual([1, 100]);
    expect(taken([5])).toEqual([5]);
    // Equal sizes are taken by name, whatever order the directory listed them in.
    const listed = packs([7, 7, 7, 100]);
    expect(mergeable([...listed].reverse()).map((p) => p.name)).toEqual(mergeable(listed).map((p) => p.name));
  });

  it('without packs (the Durable Object build has none) the objects stay loose', async () => {
    const { db, store, repos } = await openRepos(dir.path, nodeStoreFs({ packs: false }));
    const gitdir = join(dir.path, 'repos', 'r.git');
    try {
      await repos.create('r');
      await repos.commitFiles('r', [{ path: 'a.md', content: enc('# A\n') }], ann, 'one');
      expect((await packFiles(gitdir)).length).toBe(0);
      expect((await looseObjects(gitdir)).length).toBeGreaterThan(0);
      await fsckStrict(gitdir);
      await store.packMerges();
    } finally {
      await db.close();
    }
  });

  it('recovery clears a pack cut short by a crash, and keeps every complete pack', async () => {
    const { db, store, repos } = await openRepos(dir.path);
    const gitdir = join(dir.path, 'repos', 'r.git');
    try {
      await repos.create('r');
      await repos.commitFiles('r', [{ path: 'a.md', content: enc('# A\n') }], ann, 'one');
      const before = await packFiles(gitdir);
      const packDir = join(gitdir, 'objects', 'pack');
      await writeFile(join(packDir, 'tmp_pack_0123456789abcdef'), 'partial');
      await writeFile(join(packDir, 'tmp_idx_0123456789abcdef'), 'partial');
      // A merge cut short after deleting an .idx: its .pack is left, unreadable by anyone.
      await writeFile(join(packDir, `pack-${'e'.repeat(40)}.pack`), 'orphan');
      await store.recoverAll();
      expect(await packFiles(gitdir)).toEqual(before);
      await fsckStrict(gitdir);
      expect(dec(await store.readFileAt('r', (await store.head('r'))!, 'a.md'))).toBe('# A\n');
    } finally {
      await db.close();
    }
  });
});

describe('recovery after boot', () => {
  it('recoverLater: a dead writer\'s lock and temporary files are cleared before the repository\'s first write, the rest by the sweep', async () => {
    const first = await openRepos(dir.path);
    const ids = ['a', 'b'];
    try {
      for (const id of ids) {
        await first.repos.create(id);
        await first.repos.commitFiles(id, [{ path: 'p.md', content: enc('# P\n') }], ann, 'one');
      }
      await first.repos.searchSettled();
    } finally {
      await first.db.close();
    }
    // What a writer killed mid-push leaves: its fresh main.lock, a temporary object and a pack cut short.
    for (const id of ids) {
      const gitdir = join(dir.path, 'repos', `${id}.git`);
      await writeFile(join(gitdir, 'refs', 'heads', 'main.lock'), `${'0'.repeat(40)}\n`);
      await writeFile(join(gitdir, 'objects', 'tmp_obj_dead'), 'partial');
      await writeFile(join(gitdir, 'objects', 'pack', 'tmp_pack_dead'), 'partial');
    }
    const { db, store, repos } = await openRepos(dir.path);
    try {
      await store.recoverLater();
      // The first write to `a` waits for a's own recovery (its lock is younger than stale: without that, refused).
      const r = await repos.commitFiles('a', [{ path: 'q.md', content: enc('# Q\n') }], ann, 'after the crash');
      expect(r.commit?.sha).toBe((await store.head('a'))!);
      await store.sweepRecovery();
      for (const id of ids) {
        const gitdir = join(dir.path, 'repos', `${id}.git`);
        expect(nodeFs.existsSync(join(gitdir, 'refs', 'heads', 'main.lock'))).toBe(false);
        expect(nodeFs.existsSync(join(gitdir, 'objects', 'tmp_obj_dead'))).toBe(false);
        expect((await readdir(join(gitdir, 'objects', 'pack'))).filter((n) => n.startsWith('tmp_'))).toEqual([]);
        await fsckStrict(gitdir);
      }
      expect(dec(await store.readFileAt('a', (await store.head('a'))!, 'q.md'))).toBe('# Q\n');
    } finally {
      await repos.searchSettled();
      await db.close();
    }
  });
});

describe('the Node filesystem\'s packs', () => {
  it('lists complete packs without a .keep, and removes a pack with what git wrote beside it', async () => {
    const packs = nodeStoreFs().packs!;
    const packDir = join(dir.path, 'objects', 'pack');
    const name = (c: string) => c.repeat(40);
    await packs.write(packDir, name('a'), enc('PACK-a'), enc('IDX-a'));
    await packs.write(packDir, name('b'), enc('PACK-bb'), enc('IDX-b'));
    await packs.write(packDir, name('c'), enc('PACK-c'), enc('IDX-c'));
    await writeFile(join(packDir, `pack-${name('b')}.keep`), '');
    await writeFile(join(packDir, `pack-${name('d')}.pack`), 'no idx');
    expect((await packs.list(packDir)).sort((x, y) => (x.name < y.name ? -1 : 1))).toEqual([
      { name: name('a'), bytes: 6 },
      { name: name('c'), bytes: 6 },
    ]);
    await writeFile(join(packDir, `pack-${name('a')}.rev`), 'rev');
    await packs.remove(packDir, [name('a'), name('e')]);
    expect(await packFiles(packDir.slice(0, -'/objects/pack'.length))).toEqual(
      [`pack-${name('b')}.idx`, `pack-${name('b')}.keep`, `pack-${name('b')}.pack`, `pack-${name('c')}.idx`, `pack-${name('c')}.pack`, `pack-${name('d')}.pack`].sort(),
    );
  });
});

describe('a pack merge racing reads', () => {
  /** A StoreFs that runs `hook` after listing objects/pack, before returning the list. */
  function hookedFs(hook: { fn: (() => Promise<void>) | null }): StoreFs {
    const base = nodeStoreFs();
    const packs = base.packs!;
    return {
      ...base,
      packs: {
        ...packs,
        list: async (dir: string) => {
          const out = await packs.list(dir);
          if (hook.fn) {
            const fn = hook.fn;
            hook.fn = null;
            await fn();
          }
          return out;
        },
      },
    };
  }

  async function manyPacks() {
    const { db, store, repos } = await openRepos(dir.path);
    await repos.create('r');
    const expected = new Map<string, string>();
    // One push at a time: one pack each; merges are awaited so the count is exact afterwards.
    for (let i = 0; i < MAX_SMALL_PACKS; i++) {
      const path = `p${i}.md`;
      expected.set(path, `# ${i}\n`);
      await repos.commitFiles('r', [{ path, content: enc(`# ${i}\n`) }], ann, `push ${i}`);
      await store.packMerges();
    }
    return { db, store, repos, expected };
  }

  it('a reader that listed the packs just before the merge deleted them still answers right', async () => {
    const { db, store, repos, expected } = await manyPacks();
    const gitdir = join(dir.path, 'repos', 'r.git');
    const hook: { fn: (() => Promise<void>) | null } = { fn: null };
    const reader = new GitStore({ fs: hookedFs(hook), root: join(dir.path, 'repos'), cacheBytes: 0 });
    try {
      const head = (await store.head('r'))!;
      // Every object the reader needs is in one of the packs about to be merged.
      const files = await store.listFiles('r', head);
      expect((await packFiles(gitdir)).filter((f) => f.endsWith('.idx')).length).toBe(MAX_SMALL_PACKS);
      // Between the reader's listing of objects/pack and its opening of the packs it listed, one more
      // push makes the count exceed the bound, and its merge runs to the end.
      const listedBefore = (await packFiles(gitdir)).filter((f) => f.endsWith('.idx'));
      let merged = false;
      hook.fn = async () => {
        await repos.commitFiles('r', [{ path: 'extra.md', content: enc('# extra\n') }], ann, 'extra');
        await store.packMerges('r');
        merged = true;
      };
      const [path, content] = [...expected][5]!;
      expect(dec(await reader.readBlob('r', files.get(path)!))).toBe(content);
      expect(merged).toBe(true);
      const after = (await packFiles(gitdir)).filter((f) => f.endsWith('.idx'));
      expect(after.length).toBe(1);
      expect(after.some((f) => listedBefore.includes(f))).toBe(false);
      await fsckStrict(gitdir);
      // And everything else reads back through the same reader.
      const head2 = (await store.head('r'))!;
      for (const [p, c] of [...expected, ['extra.md', '# extra\n'] as const]) expect(dec(await reader.readFileAt('r', head2, p))).toBe(c);
    } finally {
      await db.close();
    }
  });

  it('concurrent readers during repeated merges never answer wrong', async () => {
    const { db, store, repos, expected } = await manyPacks();
    const gitdir = join(dir.path, 'repos', 'r.git');
    try {
      const readers = Array.from({ length: 3 }, () => new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos'), cacheBytes: 0 }));
      let writing = true;
      const writer = (async () => {
        for (let i = 0; i < 3 * (MAX_SMALL_PACKS + 1); i++) {
          const path = `w${i}.md`;
          expected.set(path, `# w${i}\n`);
          await repos.commitFiles('r', [{ path, content: enc(`# w${i}\n`) }], ann, `w${i}`);
        }
        await store.packMerges();
        writing = false;
      })();
      const wrong: string[] = [];
      let reads = 0;
      await Promise.all(
        readers.map(async (reader) => {
          while (writing) {
            const head = (await store.head('r'))!;
            // Only pages this head holds are checked (the writer adds pages as it goes).
            const files = await reader.listFiles('r', head);
            for (const [path, blob] of files) {
              const got = dec(await reader.readBlob('r', blob));
              reads++;
              if (got !== expected.get(path)) wrong.push(`${path}: ${got}`);
            }
          }
        }),
      );
      await writer;
      expect(wrong).toEqual([]);
      expect(reads).toBeGreaterThan(0);
      expect((await packFiles(gitdir)).filter((f) => f.endsWith('.idx')).length).toBeLessThanOrEqual(MAX_SMALL_PACKS + 1);
      await fsckStrict(gitdir);
    } finally {
      await db.close();
    }
  });
});
