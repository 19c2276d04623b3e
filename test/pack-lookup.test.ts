/**
 * Finding objects in a repository of many packs (lib/git/midx.ts, lib/git/id-table.ts,
 * lib/git/object-reader.ts): the multi-pack-index the store keeps over its large packs against git's own
 * (`git multi-pack-index write` makes the same bytes; `verify`, `fsck --strict`, `verify-pack` and a clone of
 * the export accept the repository), and what a pull and a page read cost, counted as reads through the
 * StoreFs: the same with 12 packs as with 3, in proportion to the pages read. Then the multi-pack-index when
 * it is wrong — naming a pack that is gone, damaged, written by git over small packs a merge deletes,
 * replaced while a lookup reads it — never gives a wrong answer.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cp, readdir, readFile, rename, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { GitStore, MAX_SMALL_PACKS, SMALL_PACK_BYTES } from '../lib/git/store.ts';
import { nodeCodec, nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { ManualClock } from '../lib/util/clock.ts';
import type { StoreFs } from '../lib/git/fs.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { buildMidx, MIDX_FILE, openMidx, parseMidxHead } from '../lib/git/midx.ts';
import { TablePages } from '../lib/git/id-table.ts';
import { buildBundle } from '../lib/git/bundle.ts';
import { hexToBytes } from '../lib/git/objects.ts';
import { tempDir } from './helpers/env.ts';
import { fsckStrict, git } from './reliability/helpers/git.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);
const ann = { name: 'Ann Author', email: 'ann@example.test' };
/** Text deflate cannot shrink much: one such page makes its push's pack a large one. */
const noise = (n: number) => randomBytes(n).toString('base64');

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('kr-lookup-');
});
afterEach(async () => {
  await dir.cleanup();
});

/** Reads through a StoreFs, by what they read: an index (.idx, multi-pack-index), a pack, anything else. */
interface Reads {
  index: { calls: number; bytes: number };
  pack: { calls: number; bytes: number };
  other: { calls: number; bytes: number };
}

function counting(): { fs: StoreFs; reads: Reads; reset(): void } {
  const base = nodeStoreFs();
  const zero = (): Reads => ({ index: { calls: 0, bytes: 0 }, pack: { calls: 0, bytes: 0 }, other: { calls: 0, bytes: 0 } });
  const out = { reads: zero() } as { fs: StoreFs; reads: Reads; reset(): void };
  const count = (path: string, got: Uint8Array | null) => {
    const kind = path.endsWith('.pack') ? 'pack' : path.endsWith('.idx') || path.endsWith(`/${MIDX_FILE}`) ? 'index' : 'other';
    out.reads[kind].calls++;
    out.reads[kind].bytes += got?.byteLength ?? 0;
  };
  out.fs = {
    ...base,
    readFile: async (path) => {
      const got = await base.readFile(path);
      count(path, got);
      return got;
    },
    readRange: async (path, position, length) => {
      const got = await base.readRange!(path, position, length);
      count(path, got);
      return got;
    },
  };
  out.reset = () => {
    out.reads = zero();
  };
  return out;
}

const clock = () => new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0));

/** A writer: the store with its default budget, the index without full-text rows (not measured here). */
async function openWriter(root: string) {
  const db = await openDatabaseFile(join(root, 'service.db'), 0);
  const store = new GitStore({ fs: nodeStoreFs(), root: join(root, 'repos') });
  const repos = new RepoStore(store, new PathIndex(db, { search: false }), clock());
  return { db, store, repos };
}

/** A reader with cold caches over the same repositories and index, through `fs`. */
function coldReader(root: string, db: Database, fs: StoreFs, cacheBytes: number) {
  const store = new GitStore({ fs, root: join(root, 'repos'), cacheBytes });
  return { store, repos: new RepoStore(store, new PathIndex(db, { search: false }), clock()) };
}

const packDir = (root: string) => join(root, 'repos', 'r.git', 'objects', 'pack');
const packSizes = async (root: string) =>
  Promise.all(
    (await readdir(packDir(root)))
      .filter((f) => f.endsWith('.pack'))
      .map(async (f) => ({ name: f.slice(5, -5), bytes: (await stat(join(packDir(root), f))).size })),
  );
