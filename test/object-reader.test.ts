/**
 * lib/git/object-reader.ts against git itself: every object of repositories git wrote (loose, packed by
 * `git gc` with OFS_DELTA chains, repacked with REF_DELTA) reads back byte for byte as `git cat-file`
 * gives it, through Node's zlib and through the web-standard DecompressionStream (what Workers runs); tree
 * and commit parsing agree with isomorphic-git's; damaged files give CorruptObjectError, never a crash
 * or a wrong answer.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import git from 'isomorphic-git';
import * as nodeFs from 'node:fs';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { webCodec, packRecord } from '../lib/git/objects.ts';
import { buildPack } from '../lib/git/pack.ts';
import { CorruptObjectError, ObjectMissingError } from '../lib/core/errors.ts';
import {
  applyDelta,
  MAX_OBJECT_BYTES,
  ObjectReader,
  parseCommit,
  parseTree,
} from '../lib/git/object-reader.ts';
import { tempDir } from './helpers/env.ts';

const enc = (s: string) => new TextEncoder().encode(s);

let dir: { path: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  dir = await tempDir('kr-reader-');
});
afterEach(async () => {
  await dir.cleanup();
});

const run = (args: string[], cwd: string, input?: string) =>
  execFileSync('git', args, {
    cwd,
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, GIT_AUTHOR_NAME: 'Ann', GIT_AUTHOR_EMAIL: 'ann@example.test', GIT_COMMITTER_NAME: 'Ann', GIT_COMMITTER_EMAIL: 'ann@example.test', GIT_AUTHOR_DATE: '1700000000 +0100', GIT_COMMITTER_DATE: '1700000000 +0100' },
  });
const catBytes = (gitdir: string, type: string, oid: string) =>
  new Uint8Array(execFileSync('git', ['--git-dir', gitdir, 'cat-file', type, oid], { maxBuffer: 64 * 1024 * 1024 }));

/** A repository git wrote: 30 commits of pages that change a little each time (so gc makes deltas). */
function gitRepo(): { work: string; gitdir: string } {
  const work = join(dir.path, 'work');
  nodeFs.mkdirSync(work, { recursive: true });
  run(['init', '-q', '-b', 'main'], work);
  const base = Array.from({ length: 200 }, (_, i) => `line ${i} of the design notes, with enough words to delta well\n`).join('');
  for (let c = 0; c < 30; c++) {
    for (let p = 0; p < 4; p++) {
      nodeFs.mkdirSync(join(work, 'docs', `d${p % 2}`), { recursive: true });
      nodeFs.writeFileSync(join(work, 'docs', `d${p % 2}`, `page${p}.md`), `# Page ${p}\n\n${base}change ${c}\n${'x'.repeat(c * 3)}\n`);
    }
    run(['add', '-A'], work);
    run(['commit', '-q', '-m', `commit ${c}\n\nbody of ${c}`], work);
  }
  return { work, gitdir: join(work, '.git') };
}

const allObjects = (gitdir: string) =>
  run(['--git-dir', gitdir, 'cat-file', '--batch-all-objects', '--batch-check'], gitdir)
    .trim()
    .split('\n')
    .map((l) => l.split(' '))
    .map(([oid, type]) => ({ oid: oid!, type: type! }));

async function expectAllLikeGit(gitdir: string, reader: ObjectReader): Promise<number> {
  const objects = allObjects(gitdir);
  for (const { oid, type } of objects) {
    const o = await reader.read(gitdir, oid);
    expect(o.type, oid).toBe(type);
    expect(Buffer.from(o.content).equals(Buffer.from(catBytes(gitdir, type, oid))), oid).toBe(true);
  }
  return objects.length;
}

