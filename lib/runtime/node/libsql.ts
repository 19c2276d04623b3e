import type LibsqlConnection from 'libsql';
import { LruCache } from '../../git/lru.ts';
import type { SqlArgs, SqlDatabase, SqlRow, SqlValue, Stmt } from '../../db/sql.ts';

/** The database as every module sees it, whatever backs it (lib/db/sql.ts). */
export type { SqlDatabase as Database, Stmt } from '../../db/sql.ts';

type Connection = InstanceType<typeof LibsqlConnection>;
type Statement = ReturnType<Connection['prepare']>;

/** A prepared statement kept for reuse: whether it returns rows, and its column names when it does. */
interface Prepared {
  stmt: Statement;
  columns: string[] | null;
}

/** Prepared statements kept per connection (most SQL is a fixed string; IN-lists vary with their length). */
const STATEMENT_CACHE = 512;

const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The Node build's database: one libSQL connection to a local file, its statements prepared once and
 * reused. Every call runs synchronously on this thread (as libSQL's own client does underneath), so reads
 * and writes never interleave within a call; every write still goes through a single queue, so a batch
 * never meets another caller's, and multi-statement writes run as one atomic transaction.
 *
 * Values as @libsql/client gives them (the rest of the service and the contract tests rely on it):
 * integers as numbers (RangeError past 2^53), blobs as an ArrayBuffer of exactly their bytes, booleans
 * bound as 0/1, `undefined` refused.
 */
export class LibsqlDatabase implements SqlDatabase {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Writes queued and not finished (the running one included), and when the running one started. */
  private queued = 0;
  private runningSince: number | null = null;
  /** Kept across calls, or (`keepStatements: false`) for one call or batch only. */
  private readonly statements: LruCache<Prepared>;
  private readonly keepStatements: boolean;

  /**
   * `flush`, when given, makes every commit durable before its write resolves (see openDatabaseFile: the
   * write-ahead log flushed off this thread); without it a commit is as durable as the connection's
   * `synchronous` setting makes it. `keepStatements: false` for a connection that will be closed while the
   * process runs on (a repository's search file, lib/runtime/node/search-files.ts): the driver cannot finalize a
   * statement, and a closed connection keeps its file handles and page cache until every statement
   * prepared on it has been garbage collected. Statements used for one call only die young and are
   * collected soon; cached ones would live on until a full collection, which a quiet heap may not make for
   * a long time (1,000 repositories' files stayed open that way).
   */
  constructor(
    readonly connection: Connection,
    private readonly flush?: () => Promise<void>,
    opts: { keepStatements?: boolean } = {},
  ) {
    this.keepStatements = opts.keepStatements ?? true;
    this.statements = new LruCache<Prepared>(STATEMENT_CACHE, () => 1);
  }

  async all<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T[]> {
    this.checkOpen();
    try {
      return this.execute(sql, args).rows as T[];
    } finally {
      this.forgetStatements();
    }
  }

  async get<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T | undefined> {
    const rows = await this.all<T>(sql, args);
    return rows[0];
  }

  /** One write statement, queued. Returns rows affected and the last insert rowid. */
  run(sql: string, args: SqlArgs = []): Promise<{ changes: number; lastId: bigint | undefined }> {
    return this.durable(
      this.enqueue(async () => {
        try {
          const r = this.execute(sql, args);
          return { changes: r.changes, lastId: r.lastId };
        } finally {
          this.forgetStatements();
        }
      }),
    );
  }

  /**
   * Several write statements as one transaction (BEGIN IMMEDIATE … COMMIT), queued. `durable: false`: not
   * waiting for the log's flush (SqlDatabase.batch).
   */
  batch(stmts: Stmt[], opts: { durable?: boolean } = {}): Promise<Array<{ changes: number; rows: SqlRow[] }>> {
    if (stmts.length === 0) return Promise.resolve([]);
    const write = this.enqueue(async () => {
      const c = this.connection;
      c.exec('BEGIN IMMEDIATE');
      try {
        const out = stmts.map((s) => {
          const r = this.execute(s.sql, s.args ?? []);
          return { changes: r.changes, rows: r.rows };
        });
        c.exec('COMMIT');
        return out;
      } catch (e) {
        // A statement that failed may have ended the transaction already (e.g. SQLITE_FULL).
        if (c.inTransaction) c.exec('ROLLBACK');
        throw e;
      } finally {
        this.forgetStatements();
      }
    });
    return opts.durable === false ? write : this.durable(write);
  }

  /** Runs SQL without arguments or results, outside the write queue (PRAGMAs at open, checkpoints in tests). */
  exec(sql: string): void {
    this.checkOpen();
    this.connection.exec(sql);
  }

  /** Waits for queued writes, then closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
    // The log's commits moved into the database file and the log emptied: the next open has nothing to
    // replay. (The connection's close would do it only once every prepared statement is finalized, which
    // the statement cache leaves to the garbage collector.) Busy (another process reading) is fine: the
    // log stays for later.
    try {
      this.connection.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    } catch {
      // left for the next checkpoint
    }
    try {
      // The page cache goes now, whenever the statements are collected.
      this.connection.exec('PRAGMA shrink_memory');
    } catch {
      // nothing to release
    }
    this.statements.clear();
    this.connection.close();
  }

  /** The write queue now, for diagnostics: writes waiting or running, and how long the running one has run. */
  writeQueue(): { queued: number; runningMs: number | null } {
    return {
      queued: this.queued,
      runningMs: this.runningSince === null ? null : performance.now() - this.runningSince,
    };
  }

  private checkOpen(): void {
    if (this.closed) throw new Error('the database is closed');
  }

  private prepared(sql: string): Prepared {
    let p = this.statements.get(sql);
    if (!p) {
      const stmt = this.connection.prepare(sql);
      stmt.safeIntegers(true);
      let columns: string[] | null = null;
      if (stmt.reader) {
        stmt.raw(true);
        columns = stmt.columns().map((c) => c.name);
      }
      p = { stmt, columns };
      this.statements.set(sql, p);
    }
    return p;
  }

  /** Drops the statements of the call that just ended, unless they are kept. */
  private forgetStatements(): void {
    if (!this.keepStatements) this.statements.clear();
  }

  private execute(sql: string, args: SqlArgs): { rows: SqlRow[]; changes: number; lastId: bigint | undefined } {
    const { stmt, columns } = this.prepared(sql);
    const bound = bindArgs(args);
    if (columns) return { rows: rowsOf(columns, stmt.all(bound) as unknown[][]), changes: 0, lastId: undefined };
    const info = stmt.run(bound);
    return { rows: [], changes: Number(info.changes), lastId: BigInt(info.lastInsertRowid) };
  }

  /**
   * `write`'s result once its commit is durable. The flush runs after the write left the queue: the next
   * write need not wait for this one's disk, and a flush covers every commit made before it started.
   */
  private async durable<T>(write: Promise<T>): Promise<T> {
    const out = await write;
    if (this.flush) await this.flush();
    return out;
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    const run = async () => {
      this.runningSince = performance.now();
      try {
        this.checkOpen();
        return await fn();
      } finally {
        this.runningSince = null;
        this.queued--;
      }
    };
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

/** Arguments as the driver binds them (see the class comment for what is refused). */
export function bindArgs(args: SqlArgs): unknown[] {
  return args.map(toSql);
}

/**
 * Raw rows (arrays of values, integers as bigints) as rows by column name, values as @libsql/client gives
 * them; a repeated column name keeps its first value, as @libsql/client's rows do.
 */
export function rowsOf(columns: readonly string[], raw: readonly unknown[][]): SqlRow[] {
  return raw.map((r) => {
    const row: SqlRow = {};
    for (let i = 0; i < columns.length; i++) {
      const name = columns[i]!;
      if (!Object.hasOwn(row, name)) row[name] = fromSql(r[i]);
    }
    return row;
  });
}

function toSql(v: SqlValue): unknown {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new RangeError('Only finite numbers (not Infinity or NaN) can be passed as arguments');
    return v;
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v instanceof ArrayBuffer) return Buffer.from(v);
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (v === undefined) throw new TypeError('undefined cannot be passed as argument to the database');
  return v;
}

function fromSql(v: unknown): unknown {
  if (typeof v === 'bigint') {
    if (v < MIN_SAFE || v > MAX_SAFE) throw new RangeError('Received integer which cannot be safely represented as a JavaScript number');
    return Number(v);
  }
  if (v instanceof Uint8Array) {
    return v.byteOffset === 0 && v.byteLength === v.buffer.byteLength ? v.buffer : v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
  }
  return v;
}
