import type { Client, InStatement } from '@libsql/client';
import type { SqlArgs, SqlDatabase, SqlRow, Stmt } from './sql.ts';

/** The database as every module sees it, whatever backs it (lib/db/sql.ts). */
export type { SqlDatabase as Database, Stmt } from './sql.ts';

/**
 * The Node build's database: libSQL on a local file. Reads go straight to libSQL; every write goes through
 * a single queue, so overlapping transactions never meet ("database is locked" on a local file), and
 * multi-statement writes run as one atomic batch.
 */
export class LibsqlDatabase implements SqlDatabase {
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** Writes queued and not finished (the running one included), and when the running one started. */
  private queued = 0;
  private runningSince: number | null = null;

  constructor(readonly client: Client) {}

  async all<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T[]> {
    const rs = await this.client.execute({ sql, args });
    return rs.rows as unknown as T[];
  }

  async get<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T | undefined> {
    const rows = await this.all<T>(sql, args);
    return rows[0];
  }

  /** One write statement, queued. Returns rows affected and the last insert rowid. */
  run(sql: string, args: SqlArgs = []): Promise<{ changes: number; lastId: bigint | undefined }> {
    return this.enqueue(async () => {
      const rs = await this.client.execute({ sql, args });
      return { changes: rs.rowsAffected, lastId: rs.lastInsertRowid };
    });
  }

  /** Several write statements as one transaction, queued. */
  batch(stmts: Stmt[]): Promise<Array<{ changes: number; rows: SqlRow[] }>> {
    if (stmts.length === 0) return Promise.resolve([]);
    return this.enqueue(async () => {
      const rs = await this.client.batch(stmts as InStatement[], 'write');
      return rs.map((r) => ({ changes: r.rowsAffected, rows: r.rows as unknown as SqlRow[] }));
    });
  }

  /** Waits for queued writes, then closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
    this.client.close();
  }

  /** The write queue now, for diagnostics: writes waiting or running, and how long the running one has run. */
  writeQueue(): { queued: number; runningMs: number | null } {
    return {
      queued: this.queued,
      runningMs: this.runningSince === null ? null : performance.now() - this.runningSince,
    };
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    const run = async () => {
      this.runningSince = performance.now();
      try {
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
