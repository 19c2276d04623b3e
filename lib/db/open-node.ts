import { readdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'libsql';
import { LibsqlDatabase } from './database.ts';
import { migrate, migrationsFromFiles, type Migration } from './migrate.ts';

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
  const connection = new Database(file, { timeout: BUSY_TIMEOUT_MS });
  const db = new LibsqlDatabase(connection);
  try {
    // WAL (kept in the file): readers do not block the writer. synchronous FULL: a commit is on disk
    // before it returns (the library's default; set here for the record).
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    db.exec('PRAGMA foreign_keys = ON');
    await migrate(db, await loadMigrations(), nowSeconds);
  } catch (e) {
    await db.close();
    throw e;
  }
  return db;
}