/** How many records of the repository's packs are deltas of each kind (git verify-pack). */
function deltaCount(gitdir: string): number {
  const packs = nodeFs.readdirSync(join(gitdir, 'objects', 'pack')).filter((f) => f.endsWith('.idx'));
  let n = 0;
  for (const p of packs) {
    const out = run(['verify-pack', '-v', join(gitdir, 'objects', 'pack', p)], gitdir);
    n += out.split('\n').filter((l) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(l)).length;
  }
  return n;
}

const readerOf = (codec?: typeof webCodec) => new ObjectReader({ fs: nodeStoreFs(), codec, cacheBytes: 1024 * 1024 });

describe('ObjectReader against git', () => {
  it('loose objects read back as git cat-file gives them', async () => {
    const { gitdir } = gitRepo();
    expect(nodeFs.readdirSync(join(gitdir, 'objects', 'pack'))).toEqual([]);
    expect(await expectAllLikeGit(gitdir, readerOf())).toBeGreaterThan(100);
  });

  it('a pack git gc wrote, with OFS_DELTA chains, through zlib and through DecompressionStream', async () => {
    const { gitdir } = gitRepo();
    run(['--git-dir', gitdir, 'gc', '-q', '--aggressive', '--prune=now'], gitdir);
    expect(deltaCount(gitdir)).toBeGreaterThan(50);
    expect((await readdir(join(gitdir, 'objects'))).filter((n) => /^[0-9a-f]{2}$/.test(n))).toEqual([]);
    const n = await expectAllLikeGit(gitdir, readerOf());
    expect(await expectAllLikeGit(gitdir, readerOf(webCodec))).toBe(n);
  });

  it('REF_DELTA records (a repack without delta-base offsets)', async () => {
    const { gitdir } = gitRepo();
    run(['--git-dir', gitdir, '-c', 'repack.useDeltaBaseOffset=false', 'repack', '-q', '-a', '-d', '-f', '--depth=40', '--window=50'], gitdir);
    expect(deltaCount(gitdir)).toBeGreaterThan(50);
    const pack = nodeFs.readdirSync(join(gitdir, 'objects', 'pack')).find((f) => f.endsWith('.pack'))!;
    // git repack writes REF_DELTA (type 7) records when offsets are off: at least one is in the pack.
    const bytes = await readFile(join(gitdir, 'objects', 'pack', pack));
    const types = new Set<number>();
    for (const l of run(['verify-pack', '-v', join(gitdir, 'objects', 'pack', pack.replace('.pack', '.idx'))], gitdir).split('\n')) {
      const m = /^[0-9a-f]{40} \w+ +\d+ \d+ (\d+)/.exec(l);
      if (m) types.add((bytes[Number(m[1])]! >> 4) & 7);
    }
    expect(types.has(7)).toBe(true);
    expect(types.has(6)).toBe(false);
    await expectAllLikeGit(gitdir, readerOf());
  });

  it('trees and commits parse as isomorphic-git reads them', async () => {
    const { gitdir } = gitRepo();
    run(['--git-dir', gitdir, 'gc', '-q', '--prune=now'], gitdir);
    const reader = readerOf();
    let trees = 0;
    let commits = 0;
    for (const { oid, type } of allObjects(gitdir)) {
      if (type === 'tree') {
        const ours = parseTree((await reader.read(gitdir, oid)).content);
        expect(ours).toEqual((await git.readTree({ fs: nodeFs, gitdir, oid })).tree);
        trees++;
      } else if (type === 'commit') {
        const ours = parseCommit((await reader.read(gitdir, oid)).content);
        const theirs = (await git.readCommit({ fs: nodeFs, gitdir, oid })).commit;
        expect(ours).toEqual({
          tree: theirs.tree,
          parents: theirs.parent,
          author: { name: theirs.author.name, email: theirs.author.email, timestamp: theirs.author.timestamp },
          message: theirs.message,
        });
        commits++;
      }
    }
    expect(trees).toBeGreaterThan(30);
    expect(commits).toBe(30);
  });

  it('an object in no pack and no loose file, and an id that is not one, are ObjectMissingError', async () => {
    const { gitdir } = gitRepo();
    const reader = readerOf();
    await expect(reader.read(gitdir, 'f'.repeat(40))).rejects.toBeInstanceOf(ObjectMissingError);
    await expect(reader.read(gitdir, '../../etc/passwd')).rejects.toBeInstanceOf(ObjectMissingError);
    run(['--git-dir', gitdir, 'gc', '-q', '--prune=now'], gitdir);
    await expect(reader.read(gitdir, '0'.repeat(40))).rejects.toBeInstanceOf(ObjectMissingError);
  });

  it('a pack written after the listing is found, and a deleted one is listed again', async () => {
    const { work, gitdir } = gitRepo();
    run(['--git-dir', gitdir, 'gc', '-q', '--prune=now'], gitdir);
    const reader = readerOf();
    const head = run(['rev-parse', 'HEAD'], work).trim();
    expect((await reader.read(gitdir, head)).type).toBe('commit');
    // A new commit, then a full repack: the pack the reader listed is gone, a new one holds everything.
    nodeFs.writeFileSync(join(work, 'new.md'), '# new\n');
    run(['add', '-A'], work);
    run(['commit', '-q', '-m', 'new'], work);
    run(['--git-dir', gitdir, 'repack', '-q', '-a', '-d'], gitdir);
    run(['--git-dir', gitdir, 'prune-packed'], gitdir);
    await expectAllLikeGit(gitdir, reader);
  });
});

