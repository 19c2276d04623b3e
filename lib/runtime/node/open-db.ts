import { readdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'libsql';
import { flushData, flushDir } from './flush.ts';
import { LibsqlDatabase } from './libsql.ts';
import { migrate, migrationsFromFiles, type Migration } from '../../db/migrate.ts';

/**
 * schema/migrations, found by walking up from this module: from lib/db/ in the sources, or from the
 * bundle npm start runs (dist/server.mjs).
 */
function findMigrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'schema', 'migrations');
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('schema/migrations not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
}
const MIGRATIONS_DIR = findMigrationsDir();

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.sql'));
  const files = await Promise.all(names.map(async (name) => ({ name, sql: await readFile(join(dir, name), 'utf8') })));
  return migrationsFromFiles(files);
}

/** The write-ahead log's data on disk. No log (checkpointed away by the last connection) holds nothing to flush. */
async function flushWal(wal: string): Promise<void> {
  try {
    await flushData(wal);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** How long a statement waits for a lock another process holds before SQLITE_BUSY (blocks the event loop). */
const BUSY_TIMEOUT_MS = 5000;

/**
 * Opens (creating if needed) the libSQL database file, sets it up for durable single-writer use and
 * applies pending migrations. Node only.
 */
export async function openDatabaseFile(file: string, nowSeconds: number): Promise<LibsqlDatabase> {
  // One connection: every statement runs synchronously on this thread anyway, and one connection keeps its
  // prepared statements and its settings. `timeout` is its busy timeout (ms): without it a statement fails at
  // once with SQLITE_BUSY when another process (the admin command) holds the write lock for an instant.
  const walIsNew = !existsSync(`${file}-wal`);
  const connection = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  // WAL (kept in the file): readers do not block the writer. synchronous NORMAL writes a commit's frames to
  // the log without flushing it, and the flush is ours: `flushWal` fdatasyncs the log through the threadpool
  // before a write resolves. As durable as FULL, where SQLite's own flush would hold this thread (a
  // millisecond or more per commit, beside a push's git flushes on the same disk). Checkpoints still flush
  // the log and the database file themselves.
  const db = new LibsqlDatabase(connection, () => flushWal(`${file}-wal`));
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec('PRAGMA foreign_keys = ON');
    await migrate(db, await loadMigrations(), nowSeconds);
    // The log's directory entry, when this open created the log (SQLite flushes it on the log's first sync,
    // which NORMAL defers to the first checkpoint): a crash must not lose the file that holds the commits. A
    // close leaves the emptied log in place, so a restart finds it and has nothing to flush here.
    if (walIsNew) await flushDir(dirname(file));
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}

/**
 * Opens (creating if needed) a database file of derived rows that git can rebuild (a repository's full-text
 * index, lib/runtime/node/search-files.ts), without migrations: WAL (the read threads of lib/runtime/node/read-pool.ts read
 * beside this connection's writes), synchronous NORMAL without flushes of our own (a crash may lose the last
 * commits, never part of one: they are made again), a page cache of `cacheKib`. A file that is not a
 * database is an error here (SQLITE_NOTADB), before anything is written to it.
 */
export function openDerivedFile(file: string, cacheKib: number): LibsqlDatabase {
  // Closed and opened again as repositories come and go: statements for one call only (see LibsqlDatabase).
  const db = new LibsqlDatabase(new Database(file, { timeout: BUSY_TIMEOUT_MS }), undefined, { keepStatements: false });
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = NORMAL');
    db.exec(`PRAGMA cache_size = -${Math.floor(cacheKib)}`);
  } catch (e) {
    db.connection.close();
    throw e;
  }
  return db;
}