const largePacks = async (root: string) => (await packSizes(root)).filter((p) => p.bytes >= SMALL_PACK_BYTES).map((p) => p.name).sort();
const midxPacks = async (root: string) => parseMidxHead(await readFile(join(packDir(root), MIDX_FILE)))?.packs ?? null;

/** One push of `small` small pages and, when `large`, a page that makes the pack a large one. */
async function push(repos: RepoStore, expected: Map<string, string>, round: number, opts: { small: number; large: boolean }) {
  const files: Array<{ path: string; content: Uint8Array }> = [];
  for (let j = 0; j < opts.small; j++) {
    const path = `notes/r${round}/page-${j}.md`;
    const content = `# Round ${round}, page ${j}\n\n${'Decisions and their context. '.repeat(4 + (j % 5))}${j}\n`;
    expected.set(path, content);
    files.push({ path, content: enc(content) });
  }
  if (opts.large) {
    const path = `attachments/r${round}.md`;
    const content = `# Attachment ${round}\n${noise(1_200_000)}\n`;
    expected.set(path, content);
    files.push({ path, content: enc(content) });
  }
  const r = await repos.commitFiles('r', files, ann, `round ${round}`);
  expect(r.commit).not.toBeNull();
}

describe('the multi-pack-index the store keeps', () => {
  it('lists every large pack, is byte for byte what git writes for them, and git accepts the repository', async () => {
    const { db, store, repos } = await openWriter(dir.path);
    const expected = new Map<string, string>();
    try {
      await repos.create('r');
      for (let round = 0; round < 4; round++) await push(repos, expected, round, { small: 20, large: true });
      for (let round = 4; round < 6; round++) await push(repos, expected, round, { small: 3, large: false });
      await store.packMerges();
      const large = await largePacks(dir.path);
      expect(large).toHaveLength(4);
      expect((await packSizes(dir.path)).length).toBe(6);
      // Exactly the large packs; the two small ones are read through their own .idx.
      expect(await midxPacks(dir.path)).toEqual(large);
      const gitdir = join(dir.path, 'repos', 'r.git');
      await git(gitdir, 'multi-pack-index', 'verify');
      await fsckStrict(gitdir);
      for (const f of (await readdir(packDir(dir.path))).filter((f) => f.endsWith('.idx'))) await git(gitdir, 'verify-pack', join(packDir(dir.path), f));

      // git's own for the same packs, in a copy: the same bytes.
      const copy = join(dir.path, 'copy.git');
      await cp(gitdir, copy, { recursive: true });
      await rename(join(copy, 'objects', 'pack', MIDX_FILE), join(dir.path, 'ours'));
      execFileSync('git', ['--git-dir', copy, 'multi-pack-index', 'write', '--stdin-packs'], { input: large.map((n) => `pack-${n}.idx\n`).join('') });
      expect(Buffer.compare(await readFile(join(copy, 'objects', 'pack', MIDX_FILE)), await readFile(join(dir.path, 'ours')))).toBe(0);

      // git reads every object through it, and a clone of the export has every page.
      const all = (await git(gitdir, 'cat-file', '--batch-all-objects', '--batch-check')).trim().split('\n');
      expect(all.length).toBeGreaterThan(expected.size);
      const cold = coldReader(dir.path, db, nodeStoreFs(), 256 * 1024);
      const bundle = await buildBundle(cold.store, 'r');
      await writeFile(join(dir.path, 'r.bundle'), bundle!);
      execFileSync('git', ['clone', '-q', join(dir.path, 'r.bundle'), join(dir.path, 'clone')]);
      const listed = execFileSync('git', ['-C', join(dir.path, 'clone'), 'ls-files'], { encoding: 'utf8' }).trim().split('\n');
      expect(listed.sort()).toEqual([...expected.keys()].sort());
      for (const path of ['notes/r5/page-2.md', 'attachments/r1.md']) {
        expect(await readFile(join(dir.path, 'clone', path), 'utf8')).toBe(expected.get(path));
      }
    } finally {
      await store.packMerges();
      await db.close();
    }
  });
});

