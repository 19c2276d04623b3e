import { readdir, readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createClient } from '@libsql/client';
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

/**
 * Opens (creating if needed) the libSQL database file, sets it up for durable single-writer use and
 * applies pending migrations. Node only.
 */
/** How long a statement waits for a lock another process holds before SQLITE_BUSY (blocks the event loop). */
const BUSY_TIMEOUT_MS = 5000;

export async function openDatabaseFile(file: string, nowSeconds: number): Promise<LibsqlDatabase> {
  // The client keeps a pool of connections and opens one whenever every open one is borrowed. A pool
  // limit far above anything this process borrows at once (writes are queued one at a time, reads hold
  // a connection only for one synchronous call): no call ever waits for another's release. The client's
  // release path can close a connection without waking a queued waiter, which then sleeps until some
  // other query happens to release one.
  //
  // Per-connection settings must come from the client's options, not a PRAGMA: a PRAGMA run through
  // `execute` reaches only the connection that happened to run it. `timeout` is the busy timeout (ms) of
  // every connection the pool opens. Without it every connection but the first fails at once with
  // SQLITE_BUSY when another process holds the write lock for an instant, and libsql then leaves that
  // failed statement in progress, so every later COMMIT on that connection fails too ("cannot commit
  // transaction - SQL statements in progress") until the garbage collector finalizes it.
  const client = createClient({ url: pathToFileURL(file).href, concurrency: 256, timeout: BUSY_TIMEOUT_MS });
  // WAL (kept in the file): readers do not block the writer. synchronous FULL and foreign keys are the
  // library's defaults for every connection; set here for the record.
  await client.execute('PRAGMA journal_mode = WAL');
  await client.execute('PRAGMA synchronous = FULL');
  await client.execute('PRAGMA foreign_keys = ON');
  const db = new LibsqlDatabase(client);
  await migrate(db, await loadMigrations(), nowSeconds);
  return db;
}
