import { inflateSync } from 'node:zlib';
import type { DoStorageLike } from './do-sql.ts';
import type { ImportRuntime, ImportSpool } from '../../repo/import-store.ts';
import type { ObjectInflater } from '../../git/import.ts';

/**
 * The hosted build's import bodies (lib/repo/import-store.ts): the Worker hands the body to the repository's
 * Durable Object a chunk at a time (RepoObject.importAppend, one RPC each), and the object keeps each chunk as a
 * row of its own SQLite storage (`import_chunks`, at most ROW_BYTES a row: a row's value has a size limit),
 * read back by byte range. Discarding deletes the rows; they are never part of the repository.
 */

/** Bytes of one row at most. */
const ROW_BYTES = 1024 * 1024;

/** zlib through the runtime's node:zlib (nodejs_compat), which says how much of `data` a record's stream took. */
export const workersInflater: ObjectInflater = (data, maxBytes) => {
  const out = inflateSync(data, { info: true, maxOutputLength: Math.max(1, maxBytes) }) as unknown as {
    buffer: Uint8Array;
    engine: { bytesWritten: number };
  };
  return { data: new Uint8Array(out.buffer.buffer, out.buffer.byteOffset, out.buffer.byteLength), consumed: out.engine.bytesWritten };
};

export function doImportRuntime(storage: DoStorageLike): ImportRuntime {
  const sql = storage.sql;
  sql.exec('CREATE TABLE IF NOT EXISTS import_chunks (token TEXT NOT NULL, n INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (token, n))');
  // Rows of imports an earlier life of this object never finished (evicted, restarted) have no owner now.
  sql.exec('DELETE FROM import_chunks');
  return {
    inflater: workersInflater,
    async spool() {
      return new DoSpool(sql, crypto.randomUUID());
    },
  };
}

class DoSpool implements ImportSpool {
  size = 0;
  /** Where each row starts in the body. */
  readonly #starts: number[] = [];
  constructor(
    private readonly sql: DoStorageLike['sql'],
    private readonly token: string,
  ) {}

  async append(chunk: Uint8Array): Promise<void> {
    for (let at = 0; at < chunk.byteLength; at += ROW_BYTES) {
      const part = chunk.subarray(at, Math.min(chunk.byteLength, at + ROW_BYTES));
      this.sql.exec('INSERT INTO import_chunks (token, n, data) VALUES (?, ?, ?)', this.token, this.#starts.length, part);
      this.#starts.push(this.size);
      this.size += part.byteLength;
    }
  }

  async seal(): Promise<void> {}

  async read(position: number, length: number): Promise<Uint8Array> {
    const end = Math.min(this.size, position + length);
    if (end <= position) return new Uint8Array(0);
    const out = new Uint8Array(end - position);
    // The last row starting at or before `position`, then on while rows overlap.
    let lo = 0;
    let hi = this.#starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#starts[mid]! <= position) lo = mid;
      else hi = mid - 1;
    }
    for (let n = lo; n < this.#starts.length && this.#starts[n]! < end; n++) {
      const row = this.sql.exec('SELECT data FROM import_chunks WHERE token = ? AND n = ?', this.token, n).toArray()[0] as { data: ArrayBuffer };
      const data = new Uint8Array(row.data);
      const start = this.#starts[n]!;
      const from = Math.max(position, start);
      const to = Math.min(end, start + data.byteLength);
      out.set(data.subarray(from - start, to - start), from - position);
    }
    return out;
  }

  async discard(): Promise<void> {
    this.sql.exec('DELETE FROM import_chunks WHERE token = ?', this.token);
  }
}
