import type { DoStorageLike } from './do-sql.ts';
import type { StoreFs } from '../../git/fs.ts';
import { concatBytes } from '../../util/bytes.ts';

/**
 * The git store's filesystem inside a Durable Object: files and directories as rows of the object's own
 * SQLite storage, so that one object holds one bare repository — the same `objects/xx/…` loose objects,
 * `refs/heads/main` and `config` as on disk, read and written by the git store (lib/git/refs.ts,
 * lib/git/repo-dirs.ts).
 *
 * Why not @isomorphic-git/lightning-fs: it keeps its files in IndexedDB, which workerd does not have, and
 * its superblock (every path of the filesystem) in memory, which grows with the repository inside an
 * object capped at 128 MB. Rows cost nothing until read.
 *
 * Durability and atomicity come from the object's storage: every write of one request is committed with
 * it, and `writeDurable` runs in one `transactionSync`, so a crash leaves all of a push's objects or none.
 * Values are split into chunks below the storage's per-value limit.
 */

const CHUNK = 512 * 1024;

export const DO_FS_SCHEMA = [
  `CREATE TABLE IF NOT EXISTS fs_files (path TEXT PRIMARY KEY, dir TEXT NOT NULL, size INTEGER NOT NULL,
     mtime INTEGER NOT NULL, data BLOB, chunks INTEGER NOT NULL DEFAULT 0)`,
  'CREATE INDEX IF NOT EXISTS fs_files_dir ON fs_files (dir)',
  'CREATE TABLE IF NOT EXISTS fs_chunks (path TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (path, n))',
  'CREATE TABLE IF NOT EXISTS fs_dirs (path TEXT PRIMARY KEY, parent TEXT NOT NULL)',
  'CREATE INDEX IF NOT EXISTS fs_dirs_parent ON fs_dirs (parent)',
];

class FsError extends Error {
  constructor(
    readonly code: string,
    path: string,
  ) {
    super(`${code}: ${path}`);
  }
}

const parentOf = (p: string) => {
  const i = p.lastIndexOf('/');
  return i <= 0 ? '/' : p.slice(0, i);
};
const nameOf = (p: string) => p.slice(p.lastIndexOf('/') + 1);
const norm = (p: string) => (p.length > 1 ? p.replace(/\/+$/, '') : p);
/**
 * Bounds of every path below `dir`, for `path >= ? AND path < ?`: the paths that start with `dir/` are
 * exactly those in [`dir/`, `dir0`) in SQLite's binary text order ('0' follows '/'). Unlike LIKE, which
 * ignores ASCII case in SQLite (`/a/Dir/x` LIKE `/a/dir/%`), this tells `Dir` from `dir`, and the
 * primary key's index serves it.
 */
const below = (dir: string): [string, string] => {
  const prefix = dir === '/' ? '/' : `${dir}/`;
  return [prefix, `${prefix.slice(0, -1)}0`];
};
const BELOW = 'path >= ? AND path < ?';

function bytes(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (Array.isArray(v)) return Uint8Array.from(v as number[]);
  return new Uint8Array(0);
}

type Sql = DoStorageLike['sql'];

export class DoFs {
  private readonly sql: Sql;

  constructor(private readonly storage: DoStorageLike) {
    this.sql = storage.sql;
    for (const ddl of DO_FS_SCHEMA) this.sql.exec(ddl);
  }

  private rows<T>(q: string, ...args: unknown[]): T[] {
    return this.sql.exec(q, ...args).toArray() as T[];
  }

  isDir(path: string): boolean {
    return path === '/' || this.rows('SELECT 1 AS x FROM fs_dirs WHERE path = ?', norm(path)).length > 0;
  }

  file(path: string): { size: number; mtime: number } | null {
    const r = this.rows<{ size: number; mtime: number }>('SELECT size, mtime FROM fs_files WHERE path = ?', norm(path))[0];
    return r ? { size: Number(r.size), mtime: Number(r.mtime) } : null;
  }

  read(path: string): Uint8Array | null {
    const r = this.rows<{ data: unknown; chunks: number }>('SELECT data, chunks FROM fs_files WHERE path = ?', norm(path))[0];
    if (!r) return null;
    if (Number(r.chunks) === 0) return bytes(r.data);
    return concatBytes(this.rows<{ data: unknown }>('SELECT data FROM fs_chunks WHERE path = ? ORDER BY n', norm(path)).map((c) => bytes(c.data)));
  }

  mkdirp(path: string): void {
    for (let p = norm(path); p !== '/' && p !== ''; p = parentOf(p)) {
      if (this.isDir(p)) return;
      if (this.file(p)) throw new FsError('ENOTDIR', p);
      this.sql.exec('INSERT OR IGNORE INTO fs_dirs (path, parent) VALUES (?, ?)', p, parentOf(p));
    }
  }

