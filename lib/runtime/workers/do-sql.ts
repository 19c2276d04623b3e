import { workersBindable, type SqlArgs, type SqlDatabase, type SqlRow, type Stmt } from '../../db/sql.ts';

/**
 * A Durable Object's own SQLite (`ctx.storage.sql`) as the service's database: the hosted build keeps each
 * repository's derived index there, beside its git objects. Calls are synchronous underneath; a batch runs
 * inside `transactionSync`, so it commits whole or not at all.
 */

/** The part of `DurableObjectStorage` used here. */
export interface DoStorageLike {
  sql: { exec(query: string, ...bindings: unknown[]): { toArray(): unknown[]; rowsWritten: number } };
  transactionSync<T>(fn: () => T): T;
}


function row(r: unknown): SqlRow {
  const out = r as SqlRow;
  for (const [k, v] of Object.entries(out)) if (v instanceof ArrayBuffer) out[k] = new Uint8Array(v);
  return out;
}

export class DoSqlDatabase implements SqlDatabase {
  constructor(private readonly storage: DoStorageLike) {}

  private exec(sql: string, args: SqlArgs = []): { rows: SqlRow[]; changes: number; lastId: bigint | undefined } {
    const isSelect = /^\s*select\b/i.test(sql);
    const before = isSelect ? 0 : this.totalChanges();
    const cursor = this.storage.sql.exec(sql, ...args.map(workersBindable));
    const rows = cursor.toArray().map(row);
    if (isSelect) return { rows, changes: 0, lastId: undefined };
    // rowsWritten also counts index rows; changes() is SQLite's own count of the statement's rows. But
    // changes() is left as it was by a statement that writes no rows (CREATE, DROP, …): only when the
    // running total moved did this statement change rows, as libSQL's and D1's counts say.
    const after = this.storage.sql.exec('SELECT changes() AS n, total_changes() AS t, last_insert_rowid() AS id').toArray()[0] as {
      n: number;
      t: number;
      id: number;
    };
    if (Number(after.t) === before) return { rows, changes: 0, lastId: undefined };
    return { rows, changes: Number(after.n), lastId: BigInt(after.id) };
  }

  private totalChanges(): number {
    return Number((this.storage.sql.exec('SELECT total_changes() AS t').toArray()[0] as { t: number }).t);
  }

  async all<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T[]> {
    return this.exec(sql, args).rows as T[];
  }

  async get<T = SqlRow>(sql: string, args: SqlArgs = []): Promise<T | undefined> {
    return this.exec(sql, args).rows[0] as T | undefined;
  }

  async run(sql: string, args: SqlArgs = []): Promise<{ changes: number; lastId: bigint | undefined }> {
    const { changes, lastId } = this.exec(sql, args);
    return { changes, lastId };
  }

  async batch(stmts: Stmt[]): Promise<Array<{ changes: number; rows: SqlRow[] }>> {
    return this.storage.transactionSync(() =>
      stmts.map((s) => {
        const { rows, changes } = this.exec(s.sql, s.args);
        return { changes, rows };
      }),
    );
  }

  async close(): Promise<void> {}
}