describe('reads on a repository of many packs', () => {
  /** What a cold full pull and a cold page read cost, and that they answer right. */
  async function measure(db: Database, expected: Map<string, string>) {
    const c = counting();
    const pullStore = coldReader(dir.path, db, c.fs, 256 * 1024);
    await pullStore.repos.ready('r');
    c.reset();
    const pulled = await pullStore.repos.pull('r');
    const pull = c.reads;
    expect(pulled.files.length).toBe(expected.size);
    for (const f of pulled.files) expect(dec(f.content), f.entry.path).toBe(expected.get(f.entry.path));

    const pageStore = coldReader(dir.path, db, c.fs, 256 * 1024);
    await pageStore.repos.ready('r');
    c.reset();
    const one = await pageStore.repos.page('r', 'notes/r3/page-7.md');
    const page = c.reads;
    expect(dec(one!.content)).toBe(expected.get('notes/r3/page-7.md'));
    const indexBytes = (await readdir(packDir(dir.path)))
      .filter((f) => f.endsWith('.idx') || f === MIDX_FILE)
      .reduce(async (n, f) => (await n) + (await stat(join(packDir(dir.path), f))).size, Promise.resolve(0));
    return { pull, page, pages: expected.size, indexBytes: await indexBytes };
  }

  it('a full pull and a page read cost in proportion to what they read, the same with 12 packs as with 3', async () => {
    const { db, store, repos } = await openWriter(dir.path);
    const expected = new Map<string, string>();
    try {
      await repos.create('r');
      let round = 0;
      // Two small packs throughout (read through their own .idx), then large packs: 3, then 12.
      for (; round < 2; round++) await push(repos, expected, round, { small: 40, large: false });
      for (; round < 5; round++) await push(repos, expected, round, { small: 150, large: true });
      await store.packMerges();
      expect(await largePacks(dir.path)).toHaveLength(3);
      // The pushes' link rows made (as at a graceful stop): the cold readers' sync then reads no page.
      await repos.searchSettled();
      const three = await measure(db, expected);
      for (; round < 14; round++) await push(repos, expected, round, { small: 150, large: true });
      await store.packMerges();
      expect(await largePacks(dir.path)).toHaveLength(12);
      expect(await midxPacks(dir.path)).toEqual(await largePacks(dir.path));
      await repos.searchSettled();
      const twelve = await measure(db, expected);

      for (const m of [three, twelve]) {
        // The pull: each index page read about once (its pages, the MIDX's checksum read after each),
        // nothing like an index per page; the packs a run of records per read, far fewer reads than pages.
        expect(m.pull.index.bytes).toBeLessThanOrEqual(m.indexBytes + 16 * 1024);
        expect(m.pull.index.calls).toBeLessThanOrEqual(64);
        expect(m.pull.pack.calls).toBeLessThanOrEqual(m.pages / 20);
        // A page read: a handful of small reads, whatever the repository's size.
        expect(m.page.index.calls + m.page.pack.calls).toBeLessThanOrEqual(16);
        expect(m.page.index.bytes + m.page.pack.bytes).toBeLessThanOrEqual(32 * 1024);
      }
      // Four times the packs (and the pages): per page pulled, no more reads than with 3; a page read the
      // same reads, within one page of the MIDX's more ids.
      // (Give or take the pull's first batch: 16 pages, sized before any page was seen, up to a lookup each.)
      expect(twelve.pull.index.calls).toBeLessThanOrEqual((twelve.pages * three.pull.index.calls) / three.pages + 16);
      expect(twelve.pull.pack.calls / twelve.pages).toBeLessThanOrEqual((1.2 * three.pull.pack.calls) / three.pages);
      expect(twelve.page.index.calls + twelve.page.pack.calls).toBeLessThanOrEqual(three.page.index.calls + three.page.pack.calls + 1);
      expect(twelve.page.index.bytes).toBeLessThanOrEqual(three.page.index.bytes + 6 * 1024);
    } finally {
      await store.packMerges();
      await db.close();
    }
  });
});