  write(path: string, data: Uint8Array): void {
    const p = norm(path);
    if (this.isDir(p)) throw new FsError('EISDIR', p);
    this.mkdirp(parentOf(p));
    this.sql.exec('DELETE FROM fs_chunks WHERE path = ?', p);
    const buf = data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer;
    if (data.byteLength <= CHUNK) {
      this.sql.exec(
        `INSERT INTO fs_files (path, dir, size, mtime, data, chunks) VALUES (?, ?, ?, ?, ?, 0)
         ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime, data = excluded.data, chunks = 0`,
        p, parentOf(p), data.byteLength, Date.now(), buf,
      );
      return;
    }
    const n = Math.ceil(data.byteLength / CHUNK);
    for (let i = 0; i < n; i++) {
      this.sql.exec('INSERT INTO fs_chunks (path, n, data) VALUES (?, ?, ?)', p, i, buf.slice(i * CHUNK, (i + 1) * CHUNK));
    }
    this.sql.exec(
      `INSERT INTO fs_files (path, dir, size, mtime, data, chunks) VALUES (?, ?, ?, ?, NULL, ?)
       ON CONFLICT (path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime, data = NULL, chunks = excluded.chunks`,
      p, parentOf(p), data.byteLength, Date.now(), n,
    );
  }

  unlink(path: string): boolean {
    const p = norm(path);
    this.sql.exec('DELETE FROM fs_chunks WHERE path = ?', p);
    const n = this.rows<{ n: number }>('SELECT COUNT(*) AS n FROM fs_files WHERE path = ?', p)[0]!.n;
    this.sql.exec('DELETE FROM fs_files WHERE path = ?', p);
    return Number(n) > 0;
  }

  readdir(path: string): string[] {
    const p = norm(path);
    const files = this.rows<{ path: string }>('SELECT path FROM fs_files WHERE dir = ?', p).map((r) => nameOf(r.path));
    const dirs = this.rows<{ path: string }>('SELECT path FROM fs_dirs WHERE parent = ?', p).map((r) => nameOf(r.path));
    return [...files, ...dirs].sort();
  }

  removeTree(path: string): void {
    const p = norm(path);
    this.storage.transactionSync(() => {
      this.unlink(p);
      this.sql.exec(`DELETE FROM fs_chunks WHERE ${BELOW}`, ...below(p));
      this.sql.exec(`DELETE FROM fs_files WHERE ${BELOW}`, ...below(p));
      this.sql.exec(`DELETE FROM fs_dirs WHERE path = ? OR (${BELOW})`, p, ...below(p));
    });
  }

  /** Moves a file (replacing a file at `to`) or a whole directory (`to` must not exist). */
  rename(from: string, to: string): void {
    const f = norm(from);
    const t = norm(to);
    this.storage.transactionSync(() => {
      // Onto itself: nothing to do (as rename(2)); the steps below would unlink the file first.
      if (f === t && (this.file(f) || this.isDir(f))) return;
      if (this.file(f)) {
        if (this.isDir(t)) throw new FsError('EISDIR', t);
        this.mkdirp(parentOf(t));
        this.unlink(t);
        this.sql.exec('UPDATE fs_chunks SET path = ? WHERE path = ?', t, f);
        this.sql.exec('UPDATE fs_files SET path = ?, dir = ?, mtime = ? WHERE path = ?', t, parentOf(t), Date.now(), f);
        return;
      }
      if (!this.isDir(f)) throw new FsError('ENOENT', f);
      if (this.isDir(t) || this.file(t)) throw new FsError('ENOTEMPTY', t);
      this.mkdirp(parentOf(t));
      const move = (p: string) => t + p.slice(f.length);
      for (const d of this.rows<{ path: string }>(`SELECT path FROM fs_dirs WHERE path = ? OR (${BELOW})`, f, ...below(f))) {
        this.sql.exec('UPDATE fs_dirs SET path = ?, parent = ? WHERE path = ?', move(d.path), parentOf(move(d.path)), d.path);
      }
      for (const r of this.rows<{ path: string }>(`SELECT path FROM fs_files WHERE ${BELOW}`, ...below(f))) {
        this.sql.exec('UPDATE fs_chunks SET path = ? WHERE path = ?', move(r.path), r.path);
        this.sql.exec('UPDATE fs_files SET path = ?, dir = ? WHERE path = ?', move(r.path), parentOf(move(r.path)), r.path);
      }
    });
  }

  /** The StoreFs view (lib/git/fs.ts). */
  storeFs(): StoreFs {
    return {
      readFile: async (path) => this.read(path),
      readdir: async (path) => this.readdir(path),
      exists: async (path) => this.file(path) !== null || this.isDir(path),
      mkdirp: async (path) => this.mkdirp(path),
      writeDurable: async (files) => {
        this.storage.transactionSync(() => {
          for (const f of files) this.write(f.path, f.data);
        });
      },
      createExclusive: async (path, data) =>
        this.storage.transactionSync(() => {
          if (this.file(path) || this.isDir(path)) return false;
          this.write(path, data);
          return true;
        }),
      renameDurable: async (from, to) => this.rename(from, to),
      unlink: async (path) => {
        this.unlink(path);
      },
      removeTree: async (path) => this.removeTree(path),
      mtimeMs: async (path) => this.file(path)?.mtime ?? null,
    };
  }
}