describe('ObjectReader.readMany', () => {
  it('gives what read gives, in the order asked (repeats too): packed with deltas, in two packs, loose; through zlib and DecompressionStream', async () => {
    const { work, gitdir } = gitRepo();
    run(['--git-dir', gitdir, 'gc', '-q', '--aggressive', '--prune=now'], gitdir);
    // A second pack (a later commit, packed incrementally) and a loose object beside them.
    nodeFs.writeFileSync(join(work, 'later.md'), '# later\n');
    run(['add', '-A'], work);
    run(['commit', '-q', '-m', 'later'], work);
    run(['--git-dir', gitdir, 'repack', '-q', '-d'], gitdir);
    const loose = run(['--git-dir', gitdir, 'hash-object', '-w', '--stdin'], gitdir, 'loose page\n').trim();
    expect(nodeFs.readdirSync(join(gitdir, 'objects', 'pack')).filter((f) => f.endsWith('.idx'))).toHaveLength(2);
    expect(deltaCount(gitdir)).toBeGreaterThan(50);
    const objects = [...allObjects(gitdir), { oid: loose, type: 'blob' }];
    // Reversed, every third twice: nothing like id order or pack order.
    const asked = objects.map((o) => o.oid).reverse();
    asked.push(...asked.filter((_, i) => i % 3 === 0));
    const want = new Map(objects.map((o) => [o.oid, { type: o.type, content: Buffer.from(catBytes(gitdir, o.type, o.oid)) }]));
    for (const codec of [undefined, webCodec]) {
      const got = await readerOf(codec).readMany(gitdir, asked);
      expect(got).toHaveLength(asked.length);
      got.forEach((o, i) => {
        expect(o.type, asked[i]).toBe(want.get(asked[i]!)!.type);
        expect(Buffer.from(o.content).equals(want.get(asked[i]!)!.content), asked[i]).toBe(true);
      });
    }
    await expect(readerOf().readMany(gitdir, [loose, 'f'.repeat(40)])).rejects.toBeInstanceOf(ObjectMissingError);
    await expect(readerOf().readMany(gitdir, ['../../etc/passwd'])).rejects.toBeInstanceOf(ObjectMissingError);
    expect(await readerOf().readMany(gitdir, [])).toEqual([]);
  });

  it('a record longer than any zlib stream of its size (a valid stream padded with empty blocks) still reads', async () => {
    const gitdir = join(dir.path, 'p.git');
    run(['init', '-q', '--bare', gitdir], dir.path);
    const content = enc('padded page\n');
    const oid = run(['hash-object', '--stdin'], dir.path, 'padded page\n').trim();
    // zlib header, 200 empty stored blocks, the content as the final stored block, Adler-32.
    const adler = (d: Uint8Array) => {
      let a = 1;
      let b = 0;
      for (const x of d) {
        a = (a + x) % 65521;
        b = (b + a) % 65521;
      }
      return ((b << 16) | a) >>> 0;
    };
    const n = content.byteLength;
    const stream = Uint8Array.from([
      0x78, 0x01,
      ...Array.from({ length: 200 }, () => [0x00, 0x00, 0x00, 0xff, 0xff]).flat(),
      0x01, n & 0xff, n >> 8, ~n & 0xff, (~n >> 8) & 0xff, ...content,
      ...[24, 16, 8, 0].map((sh) => (adler(content) >>> sh) & 0xff),
    ]);
    const neighbour = enc('a neighbour\n');
    const neighbourOid = run(['hash-object', '--stdin'], dir.path, 'a neighbour\n').trim();
    const built = await buildPack(webCodec, [
      { oid, record: packRecord(3, n, stream) },
      { oid: neighbourOid, record: packRecord(3, neighbour.byteLength, deflateSync(neighbour)) },
    ]);
    const base = join(gitdir, 'objects', 'pack', `pack-${built.name}`);
    await writeFile(`${base}.pack`, built.pack);
    await writeFile(`${base}.idx`, built.idx);
    expect(catBytes(gitdir, 'blob', oid)).toEqual(new Uint8Array(content));
    for (const codec of [undefined, webCodec]) {
      expect(new TextDecoder().decode((await readerOf(codec).read(gitdir, oid)).content)).toBe('padded page\n');
      const many = await readerOf(codec).readMany(gitdir, [neighbourOid, oid]);
      expect(many.map((o) => new TextDecoder().decode(o.content))).toEqual(['a neighbour\n', 'padded page\n']);
    }
  });
});

