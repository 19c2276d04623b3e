/**
 * lib/runtime/node/read-pool.ts: read queries on worker threads, each with its own libSQL connection to the file.
 * Real libSQL files in WAL mode, written by the main thread's connection (openDerivedFile) as the search
 * index's files are.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { copyFileSync, existsSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { openDerivedFile } from '../lib/runtime/node/open-db.ts';
import type { LibsqlDatabase } from '../lib/runtime/node/libsql.ts';
import { ReadError, ReadPool } from '../lib/runtime/node/read-pool.ts';
import { tempDir } from './helpers/env.ts';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setup(opts: Partial<ConstructorParameters<typeof ReadPool>[0]> = {}) {
  const dir = await tempDir('kr-read-pool-');
  const pool = new ReadPool({ threads: 2, perFile: 1, openPerThread: 4, cacheKib: 256, ...opts });
  const dbs: LibsqlDatabase[] = [];
  cleanup.push(async () => {
    await pool.close();
    for (const db of dbs) await db.close();
    await dir.cleanup();
  });
  const open = (name: string) => {
    const db = openDerivedFile(join(dir.path, name), 256);
    dbs.push(db);
    return db;
  };
  return { dir: dir.path, pool, open };
}

/** A query that keeps a thread busy for a while (a few million rows of a recursive CTE). */
const SLOW = 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1500000) SELECT count(*) AS n FROM n';

