/**
 * One contract per storage interface, run against every implementation in Node:
 * - StoreFs (lib/git/fs.ts) and the isomorphic-git fs beside it: Node files (nodeStoreFs) and the Durable
 *   Object's SQLite (DoFs over test/helpers/do-storage.ts);
 * - GitStore on both, the Durable Object's repository copied out and checked by the real `git` command;
 * - SqlDatabase (lib/db/sql.ts): libSQL on a file (LibsqlDatabase), the Durable Object's SQLite
 *   (DoSqlDatabase over the fake storage) and real D1 in workerd (D1Database over Miniflare's binding),
 *   with the Members, Users and Invites record modules on each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Miniflare } from 'miniflare';
import type { StoreFs } from '../lib/git/fs.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { DoFs } from '../lib/runtime/workers/store-fs.ts';
import { GitStore } from '../lib/git/store.ts';
import { buildBundle } from '../lib/git/bundle.ts';
import type { SqlDatabase } from '../lib/db/sql.ts';
import { DoSqlDatabase } from '../lib/runtime/workers/do-sql.ts';
import { D1Database, type D1Like } from '../lib/runtime/workers/d1.ts';
import { loadMigrations, openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { migrate, type Migration } from '../lib/db/migrate.ts';
import { Members } from '../lib/db/members.ts';
import { Users } from '../lib/db/users.ts';
import { Invites } from '../lib/db/invites.ts';
import { ManualClock } from '../lib/util/clock.ts';
import { fakeDoStorage, type FakeDoStorage } from './helpers/do-storage.ts';
import { fsck, gitIn, tempDir } from './helpers/env.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));
/** Byte equality without printing megabytes on failure. */
const sameBytes = (a: Uint8Array | ArrayBuffer | null | undefined, b: Uint8Array) =>
  a != null && Buffer.from(a instanceof ArrayBuffer ? new Uint8Array(a) : a).equals(Buffer.from(b));
const MB = 1024 * 1024;

const temps: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of temps.reverse()) await c();
});
async function scratchDir(prefix: string): Promise<string> {
  const d = await tempDir(prefix);
  temps.push(d.cleanup);
  return d.path;
}

// ---------------------------------------------------------------------------------------------------------
// The fake Durable Object storage (test/helpers/do-storage.ts) against workerd's own

/**
 * Probes of the SQL API's semantics, as source so that the very same function runs in workerd (a Durable
 * Object under Miniflare) and on the fake. Each probe's value, or 'throws'.
 */
const STORAGE_PROBES = `(storage) => {
  const sql = storage.sql;
  const out = {};
  const t = (k, f) => { try { out[k] = f(); } catch (e) { out[k] = 'throws'; } };
  sql.exec('CREATE TABLE p (id INTEGER PRIMARY KEY, u TEXT UNIQUE, v, b BLOB, n INTEGER)');
  sql.exec('CREATE TABLE c (id INTEGER PRIMARY KEY, pid INTEGER REFERENCES p(id))');
  t('write without rows gives []', () => sql.exec("INSERT INTO p (u) VALUES ('a')").toArray());
  t('select without rows gives []', () => sql.exec('SELECT * FROM p WHERE 0').toArray());
  t('rows as objects', () => sql.exec("SELECT id, u, v FROM p WHERE u = ?", 'a').toArray());
  t('Uint8Array binds as BLOB, back as ArrayBuffer', () => {
    sql.exec('INSERT INTO p (u, b) VALUES (?, ?)', 'u8', new Uint8Array([9, 1, 2, 3]).subarray(1));
    const r = sql.exec("SELECT b, typeof(b) AS t FROM p WHERE u = 'u8'").toArray()[0];
    return [r.t, r.b instanceof ArrayBuffer, Array.from(new Uint8Array(r.b))];
  });
  t('ArrayBuffer binds as BLOB; empty too', () => {
    sql.exec('INSERT INTO p (u, b) VALUES (?, ?), (?, ?)', 'ab', new Uint8Array([7, 0]).buffer, 'e', new ArrayBuffer(0));
    return sql.exec("SELECT u, typeof(b) AS t, length(b) AS l FROM p WHERE u IN ('ab', 'e') ORDER BY u").toArray();
  });
  t('numbers', () => sql.exec('SELECT typeof(?) AS a, typeof(?) AS b, ? AS c', 7, 1.5, 2 ** 40).toArray());
  t('integers into INTEGER columns', () => {
    sql.exec('INSERT INTO p (u, n) VALUES (?, ?)', 'int', 7);
    return sql.exec("SELECT n, typeof(n) AS t FROM p WHERE u = 'int'").toArray();
  });
  t('boolean binds as text', () => {
    sql.exec('INSERT INTO p (u, v) VALUES (?, ?), (?, ?)', 'bt', true, 'bf', false);
    return sql.exec("SELECT u, v, typeof(v) AS t FROM p WHERE u IN ('bt', 'bf') ORDER BY u").toArray();
  });
  t('null and undefined bind as NULL', () => {
    sql.exec('INSERT INTO p (u, v, b) VALUES (?, ?, ?)', 'nu', null, undefined);
    return sql.exec("SELECT v, b FROM p WHERE u = 'nu'").toArray();
  });
  t('bigint is refused', () => sql.exec('SELECT ? AS x', 5n).toArray());
  t('constraint failure throws', () => sql.exec("INSERT INTO p (u) VALUES ('a')").toArray());
  t('syntax error throws', () => sql.exec('SELEC 1').toArray());
  t('foreign keys are enforced', () => sql.exec('INSERT INTO c (pid) VALUES (12345)').toArray());
  t('BEGIN is refused', () => sql.exec('BEGIN').toArray());
  t('SAVEPOINT is refused', () => sql.exec('SAVEPOINT x').toArray());
  t('transactionSync returns the value', () => storage.transactionSync(() => 42));
  t('transactionSync commits', () => {
    storage.transactionSync(() => { sql.exec("INSERT INTO p (u) VALUES ('c1')"); });
    return sql.exec("SELECT u FROM p WHERE u = 'c1'").toArray();
  });
  t('transactionSync rolls back when fn throws, and rethrows', () => {
    let thrown = null;
    try {
      storage.transactionSync(() => { sql.exec("INSERT INTO p (u) VALUES ('r1')"); sql.exec("UPDATE p SET v = 'x' WHERE u = 'a'"); throw new Error('boom'); });
    } catch (e) { thrown = e.message; }
    return [thrown, sql.exec("SELECT u, v FROM p WHERE u IN ('a', 'r1')").toArray()];
  });
  t('a failing statement inside rolls back the earlier ones', () => {
    try { storage.transactionSync(() => { sql.exec("INSERT INTO p (u) VALUES ('r2')"); sql.exec("INSERT INTO p (u) VALUES ('a')"); }); } catch {}
    return sql.exec("SELECT u FROM p WHERE u = 'r2'").toArray();
  });
  t('nested: an inner rollback keeps the outer writes', () => {
    storage.transactionSync(() => {
      sql.exec("INSERT INTO p (u) VALUES ('o1')");
      try { storage.transactionSync(() => { sql.exec("INSERT INTO p (u) VALUES ('i1')"); throw new Error('inner'); }); } catch {}
    });
    return sql.exec("SELECT u FROM p WHERE u IN ('o1', 'i1')").toArray();
  });
  t('changes() after a write', () => { sql.exec("UPDATE p SET v = 'y' WHERE u IN ('a', 'o1')"); return sql.exec('SELECT changes() AS n').toArray(); });
  t('a value of 2,200,000 bytes fits', () => sql.exec('SELECT length(?) AS a, length(?) AS b', new ArrayBuffer(2200000), 'x'.repeat(2200000)).toArray());
  t('a BLOB one byte longer is refused', () => sql.exec('SELECT length(?) AS n', new Uint8Array(2200001)).toArray());
  t('a string one byte longer is refused', () => sql.exec('SELECT length(?) AS n', 'é'.repeat(1100000) + 'x').toArray());
  t('LIKE ignores ASCII case', () => sql.exec("SELECT 'A/b' LIKE 'a/%' AS x").toArray());
  return out;
}`;

