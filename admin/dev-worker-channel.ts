/**
 * The admin command's way into a running `npm run dev:worker` (its `--target worker-local`).
 *
 * Two workerd processes must not share the persisted files: workerd's SQLite has no busy timeout, and a
 * write that meets the other process's lock fails as an internal error of the Durable Object, so requests
 * of the running Worker fail with it. While dev:worker runs, the admin command therefore goes through it:
 * this loopback HTTP channel runs its SQL on the same D1 binding the Worker uses and asks a repository's
 * own object for its page count. It speaks the D1 HTTP API's `query` shape (admin/d1-http.ts is the
 * client for both), plus one route of its own:
 *
 *   POST /d1/query        {"sql", "params"} or {"batch": [{"sql", "params"}]} → Cloudflare's envelope
 *   POST /repos/pages     {"repo"} → {"page_count"}
 *   GET  /ping            → 204
 *
 * Every request needs `Authorization: Bearer <token>`, a random token written with the channel's address
 * to `$SERVICE_DATA_ROOT/workers/admin-channel.json` (mode 0600), so only who may read the data root (and
 * could open its files anyway) gets in. It listens on 127.0.0.1 only and goes away with dev:worker.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Miniflare } from 'miniflare';
import type { D1Like, D1StatementLike } from '../lib/runtime/workers/d1.ts';
import type { RepoNamespace } from '../lib/runtime/workers/remote-repos.ts';
import { isSafeRepoId } from '../lib/core/page/path.ts';
import { errorFromWire, toHttpError } from '../lib/core/errors.ts';

/** What the channel file holds. */
export interface AdminChannelInfo {
  pid: number;
  url: string;
  token: string;
}

export const ADMIN_CHANNEL_FILE = 'admin-channel.json';
/** The largest request body taken (an admin command's batches are a few kilobytes). */
const MAX_BODY_BYTES = 1024 * 1024;

/** The channel file of a dev:worker data directory, or null when there is none (or it is not one of ours). */
export async function readAdminChannel(workersDir: string): Promise<AdminChannelInfo | null> {
  const text = await readFile(join(workersDir, ADMIN_CHANNEL_FILE), 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const v = JSON.parse(text) as Partial<AdminChannelInfo>;
    if (typeof v.pid === 'number' && typeof v.url === 'string' && typeof v.token === 'string') return { pid: v.pid, url: v.url, token: v.token };
  } catch {
    // A torn or foreign file: as if there were none.
  }
  return null;
}

type Param = string | number | null;
type Query = { sql: string; params: Param[] };

class BadRequest extends Error {}

function query(v: unknown): Query {
  const q = v as { sql?: unknown; params?: unknown };
  if (typeof q?.sql !== 'string') throw new BadRequest('sql must be a string');
  const params = q.params ?? [];
  if (!Array.isArray(params) || !params.every((p) => p === null || typeof p === 'string' || (typeof p === 'number' && Number.isFinite(p)))) {
    throw new BadRequest('params must be strings, numbers or null');
  }
  return { sql: q.sql, params: params as Param[] };
}

/** A row as D1's JSON gives it: bytes as arrays of numbers. */
function jsonRow(r: unknown): unknown {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r as Record<string, unknown>)) {
    out[k] = v instanceof ArrayBuffer ? [...new Uint8Array(v)] : ArrayBuffer.isView(v) ? [...new Uint8Array(v.buffer, v.byteOffset, v.byteLength)] : v;
  }
  return out;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new BadRequest(`body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new BadRequest('body is not JSON');
  }
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const failure = (message: string) => ({ success: false, errors: [{ code: 7500, message }], messages: [], result: [] });

/**
 * Opens the channel for `mf` (the running dev:worker) and writes its file into `workersDir`. `close`
 * stops it and removes the file.
 */
export async function openAdminChannel(mf: Miniflare, workersDir: string): Promise<{ close(): Promise<void> }> {
  const token = randomBytes(32).toString('base64url');
  const expected = Buffer.from(`Bearer ${token}`);
  const d1 = (await mf.getD1Database('DB')) as unknown as D1Like;
  const repos = (await mf.getDurableObjectNamespace('REPO')) as unknown as RepoNamespace;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const given = Buffer.from(req.headers.authorization ?? '');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return send(res, 401, failure('invalid token'));
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/ping') return send(res, 204);
    if (req.method !== 'POST') return send(res, 404, failure('not found'));
    if (path === '/d1/query') {
      const body = (await readBody(req)) as { batch?: unknown };
      const batch = body !== null && typeof body === 'object' && 'batch' in body;
      if (batch && !Array.isArray(body.batch)) throw new BadRequest('batch must be an array');
      const queries = batch ? (body.batch as unknown[]).map(query) : [query(body)];
      const stmt = (q: Query): D1StatementLike => (q.params.length > 0 ? d1.prepare(q.sql).bind(...q.params) : d1.prepare(q.sql));
      let results: Array<{ results?: unknown[]; meta?: unknown }>;
      try {
        results = batch ? await d1.batch(queries.map(stmt)) : [await stmt(queries[0]!).all()];
      } catch (e) {
        return send(res, 400, failure(e instanceof Error ? e.message : String(e)));
      }
      return send(res, 200, {
        success: true,
        errors: [],
        messages: [],
        result: results.map((r) => ({ results: (r.results ?? []).map(jsonRow), success: true, meta: r.meta ?? {} })),
      });
    }
    if (path === '/repos/pages') {
      const { repo } = (await readBody(req)) as { repo?: unknown };
      if (typeof repo !== 'string' || !isSafeRepoId(repo)) throw new BadRequest('repo must be a repository id');
      // The repository's own object, the one the Worker uses: its pages at head as its index has them.
      const r = await repos.get(repos.idFromName(repo)).summary();
      if (!r.ok) return send(res, 400, failure(toHttpError(errorFromWire(r.error))?.message ?? r.error.message));
      return send(res, 200, { page_count: r.value.pageCount });
    }
    return send(res, 404, failure('not found'));
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (e instanceof BadRequest) send(res, 400, failure(e.message));
      else send(res, 500, failure(e instanceof Error ? e.message : String(e)));
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const file = join(workersDir, ADMIN_CHANNEL_FILE);
  const info: AdminChannelInfo = { pid: process.pid, url, token };
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify(info), { mode: 0o600 });
  await rename(tmp, file);

  return {
    async close() {
      // Another dev:worker on the same data root may have written its own since: that one stays.
      if ((await readAdminChannel(workersDir))?.token === token) await rm(file, { force: true });
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