describe('a multi-pack-index that is wrong is never believed', () => {
  async function fourLarge() {
    const w = await openWriter(dir.path);
    const expected = new Map<string, string>();
    await w.repos.create('r');
    for (let round = 0; round < 4; round++) await push(w.repos, expected, round, { small: 30, large: true });
    await w.store.packMerges();
    expect(await midxPacks(dir.path)).toHaveLength(4);
    return { ...w, expected, gitdir: join(dir.path, 'repos', 'r.git') };
  }

  async function expectAllRead(db: Database, fs: StoreFs, expected: Map<string, string>) {
    const cold = coldReader(dir.path, db, fs, 256 * 1024);
    const pulled = await cold.repos.pull('r');
    expect(pulled.files.length).toBe(expected.size);
    for (const f of pulled.files) expect(dec(f.content), f.entry.path).toBe(expected.get(f.entry.path));
    const single = coldReader(dir.path, db, fs, 0);
    for (const path of ['notes/r0/page-3.md', 'notes/r3/page-29.md', 'attachments/r2.md']) {
      expect(dec((await single.repos.page('r', path))!.content)).toBe(expected.get(path));
    }
  }

  it('one naming a pack that is not there, or cut short, is passed over; the upkeep writes it again', async () => {
    const { db, store, expected, gitdir } = await fourLarge();
    const midx = join(packDir(dir.path), MIDX_FILE);
    try {
      // A MIDX over the four packs and one more that this repository does not have.
      const other = await tempDir('kr-lookup-other-');
      try {
        execFileSync('git', ['init', '-q', '--bare', other.path]);
        const oid = execFileSync('git', ['--git-dir', other.path, 'hash-object', '-w', '--stdin'], { input: 'elsewhere\n', encoding: 'utf8' });
        execFileSync('git', ['--git-dir', other.path, 'pack-objects', '-q', join(other.path, 'objects', 'pack', 'pack')], { input: oid });
        const idx = (await readdir(join(other.path, 'objects', 'pack'))).find((f) => f.endsWith('.idx'))!;
        const packs = await Promise.all(
          (await largePacks(dir.path)).map(async (name) => ({ name, idx: await readFile(join(packDir(dir.path), `pack-${name}.idx`)) })),
        );
        packs.push({ name: idx.slice(5, -4), idx: await readFile(join(other.path, 'objects', 'pack', idx)) });
        await writeFile(midx, await buildMidx(nodeCodec, packs));
      } finally {
        await other.cleanup();
      }
      await expect(git(gitdir, 'multi-pack-index', 'verify')).rejects.toThrow();
      await expectAllRead(db, nodeStoreFs(), expected);

      // Cut short: its head still parses, its checksum is not where the head puts it.
      await store.withLock('r', () => store.indexPacks('r'));
      await truncate(midx, (await stat(midx)).size - 100);
      await expectAllRead(db, nodeStoreFs(), expected);

      // A server checks each repository's once after it starts: the upkeep after its first push there
      // makes it whole again.
      const restarted = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
      const repos = new RepoStore(restarted, new PathIndex(db, { search: false }), clock());
      await push(repos, expected, 10, { small: 2, large: false });
      await restarted.packMerges();
      await git(gitdir, 'multi-pack-index', 'verify');
      expect(await midxPacks(dir.path)).toEqual(await largePacks(dir.path));
      await fsckStrict(gitdir);
      await expectAllRead(db, nodeStoreFs(), expected);
    } finally {
      await store.packMerges();
      await db.close();
    }
  });

  it('one git wrote over small packs too is read, and rewritten before a merge deletes those packs', async () => {
    const { db, store, repos, expected, gitdir } = await fourLarge();
    try {
      for (let round = 4; round < 4 + MAX_SMALL_PACKS - 1; round++) await push(repos, expected, round, { small: 1, large: false });
      await store.packMerges();
      const before = (await packSizes(dir.path)).length;
      expect(before).toBe(4 + MAX_SMALL_PACKS - 1);
      await git(gitdir, 'multi-pack-index', 'write');
      expect(await midxPacks(dir.path)).toHaveLength(before);
      await expectAllRead(db, nodeStoreFs(), expected);
      // Two more small packs: past MAX_SMALL_PACKS, the small ones are merged and deleted.
      for (let round = 30; round < 32; round++) await push(repos, expected, round, { small: 1, large: false });
      await store.packMerges();
      expect((await packSizes(dir.path)).length).toBeLessThan(before);
      await git(gitdir, 'multi-pack-index', 'verify');
      expect(await midxPacks(dir.path)).toEqual(await largePacks(dir.path));
      await fsckStrict(gitdir);
      await expectAllRead(db, nodeStoreFs(), expected);
    } finally {
      await store.packMerges();
      await db.close();
    }
  });

  it('one replaced by another between a lookup\'s reads: the lookup starts over, never mixing the two', async () => {
    const { db, store, repos, expected, gitdir } = await fourLarge();
    const midx = join(packDir(dir.path), MIDX_FILE);
    try {
      // Another valid MIDX: git's over every pack, three small ones too: larger, and with other pack
      // numbers and other rows at the same places.
      for (let round = 4; round < 7; round++) await push(repos, expected, round, { small: 5, large: false });
      await store.packMerges();
      const copy = join(dir.path, 'copy.git');
      await cp(gitdir, copy, { recursive: true });
      execFileSync('git', ['--git-dir', copy, 'multi-pack-index', 'write']);
      const replacement = join(dir.path, 'replacement');
      const ours = await readFile(midx);
      const theirs = await readFile(join(copy, 'objects', 'pack', MIDX_FILE));
      expect(parseMidxHead(ours)!.packs).toHaveLength(4);
      expect(parseMidxHead(theirs)!.packs).toHaveLength(7);

      // A StoreFs that swaps the file in just before the reader's first read of a page of ids, of a page of
      // offsets (the row found in the old file, its entry read from the new one), or of the checksum (between
      // the two reads of the head).
      for (const swapAt of ['ids', 'offsets', 'checksum'] as const) {
        await writeFile(midx, ours);
        const base = nodeStoreFs();
        let swapped = false;
        const head = parseMidxHead(ours)!;
        const fs: StoreFs = {
          ...base,
          readRange: async (path, position, length) => {
            const from = { ids: head.oidl, offsets: head.ooff, checksum: head.trailer }[swapAt];
            const due = swapAt === 'checksum' ? position === head.trailer : position >= from && position < from + (swapAt === 'ids' ? head.n * 20 : head.n * 8);
            if (!swapped && path === midx && due) {
              swapped = true;
              await writeFile(replacement, theirs);
              await rename(replacement, midx);
            }
            return base.readRange!(path, position, length);
          },
        };
        await expectAllRead(db, fs, expected);
        expect(swapped, swapAt).toBe(true);
      }
    } finally {
      await store.packMerges();
      await db.close();
    }
  });
});

