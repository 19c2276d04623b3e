/**
 * A stand-in for Cloudflare's D1 HTTP API on loopback, over a real libSQL database file: the real API
 * cannot be reached from the test machine. It answers what the admin command's client sends
 * (admin/d1-http.ts) the way Cloudflare documents it:
 *
 *   POST /client/v4/accounts/{account_id}/d1/database/{database_id}/query
 *   Authorization: Bearer <token>
 *   {"sql", "params"} | {"batch": [{"sql", "params"}]}
 *   → {"success", "errors": [{"code", "message"}], "messages", "result": [{"results", "success", "meta"}]}
 *
 * A batch runs as one transaction, rolled back whole when a statement fails (as D1's batches); rows come
 * back as objects, bytes as arrays of numbers; `meta.changes` and `meta.last_row_id` as SQLite counts them.
 * A wrong token is 403 code 10000 `Authentication error`, another account or database 404, an SQL error 400
 * code 7500 with SQLite's message. Every request body is kept, for a test to look at.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'libsql';
import { LibsqlDatabase } from '../../lib/runtime/node/libsql.ts';

export interface D1ApiStandIn {
  /** `http://127.0.0.1:<port>/client/v4`, as CLOUDFLARE_API_BASE_URL. */
  baseUrl: string;
  accountId: string;
  databaseId: string;
  token: string;
  /** The database, for the test to read and write as the Worker would. */
  db: LibsqlDatabase;
  /** Every request body, in order. */
  bodies: unknown[];
  close(): Promise<void>;
}

type Param = string | number | null;

export async function startD1Api(file: string, opts: { accountId: string; databaseId: string; token: string }): Promise<D1ApiStandIn> {
  const conn = new Database(file);
  conn.exec('PRAGMA journal_mode = WAL');
  const bodies: unknown[] = [];
  const path = `/client/v4/accounts/${opts.accountId}/d1/database/${opts.databaseId}/query`;

  const run = (q: { sql: string; params?: Param[] }) => {
    const stmt = conn.prepare(q.sql);
    const params = q.params ?? [];
    if (stmt.reader) {
      const rows = (stmt.all(...params) as Array<Record<string, unknown>>).map((r) => {
        const out: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(r)) out[k] = v instanceof Uint8Array ? [...v] : v;
        return out;
      });
      return { results: rows, success: true, meta: { changes: 0, last_row_id: 0, rows_read: rows.length, rows_written: 0 } };
    }
    const info = stmt.run(...params);
    return { results: [], success: true, meta: { changes: info.changes, last_row_id: Number(info.lastInsertRowid), rows_read: 0, rows_written: info.changes } };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const reply = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      const fail = (status: number, code: number, message: string) => reply(status, { success: false, errors: [{ code, message }], messages: [], result: null });
      if (req.headers.authorization !== `Bearer ${opts.token}`) return fail(403, 10000, 'Authentication error');
      if (req.method !== 'POST' || req.url !== path) return fail(404, 7404, 'Could not route to the database');
      let body: { sql?: string; params?: Param[]; batch?: Array<{ sql: string; params?: Param[] }> };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return fail(400, 7400, 'The request is malformed');
      }
      bodies.push(body);
      const queries = body.batch ?? [{ sql: body.sql!, params: body.params }];
      try {
        conn.exec('BEGIN');
        const result = queries.map(run);
        conn.exec('COMMIT');
        reply(200, { success: true, errors: [], messages: [], result });
      } catch (e) {
        if (conn.inTransaction) conn.exec('ROLLBACK');
        fail(400, 7500, `${(e as Error).message}: SQLITE_ERROR`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/client/v4`,
    ...opts,
    db: new LibsqlDatabase(conn),
    bodies,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      conn.close();
    },
  };
}
