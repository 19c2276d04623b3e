/**
 * A Durable Object's SQLite storage for Node tests: the `DoStorageLike` part of `ctx.storage`
 * (lib/runtime/workers/do-sql.ts) — `sql.exec(query, ...bindings)` and `transactionSync(fn)` — on the synchronous
 * `libsql` package (SQLite, better-sqlite3's API), in memory or on a file. Lets lib/runtime/workers/store-fs.ts and
 * lib/runtime/workers/do-sql.ts run their contract suites (test/storage-contract.test.ts) without workerd.
 *
 * What it mirrors of workerd's SQL API (the parts the service depends on; test/storage-contract.test.ts runs
 * the same probes on this and on a Durable Object in workerd and requires the same answers):
 * - bindings: ArrayBuffer and ArrayBufferView are stored as BLOB, strings as TEXT, numbers bound as REAL
 *   (an INTEGER column's affinity stores whole ones as integers), null and undefined as NULL; a boolean
 *   is bound as the TEXT 'true' / 'false' (workerd coerces it so — hence lib/runtime/workers/do-sql.ts binds 1/0
 *   itself); a bigint is a TypeError, as in workerd;
 * - a bound string or BLOB above workerd's SQLITE_MAX_LENGTH (2,200,000 bytes) is refused with
 *   `string or blob too big: SQLITE_TOOBIG` — why lib/runtime/workers/store-fs.ts splits files into chunks;
 * - foreign keys are enforced (workerd's `PRAGMA foreign_keys` is 1);
 * - BLOB columns come back as ArrayBuffer, integers and reals as numbers, NULL as null;
 * - `exec` of a statement without rows gives a cursor whose `toArray()` is `[]`;
 * - `rowsWritten` counts the rows the statement inserted, updated or deleted;
 * - `transactionSync(fn)` commits when `fn` returns and rolls everything of it back when it throws (the
 *   error is rethrown); it nests (savepoints), as workerd's does;
 * - SQL transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, RELEASE, END) through `exec` is refused,
 *   as workerd refuses it (only `transactionSync`/`transaction` may open one).
 *
 * Known differences from the real thing:
 * - workerd runs every statement of a multi-statement query string; the libsql package would silently run
 *   only the first, so the fake refuses such strings instead (nothing in the service sends one);
 * - `rowsWritten` here is SQLite's change count (total_changes); workerd's also counts the index rows
 *   written (one INSERT into a table with a UNIQUE column: 2), which is why lib/runtime/workers/do-sql.ts reads
 *   `changes()` instead;
 * - the cursor is materialised at `exec` (workerd steps it lazily as it is read; `rowsRead`, `columnNames`,
 *   `one()`, `raw()` and iteration are not provided);
 * - objects other than bytes as bindings are refused here (workerd converts what it can);
 * - the length limit is checked on bound values only: a value made inside SQL (`zeroblob(3e6)`) or a row
 *   whose columns add up past it passes here and fails in workerd; no per-object storage cap;
 * - no implicit transaction around the writes of one event or request, no output gate, no PRAGMA allow-list, no `_cf_` table protection; nothing is asynchronous
 *   (`storage.get/put/list`, alarms and `transaction()` are absent);
 * - a `transactionSync` callback that returns a Promise is refused (and rolled back) here; workerd would
 *   commit at the Promise's return, before the asynchronous part ran;
 * - errors are the libsql package's SqliteError (with `code`), not workerd's `Error` with the message
 *   ending in `: SQLITE_…`.
 */
import Database from 'libsql';
import type { DoStorageLike } from '../../lib/runtime/workers/do-sql.ts';

type LibsqlDb = InstanceType<typeof Database>;

export interface FakeDoStorage extends DoStorageLike {
  /** The underlying database, for assertions. */
  readonly db: LibsqlDb;
  close(): void;
}

/** workerd's SQLITE_MAX_LENGTH: the longest string or BLOB, in bytes (measured against workerd). */
export const DO_MAX_VALUE_BYTES = 2_200_000;

function tooBig(bytes: number): void {
  if (bytes > DO_MAX_VALUE_BYTES) throw new Error('string or blob too big: SQLITE_TOOBIG');
}

function bindable(v: unknown, i: number): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    if (v.length > DO_MAX_VALUE_BYTES / 3) tooBig(Buffer.byteLength(v));
    return v;
  }
  if (typeof v === 'boolean') return String(v);
  if (v instanceof ArrayBuffer) {
    tooBig(v.byteLength);
    return Buffer.from(v);
  }
  if (ArrayBuffer.isView(v)) {
    tooBig(v.byteLength);
    return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  }
  if (typeof v === 'bigint') throw new TypeError('Cannot convert a BigInt value to a number');
  throw new TypeError(`fake DO storage: binding ${i + 1} is ${typeof v === 'object' ? (v.constructor?.name ?? 'an object') : typeof v}`);
}

function fromSqlite(row: Record<string, unknown>): Record<string, unknown> {
  for (const [k, v] of Object.entries(row)) {
    // libsql gives ArrayBuffer already; a Buffer (better-sqlite3's habit) would be turned into one.
    if (v instanceof Uint8Array) row[k] = v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
    else if (typeof v === 'bigint') row[k] = Number(v);
  }
  return row;
}

/** Everything but string literals, quoted identifiers and comments, to find statement boundaries. */
function codeOnly(sql: string): string {
  return sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|--[^\n]*|\/\*[\s\S]*?\*\//g, ' ');
}

const TX_CONTROL = /^\s*(begin|commit|end|rollback|savepoint|release)\b/i;

/** A fake `ctx.storage` on a fresh SQLite database: `':memory:'` (the default) or a file path. */
export function fakeDoStorage(file = ':memory:'): FakeDoStorage {
  const db = new Database(file);
  db.exec('PRAGMA foreign_keys = ON');
  let savepoints = 0;
  const totalChanges = db.prepare('SELECT total_changes() AS n');
  const changedSoFar = () => Number((totalChanges.all()[0] as { n: number }).n);

  return {
    db,
    sql: {
      exec(query: string, ...bindings: unknown[]) {
        const code = codeOnly(query);
        if (TX_CONTROL.test(code)) {
          throw new Error('To execute a transaction, please use the state.storage.transaction() or state.storage.transactionSync() APIs instead of the SQL BEGIN TRANSACTION or SAVEPOINT statements. (fake DO storage)');
        }
        if (/;\s*\S/.test(code)) throw new Error('fake DO storage: one statement per exec (workerd would run them all)');
        const args = bindings.map(bindable);
        const stmt = db.prepare(query);
        const before = changedSoFar();
        let rows: Record<string, unknown>[];
        if (stmt.reader) rows = (stmt.all(...args) as Record<string, unknown>[]).map(fromSqlite);
        else {
          stmt.run(...args);
          rows = [];
        }
        const rowsWritten = changedSoFar() - before;
        return { toArray: () => rows, rowsWritten };
      },
    },
    transactionSync<T>(fn: () => T): T {
      const name = `fake_do_tx_${++savepoints}`;
      db.exec(`SAVEPOINT ${name}`);
      try {
        const out = fn();
        if (out instanceof Promise) throw new TypeError('transactionSync: the callback must be synchronous');
        db.exec(`RELEASE ${name}`);
        return out;
      } catch (e) {
        db.exec(`ROLLBACK TO ${name}`);
        db.exec(`RELEASE ${name}`);
        throw e;
      }
    },
    close() {
      db.close();
    },
  };
}