describe('the fake Durable Object storage against workerd', () => {
  it('every probe of the SQL API gives the same answer on both', async () => {
    const mf = new Miniflare({
      modules: true,
      compatibilityDate: '2025-09-01',
      durableObjects: { PROBE: { className: 'Probe', useSQLite: true } },
      script: `import { DurableObject } from 'cloudflare:workers';
        const probes = ${STORAGE_PROBES};
        export class Probe extends DurableObject { fetch() { return Response.json(probes(this.ctx.storage)); } }
        export default { fetch(req, env) { return env.PROBE.get(env.PROBE.idFromName('p')).fetch(req); } };`,
    });
    try {
      const real = (await (await mf.dispatchFetch('http://probe/')).json()) as Record<string, unknown>;
      const storage = fakeDoStorage();
      const fake = JSON.parse(JSON.stringify((new Function(`return ${STORAGE_PROBES}`)() as (s: unknown) => unknown)(storage))) as Record<string, unknown>;
      storage.close();
      expect(Object.keys(real).length).toBeGreaterThan(20);
      for (const key of Object.keys(real)) expect(fake[key], key).toEqual(real[key]);
      expect(Object.keys(fake)).toEqual(Object.keys(real));
    } finally {
      await mf.dispose();
    }
  });

  it('rowsWritten: the fake counts rows, workerd index rows too (a documented difference)', () => {
    const storage = fakeDoStorage();
    storage.sql.exec('CREATE TABLE w (k TEXT PRIMARY KEY, u TEXT UNIQUE)');
    expect(storage.sql.exec("INSERT INTO w VALUES ('a', 'x'), ('b', 'y')").rowsWritten).toBe(2);
    expect(storage.sql.exec('SELECT * FROM w').rowsWritten).toBe(0);
    storage.close();
  });
});

// ---------------------------------------------------------------------------------------------------------
// StoreFs implementations

interface FsTarget {
  fs: StoreFs;
  /** An absolute directory of this filesystem to work under. */
  root: string;
  /** Whether `A` and `a` are two names (a Linux disk, the Durable Object: yes). */
  caseSensitive: boolean;
  /** DoFs only: how many chunk rows hold a file. */
  chunks?: (path: string) => number;
  close(): Promise<void>;
}

const fsImpls: Array<{ name: string; open(): Promise<FsTarget> }> = [
  {
    name: 'node files (nodeStoreFs)',
    async open() {
      const d = await tempDir('kr-contract-fs-');
      await writeFile(join(d.path, 'case-probe'), '');
      const caseSensitive = !existsSync(join(d.path, 'CASE-PROBE'));
      return { fs: nodeStoreFs(), root: d.path, caseSensitive, close: d.cleanup };
    },
  },
  {
    name: 'Durable Object (DoFs)',
    async open() {
      const storage = fakeDoStorage();
      return {
        fs: new DoFs(storage).storeFs(),
        root: '/data',
        caseSensitive: true,
        chunks: (path) => Number((storage.db.prepare('SELECT COUNT(*) AS n FROM fs_chunks WHERE path = ?').get(path) as { n: number }).n),
        close: async () => storage.close(),
      };
    },
  },
];