describe('ReadPool', () => {
  it('answers rows as the main connection does, and sees every commit made before the query', async () => {
    const { dir, pool, open } = await setup();
    const db = open('a.db');
    await db.batch([
      { sql: 'CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, z)' },
      { sql: 'INSERT INTO t VALUES (?, ?, ?, ?, ?)', args: [9007199254740991, 1.5, 'é«x»', new Uint8Array([0, 1, 255]), null] },
    ]);
    const sql = 'SELECT i, r, s, b, z, i AS i FROM t';
    expect(await pool.all(join(dir, 'a.db'), sql)).toEqual(await db.all(sql));
    await db.run('INSERT INTO t (i) VALUES (?)', [2]);
    expect(await pool.all(join(dir, 'a.db'), 'SELECT count(*) AS n FROM t WHERE i = ?', [2])).toEqual([{ n: 1 }]);
    // Past 2^53 the value is refused, as on the main connection.
    await db.run('INSERT INTO t (i) VALUES (9007199254740993)');
    await expect(pool.all(join(dir, 'a.db'), 'SELECT i FROM t')).rejects.toThrow(RangeError);
  });

  it('reads only: a write is refused, a missing file is not made', async () => {
    const { dir, pool, open } = await setup();
    const db = open('a.db');
    await db.run('CREATE TABLE t (x)');
    await expect(pool.all(join(dir, 'a.db'), 'INSERT INTO t VALUES (1)')).rejects.toMatchObject({ name: 'ReadError', code: 'NOT_A_READ' });
    await expect(pool.all(join(dir, 'a.db'), "SELECT * FROM t WHERE x = (SELECT 1 FROM t WHERE (SELECT count(*) FROM pragma_table_info('t')) > 0)")).resolves.toEqual([]);
    // Even a statement that reads and writes (a pragma that sets): the connection itself is read-only.
    await expect(pool.all(join(dir, 'a.db'), 'PRAGMA user_version = 7')).rejects.toMatchObject({ name: 'ReadError' });
    expect(await db.all('PRAGMA user_version')).toEqual([{ user_version: 0 }]);
    await expect(pool.all(join(dir, 'a.db'), 'SELECT * FROM t')).resolves.toEqual([]);
    const missing = join(dir, 'missing.db');
    const err = await pool.all(missing, 'SELECT 1').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ReadError);
    expect((err as ReadError).code).toBe('CANNOT_OPEN');
    expect(existsSync(missing)).toBe(false);
    // A path with characters a URI must escape.
    const odd = open('a b?c#d%25.db');
    await odd.batch([{ sql: 'CREATE TABLE t (x)' }, { sql: 'INSERT INTO t VALUES (5)' }]);
    expect(await pool.all(join(dir, 'a b?c#d%25.db'), 'SELECT x FROM t')).toEqual([{ x: 5 }]);
    // A statement that fails fails alone.
    await expect(pool.all(join(dir, 'a.db'), 'SELECT nope FROM t')).rejects.toMatchObject({ code: 'SQLITE_ERROR' });
    expect(await pool.all(join(dir, 'a.db'), 'SELECT count(*) AS n FROM t')).toEqual([{ n: 0 }]);
  });

  it("one file's slow queries hold at most perFile threads: another file's query runs beside them", async () => {
    const { dir, pool, open } = await setup({ threads: 3, perFile: 2 });
    for (const name of ['busy.db', 'quick.db']) await open(name).run('CREATE TABLE t (x)');
    const order: string[] = [];
    const slow = [1, 2, 3].map((k) => pool.all(join(dir, 'busy.db'), SLOW).then(() => order.push(`busy ${k}`)));
    const quick = pool.all(join(dir, 'quick.db'), 'SELECT count(*) AS n FROM t').then(() => order.push('quick'));
    await Promise.all([...slow, quick]);
    expect(pool.size).toBe(3);
    // The other file's query did not wait; the third slow query started only once one of the first two ended.
    expect(order[0]).toBe('quick');
    expect(order.indexOf('busy 3')).toBeGreaterThan(Math.min(order.indexOf('busy 1'), order.indexOf('busy 2')));
  });

  it('files take turns: a file with many queries waiting does not keep another waiting behind all of them', async () => {
    const { dir, pool, open } = await setup({ threads: 1, perFile: 1 });
    for (const name of ['many.db', 'one.db']) await open(name).run('CREATE TABLE t (x)');
    const order: string[] = [];
    const many = [1, 2, 3, 4].map((k) => pool.all(join(dir, 'many.db'), SLOW).then(() => order.push(`many ${k}`)));
    const one = pool.all(join(dir, 'one.db'), 'SELECT 1 AS x').then(() => order.push('one'));
    await Promise.all([...many, one]);
    expect(order).toEqual(['many 1', 'one', 'many 2', 'many 3', 'many 4']);
  });

  it('forget closes every connection to a file, so that a replaced file is read afresh; idle threads stop', async () => {
    const { dir, pool, open } = await setup({ threads: 1, idleMs: 50 });
    const file = join(dir, 'a.db');
    const db = open('a.db');
    await db.batch([{ sql: 'CREATE TABLE t (x)' }, { sql: 'INSERT INTO t VALUES (1)' }]);
    expect(await pool.all(file, 'SELECT x FROM t')).toEqual([{ x: 1 }]);
    await pool.forget(file);
    await db.close();
    const { rm } = await import('node:fs/promises');
    for (const f of ['', '-wal', '-shm']) await rm(`${file}${f}`, { force: true });
    await open('a.db').batch([{ sql: 'CREATE TABLE t (x)' }, { sql: 'INSERT INTO t VALUES (2)' }]);
    expect(await pool.all(file, 'SELECT x FROM t')).toEqual([{ x: 2 }]);
    expect(pool.size).toBe(1);
    await vi.waitFor(() => expect(pool.size).toBe(0), { timeout: 5_000, interval: 20 });
    expect(await pool.all(file, 'SELECT x FROM t')).toEqual([{ x: 2 }]);
  });

  it.skipIf(!existsSync('/proc/self/fd'))('a connection past openPerThread is closed for good soon after the query that evicted it', async () => {
    // The driver closes a connection only once its statements are collected: a thread left to V8 kept them
    // (and their files and memory) by the dozen. Each thread collects after its closes, so that by the time it
    // answers the next query only the connections it keeps, and those of the latest closes, are still open.
    const { dir, pool, open } = await setup({ threads: 1, openPerThread: 4 });
    const source = open('source.db');
    await source.batch([{ sql: 'CREATE TABLE t (x)' }, { sql: 'INSERT INTO t VALUES (1)' }]);
    await source.close();
    const files = Array.from({ length: 40 }, (_, i) => join(dir, `f${i}.db`));
    for (const f of files) copyFileSync(join(dir, 'source.db'), f);
    /** Database files of `files` this process has open (the read thread's connections are its files too). */
    const openFiles = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return files.includes(readlinkSync(`/proc/self/fd/${fd}`));
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    for (const f of files) expect(await pool.all(f, 'SELECT x FROM t')).toEqual([{ x: 1 }]);
    // More answers: the thread has had its turns since the closes of every query but the last ones. Under a
    // loaded machine a thread's collection may come a turn later; a few more queries of the kept files give
    // it those turns (no new connection is opened, none is evicted), never an unbounded wait.
    await vi.waitFor(
      async () => {
        expect(await pool.all(files[39]!, 'SELECT count(*) AS n FROM t')).toEqual([{ n: 1 }]);
        expect(await pool.all(files[38]!, 'SELECT count(*) AS n FROM t')).toEqual([{ n: 1 }]);
        expect(openFiles()).toBeLessThanOrEqual(4 + 1);
      },
      { timeout: 5_000, interval: 50 },
    );
  });

  it('close fails the queries still waiting and every later one', async () => {
    const { dir, pool, open } = await setup({ threads: 1, perFile: 1 });
    await open('a.db').run('CREATE TABLE t (x)');
    const running = expect(pool.all(join(dir, 'a.db'), SLOW)).rejects.toThrow();
    const waiting = expect(pool.all(join(dir, 'a.db'), 'SELECT 1')).rejects.toThrow('the read pool is closed');
    await pool.close();
    await waiting;
    await running;
    await expect(pool.all(join(dir, 'a.db'), 'SELECT 1')).rejects.toThrow('the read pool is closed');
  });
});