describe('ObjectReader on damaged files', () => {
  /** A store-written pack of three blobs in a bare repository; returns its paths. */
  async function onePack(records?: (r: Uint8Array[]) => void) {
    const gitdir = join(dir.path, 'r.git');
    run(['init', '-q', '--bare', gitdir], dir.path);
    const contents = ['alpha\n', 'beta beta\n', 'gamma gamma gamma\n'].map(enc);
    const oids = contents.map((c) => run(['hash-object', '--stdin'], dir.path, new TextDecoder().decode(c)).trim());
    const recs = contents.map((c) => packRecord(3, c.byteLength, deflateSync(c)));
    records?.(recs);
    const built = await buildPack(webCodec, recs.map((record, i) => ({ oid: oids[i]!, record })));
    const base = join(gitdir, 'objects', 'pack', `pack-${built.name}`);
    await writeFile(`${base}.pack`, built.pack);
    await writeFile(`${base}.idx`, built.idx);
    return { gitdir, oids, pack: `${base}.pack`, idx: `${base}.idx`, built };
  }

  it('reads a store-written pack', async () => {
    const { gitdir, oids } = await onePack();
    expect(new TextDecoder().decode((await readerOf().read(gitdir, oids[1]!)).content)).toBe('beta beta\n');
  });

  it('a flipped byte in a record, a size that lies, a truncated pack: CorruptObjectError', async () => {
    const cases: Array<[string, (r: Uint8Array[]) => void]> = [
      ['deflate stream damaged', (r) => (r[1]![4] ^= 0xff)],
      ['declared size too small', (r) => (r[1]![0] = (3 << 4) | 2)],
      ['declared size too large', (r) => (r[1]![0] = (3 << 4) | 15)],
      ['record type 5 (reserved)', (r) => (r[1]![0] = (5 << 4) | (r[1]![0]! & 15))],
    ];
    for (const [what, damage] of cases) {
      const { gitdir, oids } = await onePack(damage);
      const err = await readerOf()
        .read(gitdir, oids[1]!)
        .catch((e: unknown) => e);
      expect(err, what).toBeInstanceOf(CorruptObjectError);
      // Its neighbours still read.
      expect(new TextDecoder().decode((await readerOf().read(gitdir, oids[0]!)).content), what).toBe('alpha\n');
      await dir.cleanup();
      dir = await tempDir('kr-reader-');
    }
  });

  it('a pack cut short: the last record is corrupt, the others read', async () => {
    const { gitdir, oids, pack, built } = await onePack();
    // The idx says where records start; the reader takes the pack's size from the listing.
    await writeFile(pack, built.pack.subarray(0, built.pack.byteLength - 30));
    const reader = readerOf();
    const last = [...oids].sort((a, b) => oids.indexOf(b) - oids.indexOf(a))[0]!;
    await expect(reader.read(gitdir, last)).rejects.toBeInstanceOf(CorruptObjectError);
    expect(new TextDecoder().decode((await reader.read(gitdir, oids[0]!)).content)).toBe('alpha\n');
  });

  it('an idx that is not one is skipped (the object is then missing, not misread)', async () => {
    const { gitdir, oids, idx } = await onePack();
    await writeFile(idx, enc('not an idx at all'));
    await expect(readerOf().read(gitdir, oids[0]!)).rejects.toBeInstanceOf(ObjectMissingError);
  });

  it('loose objects: garbage, a lying header, a wrong type word', async () => {
    const gitdir = join(dir.path, 'l.git');
    run(['init', '-q', '--bare', gitdir], dir.path);
    const cases: Array<[string, Uint8Array]> = [
      ['not zlib', enc('plain text')],
      ['size lies', deflateSync(enc('blob 99\0short'))],
      ['unknown type', deflateSync(enc('tagx 5\0hello'))],
      ['no header', deflateSync(enc('hello'))],
    ];
    for (const [i, [what, data]] of cases.entries()) {
      const oid = `${i}`.repeat(40);
      nodeFs.mkdirSync(join(gitdir, 'objects', oid.slice(0, 2)), { recursive: true });
      await writeFile(join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2)), data);
      const err = await readerOf()
        .read(gitdir, oid)
        .catch((e: unknown) => e);
      expect(err, what).toBeInstanceOf(CorruptObjectError);
    }
  });
});

