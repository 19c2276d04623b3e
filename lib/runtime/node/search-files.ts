import { rm } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Database } from './libsql.ts';
import type { LibsqlDatabase } from './libsql.ts';
import { openDerivedFile } from './open-db.ts';
import { ReadPool } from './read-pool.ts';
import { isSafeRepoId } from '../../core/page/path.ts';
import type { TextReader, TextStore } from '../../search/fts.ts';

/**
 * The Node server's full-text rows: one libSQL file per repository, `<dir>/<id>.db`, as a Durable Object
 * holds its own on Workers. A search then reads its repository's words and nothing else (the cost of a
 * search in a one-page repository does not grow with a 100,000-page neighbour), and it reads them on the
 * read pool's threads (lib/runtime/node/read-pool.ts), off the event loop. Writes (catch-ups, under the repository's
 * lock) go through a connection on this thread; at most `maxOpen` of those stay open, the least recently
 * used idle one closed first. The files hold nothing git cannot rebuild: a missing file is made again and
 * filled by the next catch-up, one that is not a database is deleted and made again.
 */

/** Write connections kept open (each holds a few file descriptors and up to CACHE_KIB of pages). */
export const OPEN_FILES = 16;
/** Page cache of each connection, KiB. */
export const CACHE_KIB = 1024;
/**
 * Threads that run searches: as many as the machine has cores, from 2 to 8, started only as searches need
 * them (each holds some 10 MiB). One repository's queries hold at most half of them: its expensive searches
 * leave the other half to the other repositories, whose searches start at once instead of after them. On a
 * 2-core machine that is one thread for the repository, and a core left to the event loop (measured: the
 * event loop's worst delay during twelve expensive searches of one repository 28–48 ms with one thread,
 * 54–83 ms with two).
 */
export const READ_THREADS = Math.max(2, Math.min(8, availableParallelism()));
export const READ_THREADS_PER_REPO = Math.max(1, Math.floor(READ_THREADS / 2));
/** Connections each read thread keeps open. */
export const OPEN_PER_THREAD = 16;

interface Entry {
  db: LibsqlDatabase;
  /** Writes running with this connection: it is not closed under them. */
  users: number;
}

/** SQLite's codes for a file that is not, or no longer, a database. */
const NOT_A_DATABASE = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

export class IndexFiles implements TextStore {
  readonly perRepository = true;
  /** Open write connections, least recently used first. */
  private readonly open = new Map<string, Entry>();

  private readonly reads: ReadPool;

  constructor(
    readonly dir: string,
    private readonly maxOpen = OPEN_FILES,
  ) {
    this.reads = new ReadPool({ threads: READ_THREADS, perFile: READ_THREADS_PER_REPO, openPerThread: OPEN_PER_THREAD, cacheKib: CACHE_KIB });
  }

  /** Read threads running now (started by the first search). */
  get readThreads(): number {
    return this.reads.size;
  }

  /** The file of `repo`'s rows. */
  fileOf(repo: string): string {
    // Ids are checked long before (lib/framework/http/params.ts); this keeps any other caller inside `dir`.
    if (!isSafeRepoId(repo)) throw new Error(`invalid repo id: ${JSON.stringify(repo)}`);
    return join(this.dir, `${repo}.db`);
  }

  async write<T>(repo: string, fn: (db: Database) => Promise<T>): Promise<T> {
    const e = await this.lease(repo);
    try {
      return await fn(e.db);
    } finally {
      e.users--;
      this.trim();
    }
  }

  read<T>(repo: string, fn: (reader: TextReader) => Promise<T>): Promise<T> {
    const file = this.fileOf(repo);
    return fn({ all: (sql, args) => this.reads.all(file, sql, args) });
  }

  async drop(repo: string): Promise<void> {
    const file = this.fileOf(repo);
    const e = this.open.get(repo);
    if (e) {
      this.open.delete(repo);
      await e.db.close();
    }
    await this.reads.forget(file);
    await removeFiles(file);
  }

  async close(): Promise<void> {
    const open = [...this.open.values()];
    this.open.clear();
    await Promise.all(open.map((e) => e.db.close()));
    await this.reads.close();
  }

  /** The open connection of `repo` (opened, or made, when it has none), counted as in use. */
  private async lease(repo: string): Promise<Entry> {
    let e = this.open.get(repo);
    if (e) {
      this.open.delete(repo);
    } else {
      e = { db: await this.openFile(repo), users: 0 };
      // Another lease may have opened it meanwhile (openFile awaits when it has to remove a broken file).
      const raced = this.open.get(repo);
      if (raced) {
        await e.db.close();
        e = raced;
        this.open.delete(repo);
      }
    }
    this.open.set(repo, e);
    e.users++;
    return e;
  }

  private async openFile(repo: string): Promise<LibsqlDatabase> {
    const file = this.fileOf(repo);
    try {
      return await probe(openDerivedFile(file, CACHE_KIB));
    } catch (e) {
      if (!NOT_A_DATABASE.has(String((e as { code?: unknown }).code))) throw e;
      // Not a database (a torn or foreign file): its rows are made again from git.
      await this.reads.forget(file);
      await removeFiles(file);
      return probe(openDerivedFile(file, CACHE_KIB));
    }
  }

  /** Closes idle connections past `maxOpen`, least recently used first. */
  private trim(): void {
    for (const [repo, e] of this.open) {
      if (this.open.size <= this.maxOpen) return;
      if (e.users > 0) continue;
      this.open.delete(repo);
      // Nothing is queued on an idle connection; a failure to close loses nothing (the rows are committed).
      e.db.close().catch(() => undefined);
    }
  }
}

/** The connection once its schema could be read (a file that is not a database fails here). */
async function probe(db: LibsqlDatabase): Promise<LibsqlDatabase> {
  try {
    await db.all('SELECT count(*) AS n FROM sqlite_master');
    return db;
  } catch (e) {
    db.connection.close();
    throw e;
  }
}

/** A database file and its write-ahead log and shared-memory index. */
async function removeFiles(file: string): Promise<void> {
  await Promise.all(['', '-wal', '-shm'].map((s) => rm(`${file}${s}`, { force: true })));
}

/**
 * Drops the full-text rows an older server kept in its one database (`search_fts` and the rows of
 * `search_docs` there) once they live in files of their own: they would only take room. The files are
 * filled by each repository's next catch-up. Nothing to do on later starts.
 */
export async function dropSharedRows(db: Database): Promise<void> {
  const fts = await db.get("SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'search_fts'");
  const docs = await db.get('SELECT 1 AS x FROM search_docs LIMIT 1');
  if (!fts && !docs) return;
  await db.batch([...(fts ? [{ sql: 'DROP TABLE search_fts' }] : []), { sql: 'DELETE FROM search_docs' }]);
}