describe('the MIDX format', () => {
  /** An idx v2 listing `rows` (id, offset), with the 64-bit table for offsets from 2 GiB on. */
  function idxOf(rows: Array<[string, number]>): Uint8Array {
    const sorted = [...rows].sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const n = sorted.length;
    const large = sorted.filter(([, o]) => o >= 2 ** 31);
    const out = new Uint8Array(8 + 1024 + n * 28 + large.length * 8 + 40);
    const v = new DataView(out.buffer);
    v.setUint32(0, 0xff744f63);
    v.setUint32(4, 2);
    for (let b = 0; b < 256; b++) v.setUint32(8 + b * 4, sorted.filter(([id]) => parseInt(id.slice(0, 2), 16) <= b).length);
    let l = 0;
    sorted.forEach(([id, offset], i) => {
      out.set(hexToBytes(id), 1032 + i * 20);
      if (offset >= 2 ** 31) {
        v.setUint32(1032 + n * 24 + i * 4, 0x80000000 | l);
        v.setBigUint64(1032 + n * 28 + l * 8, BigInt(offset));
        l++;
      } else {
        v.setUint32(1032 + n * 24 + i * 4, offset);
      }
    });
    return out;
  }

  /** A StoreFs over files in memory (reads only). */
  function memoryFs(files: Map<string, Uint8Array>): StoreFs {
    const base = nodeStoreFs();
    return {
      ...base,
      readFile: async (p) => files.get(p) ?? null,
      readRange: async (p, at, n) => files.get(p)?.slice(at, at + n) ?? null,
    };
  }

  it('offsets past 4 GiB go to LOFF (as git stores them); an id in two packs is listed once, in the first by name', async () => {
    const id = (c: string, i: number) => `${c}${String(i).padStart(39, '0')}`;
    const a = idxOf([
      [id('1', 1), 12],
      [id('8', 2), 2 ** 31 + 5],
      [id('f', 3), 5 * 2 ** 32 + 7],
    ]);
    const b = idxOf([
      [id('1', 1), 99],
      [id('2', 4), 2 ** 31 - 1],
    ]);
    const names = { a: 'a'.repeat(40), b: 'b'.repeat(40) };
    const bytes = await buildMidx(nodeCodec, [{ name: names.b, idx: b }, { name: names.a, idx: a }]);
    const path = '/objects/pack/multi-pack-index';
    const fs = memoryFs(new Map([[path, bytes]]));
    const m = (await openMidx(fs, path))!;
    expect(m.head.packs).toEqual([names.a, names.b]);
    expect(m.head.n).toBe(4);
    expect(m.head.loff).toBeGreaterThan(0);
    const pages = new TablePages(fs, 1 << 20);
    const at = async (oid: string) => {
      const row = await pages.find(m.table, hexToBytes(oid));
      return row < 0 ? null : pages.entry(m.table, row);
    };
    expect(await at(id('1', 1))).toEqual({ pack: 0, offset: 12 });
    expect(await at(id('2', 4))).toEqual({ pack: 1, offset: 2 ** 31 - 1 });
    expect(await at(id('8', 2))).toEqual({ pack: 0, offset: 2 ** 31 + 5 });
    expect(await at(id('f', 3))).toEqual({ pack: 0, offset: 5 * 2 ** 32 + 7 });
    expect(await at(id('3', 9))).toBeNull();
    // Without an offset past 4 GiB there is no LOFF: the 32-bit entries hold offsets up to 4 GiB whole.
    const small = await buildMidx(nodeCodec, [{ name: names.b, idx: b }]);
    expect(parseMidxHead(small)!.loff).toBe(-1);
  });

  it('refuses what is not one: another signature, names out of order, a fan-out that goes down, a wrong size', async () => {
    const a = idxOf([['1'.repeat(40), 12]]);
    const b = idxOf([['2'.repeat(40), 12]]);
    const good = await buildMidx(nodeCodec, [{ name: 'a'.repeat(40), idx: a }, { name: 'b'.repeat(40), idx: b }]);
    expect(parseMidxHead(good)).not.toBeNull();
    const damaged = (fn: (x: Uint8Array) => void) => {
      const x = good.slice();
      fn(x);
      return parseMidxHead(x);
    };
    expect(damaged((x) => (x[0] = 0x4e))).toBeNull();
    expect(damaged((x) => (x[5] = 2))).toBeNull(); // SHA-256
    const text = new TextDecoder('latin1').decode(good);
    const pnam = text.indexOf('pack-');
    expect(damaged((x) => (x[pnam + 5] = 0x63))).toBeNull(); // the first name now sorts after the second
    const oidf = Number(new DataView(good.buffer).getBigUint64(12 + 12 + 4));
    expect(damaged((x) => new DataView(x.buffer).setUint32(oidf + 0x10 * 4, 5))).toBeNull();
    expect(parseMidxHead(good.subarray(0, 40))).toBeNull();
    await expect(buildMidx(nodeCodec, [{ name: 'a'.repeat(40), idx: new Uint8Array(10) }])).rejects.toThrow(RangeError);
    // A chunk table that puts OIDF a terabyte in: not read that far, not used.
    const far = good.slice();
    new DataView(far.buffer).setBigUint64(12 + 12 + 4, 2n ** 40n);
    const asked: number[] = [];
    const fs = memoryFs(new Map([['/m', far]]));
    const spy: StoreFs = { ...fs, readRange: (p, at, n) => (asked.push(n), fs.readRange!(p, at, n)) };
    expect(await openMidx(spy, '/m')).toBeNull();
    expect(Math.max(...asked)).toBeLessThanOrEqual(4096);
  });
});