describe('applyDelta', () => {
  const base = enc('0123456789abcdef');
  /** A delta: source size, target size, then the ops. */
  const delta = (src: number, dst: number, ...ops: number[]) => Uint8Array.from([src, dst, ...ops]);

  it('copies and inserts', () => {
    // copy offset 2, size 4; insert "XY"; copy offset 10, size 2
    const out = applyDelta(base, delta(16, 8, 0x91, 2, 4, 2, 0x58, 0x59, 0x91, 10, 2));
    expect(new TextDecoder().decode(out)).toBe('2345XYab');
  });

  it('refuses a wrong base size, copies past the base, inserts past the end, opcode 0, a short result', () => {
    expect(() => applyDelta(base, delta(15, 4, 0x91, 0, 4))).toThrow(/base of 15/);
    expect(() => applyDelta(base, delta(16, 4, 0x91, 14, 4))).toThrow(/out of bounds/);
    expect(() => applyDelta(base, delta(16, 4, 0x91, 0, 8))).toThrow(/out of bounds/);
    expect(() => applyDelta(base, delta(16, 2, 3, 0x41, 0x42, 0x43))).toThrow(/out of bounds/);
    expect(() => applyDelta(base, delta(16, 4, 0))).toThrow(/opcode 0/);
    expect(() => applyDelta(base, delta(16, 4, 0x91, 0, 2))).toThrow(/made 2 of 4/);
  });

  it('refuses a result above MAX_OBJECT_BYTES before allocating it', () => {
    const big = MAX_OBJECT_BYTES + 1;
    const v: number[] = [];
    for (let n = big; ; ) {
      const b = n & 0x7f;
      n = Math.floor(n / 128);
      if (n === 0) {
        v.push(b);
        break;
      }
      v.push(b | 0x80);
    }
    expect(() => applyDelta(base, Uint8Array.from([16, ...v, 0x91, 0, 4]))).toThrow(/delta result/);
  });
});

