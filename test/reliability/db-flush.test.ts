/**
 * The database's durability on the Node build (lib/runtime/node/libsql.ts, lib/runtime/node/open-db.ts): SQLite writes each
 * commit's frames to the write-ahead log with synchronous NORMAL, and the log is flushed by us, through the
 * threadpool, before the write resolves. These tests hold the flush back and check that no write is answered
 * before it, that a failed flush fails the write, and that openDatabaseFile really flushes the log file.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { statSync } from 'node:fs';
import Database from 'libsql';
import { LibsqlDatabase } from '../../lib/runtime/node/libsql.ts';
import { openDatabaseFile } from '../../lib/runtime/node/open-db.ts';
import { tempDir } from '../helpers/env.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

async function scratch(): Promise<string> {
  const dir = await tempDir('kr-db-flush-');
  cleanups.push(dir.cleanup);
  return dir.path;
}

/** A flush that waits until released; counts its calls. */
function heldFlush() {
  const waiting: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  return {
    calls: 0,
    waiting,
    flush() {
      this.calls++;
      return new Promise<void>((resolve, reject) => waiting.push({ resolve, reject }));
    },
  };
}

const settled = async (p: Promise<unknown>) => {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  // Several turns of the event loop: a write that did not wait for the flush would have settled by now.
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
};

describe('a write resolves only once its commit is flushed', () => {
  it('run and batch wait for the flush; the commit is visible to reads meanwhile', async () => {
    const dir = await scratch();
    const held = heldFlush();
    const db = new LibsqlDatabase(new Database(join(dir, 'a.db')), () => held.flush());
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (x INTEGER)');

    const one = db.run('INSERT INTO t (x) VALUES (?)', [1]);
    expect(await settled(one)).toBe(false);
    expect(held.calls).toBe(1);
    // Committed (readers see it) but not yet answered.
    expect(await db.all('SELECT x FROM t')).toEqual([{ x: 1 }]);
    held.waiting.shift()!.resolve();
    expect(await one).toMatchObject({ changes: 1 });

    const two = db.batch([{ sql: 'INSERT INTO t (x) VALUES (?)', args: [2] }, { sql: 'INSERT INTO t (x) VALUES (?)', args: [3] }]);
    expect(await settled(two)).toBe(false);
    // The next write is not held up by the flush of the one before: the queue moved on at COMMIT.
    const three = db.run('INSERT INTO t (x) VALUES (?)', [4]);
    await new Promise((r) => setImmediate(r));
    expect(held.calls).toBe(3);
    expect((await db.all<{ n: number }>('SELECT COUNT(*) AS n FROM t'))[0]!.n).toBe(4);
    for (const w of held.waiting.splice(0)) w.resolve();
    expect((await two).map((r) => r.changes)).toEqual([1, 1]);
    expect(await three).toMatchObject({ changes: 1 });
    await db.close();
  });

  it('a failed flush fails the write (it is not answered as durable); a failed statement is not flushed', async () => {
    const dir = await scratch();
    const held = heldFlush();
    const db = new LibsqlDatabase(new Database(join(dir, 'b.db')), () => held.flush());
    db.exec('CREATE TABLE t (x INTEGER UNIQUE)');
    const w = db.run('INSERT INTO t (x) VALUES (1)');
    await new Promise((r) => setImmediate(r));
    held.waiting.shift()!.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(w).rejects.toThrow('EIO');

    await expect(db.batch([{ sql: 'INSERT INTO t (x) VALUES (2)' }, { sql: 'INSERT INTO t (x) VALUES (1)' }])).rejects.toThrow(/UNIQUE/);
    expect(held.calls).toBe(1);
    // The failed batch was rolled back whole.
    expect(await db.all('SELECT x FROM t ORDER BY x')).toEqual([{ x: 1 }]);
    await db.close();
  });
});

describe('a batch of rows that can be made again (durable: false)', () => {
  it('resolves at its commit without a flush of its own; the next durable write flushes it with its own', async () => {
    const dir = await scratch();
    const held = heldFlush();
    const db = new LibsqlDatabase(new Database(join(dir, 'c.db')), () => held.flush());
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('CREATE TABLE t (x INTEGER UNIQUE)');
    expect((await db.batch([{ sql: 'INSERT INTO t (x) VALUES (1)' }], { durable: false })).map((r) => r.changes)).toEqual([1]);
    expect(held.calls).toBe(0);
    const next = db.run('INSERT INTO t (x) VALUES (2)');
    expect(await settled(next)).toBe(false);
    expect(held.calls).toBe(1);
    held.waiting.shift()!.resolve();
    await next;
    // All or nothing all the same.
    await expect(db.batch([{ sql: 'INSERT INTO t (x) VALUES (3)' }, { sql: 'INSERT INTO t (x) VALUES (1)' }], { durable: false })).rejects.toThrow(/UNIQUE/);
    expect(await db.all('SELECT x FROM t ORDER BY x')).toEqual([{ x: 1 }, { x: 2 }]);
    expect(held.calls).toBe(1);
    await db.close();
  });
});

describe('openDatabaseFile', () => {
  it('leaves the flush to the service (synchronous NORMAL, WAL); writes go to the log and resolve; close empties the log', async () => {
    const dir = await scratch();
    const file = join(dir, 'service.db');
    const db = await openDatabaseFile(file, 0);
    expect(await db.all('PRAGMA journal_mode')).toEqual([{ journal_mode: 'wal' }]);
    expect(await db.all('PRAGMA synchronous')).toEqual([{ synchronous: 1 }]);
    // The log exists and grows with a write; the write resolves (its flush found the file).
    const before = statSync(`${file}-wal`).size;
    await db.run('CREATE TABLE flush_probe (x INTEGER)');
    await db.run('INSERT INTO flush_probe (x) VALUES (?)', [1]);
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(before);
    // Closed: the log's commits are in the database file and the log is empty (nothing to replay at the next open).
    await db.close();
    expect(statSync(`${file}-wal`, { throwIfNoEntry: false })?.size ?? 0).toBe(0);
    const again = await openDatabaseFile(file, 0);
    expect(await again.all('SELECT x FROM flush_probe')).toEqual([{ x: 1 }]);
    await again.close();
  });
});