for (const impl of fsImpls) {
  describe(`StoreFs contract: ${impl.name}`, () => {
    let t: FsTarget;
    let fs: StoreFs;
    let n = 0;
    /** A fresh directory of the target for one case (its tmp directory made). */
    const area = async () => {
      const dir = `${t.root}/case-${++n}`;
      await fs.mkdirp(`${dir}/tmp`);
      return dir;
    };
    beforeAll(async () => {
      t = await impl.open();
      fs = t.fs;
    });
    afterAll(() => t.close());

    it('readFile of a missing file (or below a missing directory, or below a file) is null', async () => {
      const d = await area();
      expect(await fs.readFile(`${d}/nope`)).toBeNull();
      expect(await fs.readFile(`${d}/no/such/dir/file`)).toBeNull();
      await fs.writeDurable([{ path: `${d}/f`, data: enc('x') }], `${d}/tmp`);
      expect(await fs.readFile(`${d}/f/below`)).toBeNull();
    });

    it('writeDurable of many files (one of 3 MB, one empty) reads back byte for byte', async () => {
      const d = await area();
      const files = Array.from({ length: 60 }, (_, i) => ({
        path: `${d}/objects/${(i % 7).toString(16).padStart(2, '0')}/${randomBytes(19).toString('hex')}`,
        data: randomBytes(1 + ((i * 997) % 5000)),
      }));
      const big = { path: `${d}/objects/pack/big.pack`, data: randomBytes(3 * MB + 12345) };
      const empty = { path: `${d}/empty`, data: new Uint8Array(0) };
      // A view into a larger buffer: only its own bytes are written.
      const backing = randomBytes(100);
      const view = { path: `${d}/view`, data: new Uint8Array(backing.buffer, backing.byteOffset + 10, 20) };
      await fs.mkdirp(`${d}/objects`);
      await fs.writeDurable([...files, big, empty, view], `${d}/tmp`);
      for (const f of files) expect(sameBytes(await fs.readFile(f.path), f.data), f.path).toBe(true);
      const back = await fs.readFile(big.path);
      expect(back?.byteLength).toBe(big.data.byteLength);
      expect(sameBytes(back, big.data)).toBe(true);
      expect((await fs.readFile(empty.path))?.byteLength).toBe(0);
      expect(sameBytes(await fs.readFile(view.path), backing.subarray(10, 30))).toBe(true);
      if (t.chunks) expect(t.chunks(big.path)).toBe(Math.ceil(big.data.byteLength / (512 * 1024)));
      // No temporary file is left behind.
      expect(await fs.readdir(`${d}/tmp`)).toEqual([]);
    });

    it('writeDurable over existing files replaces them, chunked ↔ whole both ways', async () => {
      const d = await area();
      const p = `${d}/f`;
      const big = randomBytes(2 * MB);
      await fs.writeDurable([{ path: p, data: big }], `${d}/tmp`);
      await fs.writeDurable([{ path: p, data: enc('small now') }], `${d}/tmp`);
      expect(dec(await fs.readFile(p))).toBe('small now');
      if (t.chunks) expect(t.chunks(p)).toBe(0);
      const big2 = randomBytes(MB + 1);
      await fs.writeDurable([{ path: p, data: big2 }], `${d}/tmp`);
      expect(sameBytes(await fs.readFile(p), big2)).toBe(true);
      const big3 = randomBytes(600 * 1024);
      await fs.writeDurable([{ path: p, data: big3 }], `${d}/tmp`);
      expect(sameBytes(await fs.readFile(p), big3)).toBe(true);
      if (t.chunks) expect(t.chunks(p)).toBe(2);
    });

    it('readdir lists the files and subdirectories of a directory; missing is []', async () => {
      const d = await area();
      await fs.mkdirp(`${d}/dir/sub1/deeper`);
      await fs.mkdirp(`${d}/dir/sub2`);
      await fs.writeDurable(
        [
          { path: `${d}/dir/b.txt`, data: enc('b') },
          { path: `${d}/dir/a.txt`, data: enc('a') },
          { path: `${d}/dir/sub1/inner`, data: enc('i') },
          { path: `${d}/dir/sub1/deeper/x`, data: enc('x') },
        ],
        `${d}/tmp`,
      );
      expect((await fs.readdir(`${d}/dir`)).sort()).toEqual(['a.txt', 'b.txt', 'sub1', 'sub2']);
      expect((await fs.readdir(`${d}/dir/sub1`)).sort()).toEqual(['deeper', 'inner']);
      expect((await fs.readdir(`${d}/dir/`)).sort()).toEqual(['a.txt', 'b.txt', 'sub1', 'sub2']);
      expect(await fs.readdir(`${d}/dir/sub2`)).toEqual([]);
      expect(await fs.readdir(`${d}/missing`)).toEqual([]);
      expect(await fs.readdir(`${d}/dir/a.txt`)).toEqual([]);
    });

    it('exists: files and directories yes, missing no; mkdirp makes every level and is idempotent', async () => {
      const d = await area();
      await fs.mkdirp(`${d}/a/b/c`);
      await fs.mkdirp(`${d}/a/b/c`);
      await fs.mkdirp(`${d}/a/b`);
      await fs.writeDurable([{ path: `${d}/a/file`, data: enc('f') }], `${d}/tmp`);
      for (const p of [`${d}/a`, `${d}/a/b`, `${d}/a/b/c`, `${d}/a/file`]) expect(await fs.exists(p), p).toBe(true);
      for (const p of [`${d}/b`, `${d}/a/b/c/d`, `${d}/a/fil`, `${d}/a/file/x`]) expect(await fs.exists(p), p).toBe(false);
      expect(await fs.readdir(`${d}/a`)).toEqual(expect.arrayContaining(['b', 'file']));
    });

    it('createExclusive creates once (true), then refuses (false) and keeps the first content', async () => {
      const d = await area();
      const p = `${d}/main.lock`;
      expect(await fs.createExclusive(p, enc('first\n'))).toBe(true);
      expect(await fs.createExclusive(p, enc('second\n'))).toBe(false);
      expect(dec(await fs.readFile(p))).toBe('first\n');
      await fs.mkdirp(`${d}/adir`);
      expect(await fs.createExclusive(`${d}/adir`, enc('x'))).toBe(false);
    });

    it('renameDurable of a file over an existing file replaces it; the source is gone', async () => {
      const d = await area();
      await fs.mkdirp(`${d}/refs/heads`);
      await fs.writeDurable(
        [
          { path: `${d}/refs/heads/main`, data: enc('old\n') },
          { path: `${d}/refs/heads/main.lock`, data: enc('new\n') },
        ],
        `${d}/tmp`,
      );
      await fs.renameDurable(`${d}/refs/heads/main.lock`, `${d}/refs/heads/main`);
      expect(dec(await fs.readFile(`${d}/refs/heads/main`))).toBe('new\n');
      expect(await fs.readFile(`${d}/refs/heads/main.lock`)).toBeNull();
      expect(await fs.exists(`${d}/refs/heads/main.lock`)).toBe(false);
      // What the filesystem does afterwards (the Node build frees the replaced file) leaves nothing behind.
      await fs.idle?.();
      expect(await fs.readdir(`${d}/refs/heads`)).toEqual(['main']);
      // A chunked file moves whole, and to a new name.
      const big = randomBytes(MB + 7);
      await fs.writeDurable([{ path: `${d}/big`, data: big }], `${d}/tmp`);
      await fs.renameDurable(`${d}/big`, `${d}/refs/big2`);
      expect(sameBytes(await fs.readFile(`${d}/refs/big2`), big)).toBe(true);
      expect(await fs.readFile(`${d}/big`)).toBeNull();
    });

    it('renameDurable of a file onto itself leaves it in place', async () => {
      const d = await area();
      await fs.writeDurable([{ path: `${d}/same`, data: enc('kept') }], `${d}/tmp`);
      await fs.renameDurable(`${d}/same`, `${d}/same`);
      expect(dec(await fs.readFile(`${d}/same`))).toBe('kept');
    });

    it('renameDurable of a directory to a new name moves everything below it; the old name is gone', async () => {
      const d = await area();
      const big = randomBytes(MB + 3);
      await fs.mkdirp(`${d}/.init-x/refs/tags`);
      await fs.writeDurable(
        [
          { path: `${d}/.init-x/HEAD`, data: enc('ref: refs/heads/main\n') },
          { path: `${d}/.init-x/objects/ab/cdef`, data: enc('obj') },
          { path: `${d}/.init-x/objects/pack/big`, data: big },
        ],
        `${d}/tmp`,
      );
      // A sibling whose name extends the source's must not move with it.
      await fs.writeDurable([{ path: `${d}/.init-xy/keep`, data: enc('k') }], `${d}/tmp`);
      await fs.renameDurable(`${d}/.init-x`, `${d}/repo.git`);
      expect(await fs.exists(`${d}/.init-x`)).toBe(false);
      expect(await fs.readFile(`${d}/.init-x/HEAD`)).toBeNull();
      expect(dec(await fs.readFile(`${d}/repo.git/HEAD`))).toBe('ref: refs/heads/main\n');
      expect(dec(await fs.readFile(`${d}/repo.git/objects/ab/cdef`))).toBe('obj');
      expect(sameBytes(await fs.readFile(`${d}/repo.git/objects/pack/big`), big)).toBe(true);
      expect(await fs.exists(`${d}/repo.git/refs/tags`)).toBe(true);
      expect((await fs.readdir(`${d}/repo.git`)).sort()).toEqual(['HEAD', 'objects', 'refs']);
      expect((await fs.readdir(d)).sort()).toEqual(['.init-xy', 'repo.git', 'tmp']);
      expect(dec(await fs.readFile(`${d}/.init-xy/keep`))).toBe('k');
    });

    it('renameDurable of a directory onto an existing non-empty directory fails and changes nothing', async () => {
      const d = await area();
      await fs.writeDurable(
        [
          { path: `${d}/src/a`, data: enc('a') },
          { path: `${d}/dst/b`, data: enc('b') },
        ],
        `${d}/tmp`,
      );
      await expect(fs.renameDurable(`${d}/src`, `${d}/dst`)).rejects.toThrow();
      expect(dec(await fs.readFile(`${d}/src/a`))).toBe('a');
      expect(dec(await fs.readFile(`${d}/dst/b`))).toBe('b');
      expect(await fs.readFile(`${d}/dst/a`)).toBeNull();
    });

    it('unlink removes a file; a missing one is fine', async () => {
      const d = await area();
      await fs.writeDurable([{ path: `${d}/f`, data: enc('x') }], `${d}/tmp`);
      await fs.unlink(`${d}/f`);
      expect(await fs.exists(`${d}/f`)).toBe(false);
      await fs.unlink(`${d}/f`);
      await fs.unlink(`${d}/never/was`);
    });

    it('removeTree removes a directory and everything below it, only it; missing is fine', async () => {
      const d = await area();
      const files = ['t/a_b/x', 't/a_b/sub/y', 't/axb/keep', 't/a_b2/keep', 't/a%b/keep', 't/other/keep'];
      await fs.writeDurable(
        files.map((f) => ({ path: `${d}/${f}`, data: f.endsWith('y') ? randomBytes(MB) : enc(f) })),
        `${d}/tmp`,
      );
      await fs.removeTree(`${d}/t/a_b`);
      expect(await fs.exists(`${d}/t/a_b`)).toBe(false);
      expect(await fs.readFile(`${d}/t/a_b/sub/y`)).toBeNull();
      expect((await fs.readdir(`${d}/t`)).sort()).toEqual(['a%b', 'a_b2', 'axb', 'other']);
      for (const f of files.filter((f) => f.endsWith('keep'))) expect(dec(await fs.readFile(`${d}/${f}`)), f).toBe(f);
      await fs.removeTree(`${d}/t/a_b`);
      await fs.removeTree(`${d}/nothing/here`);
      // A single file is removed too.
      await fs.removeTree(`${d}/t/other/keep`);
      expect(await fs.exists(`${d}/t/other/keep`)).toBe(false);
    });

    it('removeTree and rename tell names apart by letter case', async () => {
      if (!t.caseSensitive) return; // a case-insensitive disk has one directory for both names
      const d = await area();
      await fs.writeDurable(
        [
          { path: `${d}/Dir/upper`, data: enc('U') },
          { path: `${d}/dir/lower`, data: enc('l') },
          { path: `${d}/Move/m`, data: enc('M') },
          { path: `${d}/move/m`, data: enc('m') },
        ],
        `${d}/tmp`,
      );
      await fs.removeTree(`${d}/dir`);
      expect(await fs.exists(`${d}/dir`)).toBe(false);
      expect(dec(await fs.readFile(`${d}/Dir/upper`))).toBe('U');
      await fs.renameDurable(`${d}/move`, `${d}/moved`);
      expect(dec(await fs.readFile(`${d}/moved/m`))).toBe('m');
      expect(dec(await fs.readFile(`${d}/Move/m`))).toBe('M');
      expect((await fs.readdir(`${d}/Move`)).sort()).toEqual(['m']);
    });

    it('mtimeMs: a recent time for a file, null when missing', async () => {
      const d = await area();
      const before = Date.now();
      await fs.writeDurable([{ path: `${d}/f`, data: enc('x') }], `${d}/tmp`);
      const m = await fs.mtimeMs(`${d}/f`);
      expect(typeof m).toBe('number');
      expect(m!).toBeGreaterThanOrEqual(before - 2000);
      expect(m!).toBeLessThanOrEqual(Date.now() + 2000);
      expect(await fs.mtimeMs(`${d}/missing`)).toBeNull();
    });

    it('readRange: a byte range of a file, shorter at its end, null when missing (where the fs has it)', async () => {
      if (!fs.readRange) return;
      const d = await area();
      const data = Uint8Array.from({ length: 200 * 1024 }, (_, i) => (i * 7) & 255);
      await fs.writeDurable([{ path: `${d}/f`, data }], `${d}/tmp`);
      expect(sameBytes(await fs.readRange(`${d}/f`, 0, 10), data.subarray(0, 10))).toBe(true);
      expect(sameBytes(await fs.readRange(`${d}/f`, 12345, 100), data.subarray(12345, 12445))).toBe(true);
      // Above the size read synchronously, and across the end of the file.
      expect(sameBytes(await fs.readRange(`${d}/f`, 1000, 150 * 1024), data.subarray(1000, 1000 + 150 * 1024))).toBe(true);
      expect(sameBytes(await fs.readRange(`${d}/f`, data.length - 5, 100), data.subarray(data.length - 5))).toBe(true);
      expect((await fs.readRange(`${d}/f`, data.length + 10, 4))!.byteLength).toBe(0);
      expect(await fs.readRange(`${d}/missing`, 0, 4)).toBeNull();
      expect(await fs.readRange(`${d}/nodir/missing`, 0, 4)).toBeNull();
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// GitStore on both filesystems

const ann = { name: 'Ann Author', email: 'ann@example.test' };
/** The same commits on every filesystem: same bytes, so the same shas everywhere. */
const BIG_PAGE = randomBytes(1200 * 1024); // one loose object above DoFs's 512 KiB chunk
const shasByImpl = new Map<string, string[]>();

/** Copies a directory tree of a StoreFs onto the local disk, walking it with readdir. */
async function copyOut(fs: StoreFs, from: string, to: string): Promise<number> {
  let files = 0;
  await mkdir(to, { recursive: true });
  for (const name of await fs.readdir(from)) {
    const src = `${from}/${name}`;
    // A directory reads as no file (null, or EISDIR on disk).
    const data = await fs.readFile(src).catch(() => null);
    if (data === null) files += await copyOut(fs, src, join(to, name));
    else {
      await writeFile(join(to, name), data);
      files++;
    }
  }
  return files;
}

const git = (args: string[], cwd?: string) =>
  execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

for (const impl of fsImpls) {
  describe(`GitStore on ${impl.name}`, () => {
    let t: FsTarget;
    let store: GitStore;
    const id = 'contract';
    const shas: string[] = [];
    beforeAll(async () => {
      t = await impl.open();
      store = new GitStore({ fs: t.fs, root: `${t.root}/repos` });
    });
    afterAll(() => t.close());

    it('init makes an empty repository once; exists and list see it', async () => {
      expect(await store.exists(id)).toBe(false);
      expect(await store.init(id, { creator: 'user-1' })).toBe(true);
      expect(await store.init(id)).toBe(false);
      expect(await store.exists(id)).toBe(true);
      expect(await store.list()).toEqual([id]);
      expect(await store.head(id)).toBeNull();
      expect(await store.creatorOf(id)).toBe('user-1');
      // The temporary directory it was assembled in is gone.
      expect((await t.fs.readdir(`${t.root}/repos`)).filter((n) => n.startsWith('.init-'))).toEqual([]);
    });

    it('commits are read back: readCommit, head, listFiles, readBlob, changedPaths', async () => {
      const c1 = await store.commit(id, {
        parent: null,
        writes: [
          { path: 'README.md', content: enc('# Readme\n') },
          { path: 'docs/intro.md', content: enc('## Intro\nhello\n') },
          { path: 'docs/big.bin', content: BIG_PAGE },
        ],
        author: ann,
        message: 'first',
        time: 1_780_000_000,
      });
      const c2 = await store.commit(id, {
        parent: c1!.meta.sha,
        writes: [
          { path: 'docs/intro.md', content: enc('## Intro\nhello again\n') },
          { path: 'docs/deep/nested/page.md', content: enc('deep\n') },
        ],
        author: ann,
        message: 'second\n\nwith a body',
        time: 1_780_000_060,
      });
      const c3 = await store.commit(id, {
        parent: c2!.meta.sha,
        writes: [{ path: 'README.md', content: null }],
        author: { name: 'Bob', email: 'bob@example.test' },
        message: 'third',
        time: 1_780_000_120,
      });
      // Nothing to change: no commit.
      expect(await store.commit(id, { parent: c3!.meta.sha, writes: [{ path: 'docs/deep/nested/page.md', content: enc('deep\n') }], author: ann, message: 'noop', time: 1_780_000_180 })).toBeNull();
      shas.push(c1!.meta.sha, c2!.meta.sha, c3!.meta.sha);
      shasByImpl.set(impl.name, shas);

      expect(await store.head(id)).toBe(c3!.meta.sha);
      const m2 = await store.readCommit(id, c2!.meta.sha);
      expect(m2).toMatchObject({ parent: c1!.meta.sha, author: 'Ann Author', email: 'ann@example.test', time: 1_780_000_060, message: 'second' });
      expect((await store.readCommit(id, c3!.meta.sha)).author).toBe('Bob');
      expect((await store.readCommit(id, c1!.meta.sha)).parent).toBeNull();

      const at3 = await store.listFiles(id, c3!.meta.sha);
      expect([...at3.keys()].sort()).toEqual(['docs/big.bin', 'docs/deep/nested/page.md', 'docs/intro.md']);
      expect(dec(await store.readBlob(id, at3.get('docs/intro.md')!))).toBe('## Intro\nhello again\n');
      expect(sameBytes(await store.readBlob(id, at3.get('docs/big.bin')!), BIG_PAGE)).toBe(true);
      expect(dec(await store.readFileAt(id, c1!.meta.sha, 'README.md'))).toBe('# Readme\n');
      expect(await store.readFileAt(id, c3!.meta.sha, 'README.md')).toBeNull();

      expect(await store.changedPaths(id, c1!.meta.sha, c3!.meta.sha)).toEqual([
        { path: 'README.md', blob: null },
        { path: 'docs/deep/nested/page.md', blob: at3.get('docs/deep/nested/page.md') },
        { path: 'docs/intro.md', blob: at3.get('docs/intro.md') },
      ]);
      expect((await store.changedPaths(id, null, c1!.meta.sha)).map((c) => c.path)).toEqual(['README.md', 'docs/big.bin', 'docs/intro.md']);
      expect(c3!.changes).toEqual([{ path: 'README.md', blob: null }]);
    });

    it('a fresh GitStore over the same filesystem sees the same repository', async () => {
      const again = new GitStore({ fs: t.fs, root: `${t.root}/repos` });
      expect(await again.head(id)).toBe(shas[2]);
      expect(await again.list()).toEqual([id]);
      expect(dec(await again.readFileAt(id, shas[1]!, 'docs/deep/nested/page.md'))).toBe('deep\n');
    });

    it('the repository is one the real git command accepts (fsck --strict, log, show)', async () => {
      let gitdir = `${t.root}/repos/${id}.git`;
      if (impl.name.startsWith('Durable Object')) {
        // Every row of the object's storage, copied out file by file as a directory on disk.
        gitdir = join(await scratchDir('kr-contract-copy-'), `${id}.git`);
        const files = await copyOut(t.fs, `${t.root}/repos/${id}.git`, gitdir);
        console.log(`[contract] Durable Object repository copied out: ${files} files`);
      }
      fsck(gitdir);
      expect(gitIn(gitdir, 'log', '--format=%H %s', 'main').trim().split('\n')).toEqual([
        `${shas[2]} third`,
        `${shas[1]} second`,
        `${shas[0]} first`,
      ]);
      expect(gitIn(gitdir, 'show', `${shas[1]}:docs/intro.md`)).toBe('## Intro\nhello again\n');
      expect(gitIn(gitdir, 'symbolic-ref', 'HEAD').trim()).toBe('refs/heads/main');
      const big = execFileSync('git', ['--git-dir', gitdir, 'cat-file', 'blob', `${shas[2]}:docs/big.bin`], { maxBuffer: 16 * MB });
      expect(sameBytes(big, BIG_PAGE)).toBe(true);
    });

    it('buildBundle: git bundle verify accepts it and git clone restores every page and commit', async () => {
      const bundle = await buildBundle(store, id);
      expect(bundle).not.toBeNull();
      const dir = await scratchDir('kr-contract-bundle-');
      const file = join(dir, 'repo.bundle');
      await writeFile(file, bundle!);
      git(['init', '--quiet', '--bare', join(dir, 'verify.git')]);
      git(['--git-dir', join(dir, 'verify.git'), 'bundle', 'verify', file]);
      git(['clone', '--quiet', file, join(dir, 'clone')]);
      expect(git(['log', '--format=%H'], join(dir, 'clone')).trim().split('\n')).toEqual([...shas].reverse());
      expect(await readFile(join(dir, 'clone', 'docs/intro.md'), 'utf8')).toBe('## Intro\nhello again\n');
      expect(sameBytes(readFileSync(join(dir, 'clone', 'docs/big.bin')), BIG_PAGE)).toBe(true);
      expect(existsSync(join(dir, 'clone', 'README.md'))).toBe(false);
      console.log(`[contract] bundle from ${impl.name}: ${bundle!.byteLength} bytes`);
    });
  });
}

describe('GitStore across filesystems', () => {
  it('the same commits have the same shas on Node files and in the Durable Object', () => {
    const all = [...shasByImpl.values()];
    expect(all).toHaveLength(fsImpls.length);
    for (const s of all) expect(s).toEqual(all[0]);
  });

  it('a Durable Object storage reopened from its file (an object restarted) holds the same repository', async () => {
    const file = join(await scratchDir('kr-contract-dofile-'), 'object.sqlite');
    const first = fakeDoStorage(file);
    const store = new GitStore({ fs: new DoFs(first).storeFs(), root: '/repos' });
    await store.init('r');
    const c = await store.commit('r', { parent: null, writes: [{ path: 'a.md', content: enc('a\n') }, { path: 'big.bin', content: BIG_PAGE }], author: ann, message: 'one', time: 1_780_000_000 });
    first.close();
    const second = fakeDoStorage(file);
    const again = new GitStore({ fs: new DoFs(second).storeFs(), root: '/repos' });
    expect(await again.head('r')).toBe(c!.meta.sha);
    expect(dec(await again.readFileAt('r', c!.meta.sha, 'a.md'))).toBe('a\n');
    expect(sameBytes(await again.readFileAt('r', c!.meta.sha, 'big.bin'), BIG_PAGE)).toBe(true);
    second.close();
  });
});

// ---------------------------------------------------------------------------------------------------------
// SqlDatabase implementations

/** The numbered migrations as the hosted build has them, or read from the directory when vitest cannot load `.sql` imports. */
let migrationSource = '';
async function doMigrations(): Promise<Migration[]> {
  try {
    const m = (await import('../lib/runtime/workers/migrations.ts')) as { BUNDLED_MIGRATIONS: Migration[] };
    migrationSource = 'BUNDLED_MIGRATIONS';
    return m.BUNDLED_MIGRATIONS;
  } catch {
    migrationSource = 'loadMigrations() (vitest cannot import .sql as text)';
    return loadMigrations();
  }
}

interface DbTarget {
  db: SqlDatabase;
  close(): Promise<void>;
}

const dbImpls: Array<{ name: string; open(): Promise<DbTarget> }> = [
  {
    name: 'libSQL file (LibsqlDatabase)',
    async open() {
      const d = await tempDir('kr-contract-db-');
      const db = await openDatabaseFile(join(d.path, 'service.db'), 0);
      return {
        db,
        close: async () => {
          await db.close();
          await d.cleanup();
        },
      };
    },
  },
  {
    name: 'Durable Object SQLite (DoSqlDatabase)',
    async open() {
      // As lib/runtime/workers/repo-object.ts has it: the repository's files and the index in one storage.
      const storage: FakeDoStorage = fakeDoStorage();
      new DoFs(storage);
      const db = new DoSqlDatabase(storage);
      await migrate(db, await doMigrations(), 0);
      return { db, close: async () => storage.close() };
    },
  },
  {
    name: 'D1 in workerd (D1Database over Miniflare)',
    async open() {
      const mf = new Miniflare({ modules: true, script: 'export default {}', d1Databases: ['DB'] });
      const db = new D1Database((await mf.getD1Database('DB')) as unknown as D1Like);
      await migrate(db, await loadMigrations(), 0);
      return { db, close: () => mf.dispose() };
    },
  },
];

const bytesOf = (v: unknown) => (v instanceof ArrayBuffer ? new Uint8Array(v) : (v as Uint8Array));

for (const impl of dbImpls) {
  describe(`SqlDatabase contract: ${impl.name}`, () => {
    let t: DbTarget;
    let db: SqlDatabase;
    let n = 0;
    /** A fresh table for one case. */
    const table = async () => {
      const name = `scratch_${++n}`;
      await db.run(`CREATE TABLE ${name} (k TEXT PRIMARY KEY, n INTEGER, r REAL, t TEXT, z, b BLOB)`);
      return name;
    };
    beforeAll(async () => {
      const started = performance.now();
      t = await impl.open();
      db = t.db;
      console.log(`[contract] ${impl.name} opened and migrated in ${Math.round(performance.now() - started)} ms${impl.name.startsWith('Durable') ? ` (migrations: ${migrationSource})` : ''}`);
    });
    afterAll(() => t.close());

    it('the migrations made every table, and a second run applies nothing', async () => {
      const tables = (await db.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")).map((r) => r.name);
      for (const name of ['users', 'pats', 'members', 'invite_keys', 'activity', 'git_commits', 'git_changes', 'git_head', 'invite_key_exclusions', 'subscriptions', 'billing_webhook_seen', 'repo_registry', 'schema_migrations']) {
        expect(tables, name).toContain(name);
      }
      const versions = (await db.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).map((r) => Number(r.version));
      expect(versions).toEqual((await loadMigrations()).map((m) => m.version));
      expect(await migrate(db, await loadMigrations(), 1)).toEqual([]);
    });

    it('all and get: rows as objects with typed values; no row is [] and undefined', async () => {
      const tb = await table();
      await db.run(`INSERT INTO ${tb} (k, n, r, t, z) VALUES (?, ?, ?, ?, ?)`, ['a', 42, 1.5, 'x', null]);
      const rows = await db.all(`SELECT k, n, r, t, z FROM ${tb}`);
      expect(rows).toHaveLength(1);
      expect({ ...rows[0] }).toEqual({ k: 'a', n: 42, r: 1.5, t: 'x', z: null });
      expect(await db.get(`SELECT k FROM ${tb} WHERE k = ?`, ['a'])).toMatchObject({ k: 'a' });
      expect(await db.get(`SELECT k FROM ${tb} WHERE k = ?`, ['nope'])).toBeUndefined();
      expect(await db.all(`SELECT k FROM ${tb} WHERE k = ?`, ['nope'])).toEqual([]);
      expect(await db.get(`SELECT COUNT(*) AS c, ? AS s FROM ${tb} WHERE k = 'nope'`, ['é✓'])).toMatchObject({ c: 0, s: 'é✓' });
    });

    it('run returns the number of rows its statement changed', async () => {
      const tb = await table();
      expect((await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 1), ('b', 1), ('c', 2)`)).changes).toBe(3);
      expect((await db.run(`UPDATE ${tb} SET t = 'u' WHERE n = ?`, [1])).changes).toBe(2);
      expect((await db.run(`UPDATE ${tb} SET t = 'u' WHERE n = ?`, [99])).changes).toBe(0);
      expect((await db.run(`DELETE FROM ${tb} WHERE n > 0`)).changes).toBe(3);
      expect((await db.run(`DELETE FROM ${tb}`)).changes).toBe(0);
    });

    it('run of a statement that writes no rows (DDL right after a write) reports 0 changes', async () => {
      const tb = await table();
      expect((await db.run(`INSERT INTO ${tb} (k) VALUES ('a'), ('b')`)).changes).toBe(2);
      expect((await db.run(`CREATE INDEX ${tb}_t ON ${tb} (t)`)).changes).toBe(0);
      await db.run(`INSERT INTO ${tb} (k) VALUES ('c')`);
      const [ddl, sel] = await db.batch([{ sql: `DROP INDEX ${tb}_t` }, { sql: `SELECT COUNT(*) AS c FROM ${tb}` }]);
      expect(ddl!.changes).toBe(0);
      expect(sel!.rows[0]).toMatchObject({ c: 3 });
    });

    it('run of an INSERT gives the rowid of the new row as lastId', async () => {
      const tb = await table();
      await db.run(`INSERT INTO ${tb} (k) VALUES ('a')`);
      const r = await db.run(`INSERT INTO ${tb} (k) VALUES ('b')`);
      const { id } = (await db.get<{ id: number }>(`SELECT rowid AS id FROM ${tb} WHERE k = 'b'`))!;
      expect(r.lastId).toBe(BigInt(id));
    });

    it('INSERT … ON CONFLICT DO NOTHING over an existing row changes 0; DO UPDATE changes 1', async () => {
      const tb = await table();
      await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 1)`);
      expect((await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 2) ON CONFLICT (k) DO NOTHING`)).changes).toBe(0);
      expect((await db.run(`INSERT INTO ${tb} (k, n) VALUES ('b', 2) ON CONFLICT (k) DO NOTHING`)).changes).toBe(1);
      expect((await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 3) ON CONFLICT (k) DO UPDATE SET n = excluded.n`)).changes).toBe(1);
      expect(await db.get(`SELECT n FROM ${tb} WHERE k = 'a'`)).toMatchObject({ n: 3 });
      const [r] = await db.batch([{ sql: `INSERT INTO ${tb} (k, n) VALUES ('a', 9) ON CONFLICT (k) DO NOTHING` }]);
      expect(r!.changes).toBe(0);
    });

    it('batch: one result per statement, in order, with SELECT rows and change counts; [] for none', async () => {
      const tb = await table();
      const res = await db.batch([
        { sql: `INSERT INTO ${tb} (k, n) VALUES (?, ?), (?, ?)`, args: ['a', 1, 'b', 2] },
        { sql: `UPDATE ${tb} SET n = n + 10 WHERE k = ?`, args: ['b'] },
        { sql: `SELECT k, n FROM ${tb} ORDER BY k` },
        { sql: `SELECT k FROM ${tb} WHERE k = 'none'` },
      ]);
      expect(res.map((r) => r.changes).slice(0, 2)).toEqual([2, 1]);
      expect(res[2]!.rows.map((r) => ({ ...r }))).toEqual([
        { k: 'a', n: 1 },
        { k: 'b', n: 12 },
      ]);
      expect(res[3]!.rows).toEqual([]);
      expect(await db.batch([])).toEqual([]);
    });

    it('batch is atomic: a failing statement rolls back the whole batch, and the database goes on', async () => {
      const tb = await table();
      await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 1)`);
      await expect(
        db.batch([
          { sql: `INSERT INTO ${tb} (k, n) VALUES ('x', 1)` },
          { sql: `UPDATE ${tb} SET n = 100 WHERE k = 'a'` },
          { sql: `INSERT INTO ${tb} (k, n) VALUES ('a', 2)` }, // primary key taken
          { sql: `INSERT INTO ${tb} (k, n) VALUES ('y', 1)` },
        ]),
      ).rejects.toThrow();
      expect((await db.all(`SELECT k, n FROM ${tb} ORDER BY k`)).map((r) => ({ ...r }))).toEqual([{ k: 'a', n: 1 }]);
      await expect(db.batch([{ sql: `INSERT INTO ${tb} (k) VALUES ('z')` }, { sql: 'SELECT * FROM no_such_table' }])).rejects.toThrow();
      expect(await db.get(`SELECT k FROM ${tb} WHERE k = 'z'`)).toBeUndefined();
      // No transaction was left open: the next batch and run commit.
      await db.batch([{ sql: `INSERT INTO ${tb} (k) VALUES ('after')` }]);
      await expect(db.run('INSERT INTO no_such_table VALUES (1)')).rejects.toThrow();
      await db.run(`INSERT INTO ${tb} (k) VALUES ('after2')`);
      expect((await db.all(`SELECT k FROM ${tb} ORDER BY k`)).map((r) => r.k)).toEqual(['a', 'after', 'after2']);
    });

    it('changes() inside a batch is the count of the statement before it', async () => {
      const tb = await table();
      const log = await table();
      await db.run(`INSERT INTO ${tb} (k, n) VALUES ('a', 1), ('b', 1), ('c', 2)`);
      await db.batch([
        { sql: `UPDATE ${tb} SET t = 'x' WHERE n = 1` },
        { sql: `INSERT INTO ${log} (k, n) SELECT 'after-update', changes()` },
        { sql: `DELETE FROM ${tb} WHERE n = 99` },
        { sql: `INSERT INTO ${log} (k) SELECT 'after-empty-delete' WHERE changes() > 0` },
        { sql: `DELETE FROM ${tb} WHERE n = 2` },
        { sql: `INSERT INTO ${log} (k) SELECT 'after-delete' WHERE changes() > 0` },
      ]);
      expect((await db.all(`SELECT k, n FROM ${log} ORDER BY k`)).map((r) => ({ ...r }))).toEqual([
        { k: 'after-delete', n: null },
        { k: 'after-update', n: 2 },
      ]);
    });

    it('bytes: Uint8Array (views too, empty too) round-trips as a BLOB', async () => {
      const tb = await table();
      const backing = Uint8Array.from([9, 9, 0, 1, 2, 255, 0, 9]);
      const cases: Array<[string, Uint8Array]> = [
        ['plain', Uint8Array.from([0, 1, 2, 255, 0])],
        ['view', backing.subarray(2, 7)],
        ['big', randomBytes(256 * 1024)],
        ['empty', new Uint8Array(0)],
      ];
      for (const [k, b] of cases) await db.run(`INSERT INTO ${tb} (k, b) VALUES (?, ?)`, [k, b]);
      for (const [k, b] of cases) {
        const r = await db.get<{ b: unknown; tb: string }>(`SELECT b, typeof(b) AS tb FROM ${tb} WHERE k = ?`, [k]);
        expect(r!.tb, k).toBe('blob');
        expect(r!.b instanceof Uint8Array || r!.b instanceof ArrayBuffer, k).toBe(true);
        expect(sameBytes(bytesOf(r!.b), b), k).toBe(true);
      }
      const [, sel] = await db.batch([
        { sql: `INSERT INTO ${tb} (k, b) VALUES (?, ?)`, args: ['batch', Uint8Array.from([7, 0, 7])] },
        { sql: `SELECT b FROM ${tb} WHERE k = ?`, args: ['batch'] },
      ]);
      expect(sameBytes(bytesOf(sel!.rows[0]!.b), Uint8Array.from([7, 0, 7]))).toBe(true);
    });

    it('booleans bind as 1 and 0, bigints as integers (into INTEGER columns, as every column of the schema is typed)', async () => {
      const tb = await table();
      await db.run(`INSERT INTO ${tb} (k, n) VALUES (?, ?), (?, ?), (?, ?), (?, ?)`, ['t', true, 'f', false, 'b', 7n, 'h', 2n ** 40n]);
      const rows = await db.all<{ k: string; n: number; tn: string }>(`SELECT k, n, typeof(n) AS tn FROM ${tb} ORDER BY k`);
      expect(rows.map((r) => [r.k, r.n, r.tn])).toEqual([
        ['b', 7, 'integer'],
        ['f', 0, 'integer'],
        ['h', 2 ** 40, 'integer'],
        ['t', 1, 'integer'],
      ]);
    });
  });

  describe(`record modules on ${impl.name}: Members, Users, Invites`, () => {
    let t: DbTarget;
    let users: Users;
    let members: Members;
    let invites: Invites;
    const clock = new ManualClock(Date.UTC(2026, 4, 1));
    const profile = (who: string) => ({ issuer: 'https://idp.example', subject: `sub-${who}`, email: `${who.toUpperCase()}@Example.test`, name: who });
    let ann: string;
    let bob: string;
    let cy: string;
    beforeAll(async () => {
      t = await impl.open();
      users = new Users(t.db, clock);
      members = new Members(t.db, clock);
      invites = new Invites(t.db, clock);
    });
    afterAll(() => t.close());

    it('users.upsert: the very first user adopts the ownerless repositories; later sign-ins adopt nothing', async () => {
      const first = await users.upsert(profile('ann'), ['r1', 'r2'], members);
      ann = first.user.id;
      expect(first).toMatchObject({ created: true, first: true, adopted: ['r1', 'r2'] });
      expect(first.user.email).toBe('ann@example.test');
      expect(await members.roleOf('r1', ann)).toBe('owner');

      const again = await users.upsert({ ...profile('ann'), name: 'Ann Renamed' }, ['r3'], members);
      expect(again).toMatchObject({ created: false, first: false, adopted: [] });
      expect(again.user.id).toBe(ann);
      expect(again.user.name).toBe('Ann Renamed');
      expect(await members.roleOf('r3', ann)).toBeNull();

      const b = await users.upsert(profile('bob'), ['r3'], members);
      bob = b.user.id;
      expect(b).toMatchObject({ created: true, first: false, adopted: [] });
      cy = (await users.upsert(profile('cy'))).user.id;
      expect((await users.byIssuerSubject('https://idp.example', 'sub-bob'))?.id).toBe(bob);
      expect(await users.any()).toBe(true);
    });

    it('members.add keeps an existing row and its role; list is in join order', async () => {
      clock.advance(1000);
      expect(await members.add('r1', bob, 'member')).toEqual({ role: 'member', added: true });
      expect(await members.add('r1', bob, 'owner')).toEqual({ role: 'member', added: false });
      expect(await members.add('r1', ann, 'member')).toEqual({ role: 'owner', added: false });
      const list = await members.list('r1');
      expect(list.map((m) => [m.email, m.role])).toEqual([
        ['ann@example.test', 'owner'],
        ['bob@example.test', 'member'],
      ]);
      expect(typeof list[0]!.added_at).toBe('number');
      expect(await members.reposOf(ann)).toEqual([
        { repo_id: 'r1', role: 'owner' },
        { repo_id: 'r2', role: 'owner' },
      ].map((r) => expect.objectContaining(r)));
    });

    it('members.claimIfOwnerless: only while the repository has no owner', async () => {
      expect(await members.claimIfOwnerless('r1', bob)).toBe(false);
      expect(await members.roleOf('r1', bob)).toBe('member');
      expect(await members.claimIfOwnerless('r4', bob)).toBe(true);
      expect(await members.claimIfOwnerless('r4', cy)).toBe(false);
      expect(await members.roleOf('r4', bob)).toBe('owner');
      expect(await members.roleOf('r4', cy)).toBeNull();
      expect(await members.hasOwner('r4')).toBe(true);
      expect(await members.hasOwner('r9')).toBe(false);
    });

    it('members.remove: the last owner is refused, a non-member is reported, a removal marks the invite keys', async () => {
      const before = await invites.mint('r1', ann, 'before');
      expect(await members.remove('r1', ann)).toBe('last_owner');
      expect(await members.roleOf('r1', ann)).toBe('owner');
      expect(await members.remove('r1', cy)).toBe('not_member');
      // Neither marked any key.
      expect(await invites.excludes(before.key.id, ann)).toBe(false);
      expect(await invites.excludes(before.key.id, cy)).toBe(false);

      expect(await members.remove('r1', bob)).toBe('removed');
      expect(await members.roleOf('r1', bob)).toBeNull();
      expect(await invites.excludes(before.key.id, bob)).toBe(true);
      // A key minted after the removal readmits.
      clock.advance(1000);
      const after = await invites.mint('r1', ann, 'after');
      expect(await invites.excludes(after.key.id, bob)).toBe(false);
      // Two owners: one may go.
      await members.add('r1', cy, 'owner');
      expect(await members.remove('r1', ann)).toBe('removed');
      expect(await members.remove('r1', cy)).toBe('last_owner');
    });

    it('invites: find by token, list newest first, revoke deletes the key and its exclusions', async () => {
      const { key, token } = await invites.mint('r5', ann, 'label');
      const found = await invites.find(token);
      expect(found).toMatchObject({ repoId: 'r5', expired: false, key: { id: key.id, label: 'label' } });
      expect(await invites.find(token + 'x')).toBeNull();
      clock.advance(1000);
      const second = await invites.mint('r5', ann, 'second');
      expect((await invites.list('r5')).map((k) => k.id)).toEqual([second.key.id, key.id]);
      await members.add('r5', bob, 'member');
      await members.add('r5', ann, 'owner');
      expect(await members.remove('r5', bob)).toBe('removed');
      expect(await invites.excludes(key.id, bob)).toBe(true);
      expect(await invites.revoke('r5', key.id)).toBe(true);
      expect(await invites.revoke('r5', key.id)).toBe(false);
      expect(await invites.excludes(key.id, bob)).toBe(false);
      expect(await invites.find(token)).toBeNull();
      clock.advance(8 * 24 * 3600 * 1000);
      expect((await invites.find(second.token))?.expired).toBe(true);
    });
  });
}