describe('parseTree and parseCommit', () => {
  const treeOf = (...rows: Array<[string, string]>) => {
    const parts: number[] = [];
    for (const [mode, name] of rows) parts.push(...enc(`${mode} ${name}\0`), ...new Uint8Array(20).fill(0xab));
    return Uint8Array.from(parts);
  };

  it('modes: 40000 reads as 040000 (a tree), executable and link as blobs, 160000 as a commit', () => {
    expect(parseTree(treeOf(['40000', 'd'], ['100644', 'a'], ['100755', 'x'], ['120000', 'l'], ['160000', 's'])).map((e) => [e.mode, e.type])).toEqual([
      ['040000', 'tree'],
      ['100644', 'blob'],
      ['100755', 'blob'],
      ['120000', 'blob'],
      ['160000', 'commit'],
    ]);
  });

  it('refuses unknown modes, unsafe names and cut-off entries', () => {
    expect(() => parseTree(treeOf(['100664', 'a']))).toThrow(/mode/);
    for (const name of ['.', '..', '.git', '.GIT', '.git.', 'git~1', 'a\\b', '.git::$INDEX_ALLOCATION', '.g\u200cit']) {
      expect(() => parseTree(treeOf(['100644', name])), name).toThrow(/unsafe/);
    }
    expect(() => parseTree(treeOf(['100644', 'a']).subarray(0, 15))).toThrow(/malformed/);
    expect(() => parseTree(enc('100644 a'))).toThrow(/malformed/);
  });

  it('names are read exactly whether plain ASCII or not, and every disguise of .git is refused whatever its case', () => {
    const names = ['page-000001.md', 'area-00', 'A_b.C-9', 'README', 'x'.repeat(64), 'y'.repeat(65), 'ünï 漢字.md', 'a b', 'a:b', '.gitignore', 'gitlab.md', 'Git', 'a\u00e9'];
    expect(parseTree(treeOf(...names.map((n): [string, string] => ['100644', n]))).map((e) => e.path)).toEqual(names);
    for (const name of ['', 'GIT~1', 'Git~2', '.Git', 'git~1', '.git ', '.gIt. .']) {
      expect(() => parseTree(treeOf(['100644', name])), name).toThrow(name === '' ? /unsafe|malformed/ : /unsafe/);
    }
    // Modes read without the decoder and with it give the same strings.
    expect(parseTree(treeOf(['040000', 'd'], ['100644', 'a'], ['100755', 'b'])).map((e) => e.mode)).toEqual(['040000', '100644', '100755']);
  });

  it('a commit: tree first, the parent run, the first author; gpgsig continuation lines kept apart', () => {
    const c = parseCommit(
      enc(
        'tree aaaa\nparent bbbb\nparent cccc\nauthor A B <a@b> 17 +0000\ncommitter C <c@d> 18 +0000\ngpgsig -----BEGIN\n line\n -----END\nparent dddd\n\nsubject\n\nbody\n',
      ),
    );
    expect(c).toEqual({ tree: 'aaaa', parents: ['bbbb', 'cccc'], author: { name: 'A B', email: 'a@b', timestamp: 17 }, message: 'subject\n\nbody\n' });
    expect(() => parseCommit(enc('parent x\ntree y\n\nm'))).toThrow(/tree/);
    expect(() => parseCommit(enc('tree y\n\nm'))).toThrow(/author/);
  });
});
