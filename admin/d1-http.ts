/**
 * A D1 database over HTTP, as the part of the Worker binding lib/runtime/workers/d1.ts uses (`D1Like`), so that
 * D1Database and every lib/db module run over it unchanged: a deployed database through Cloudflare's HTTP
 * API, or a running `npm run dev:worker`'s through its admin channel (admin/dev-worker-channel.ts), which
 * speaks the same shape:
 *
 *   POST {base}/accounts/{account_id}/d1/database/{database_id}/query
 *   Authorization: Bearer <API token>
 *   {"sql": "…", "params": […]}               one statement
 *   {"batch": [{"sql": "…", "params": […]}]}  several, run as one batch (D1 runs a batch as one transaction)
 *
 * The answer is Cloudflare's envelope `{"success", "errors": [{"code", "message"}], "messages", "result"}`
 * with one `{"results": [row objects], "success", "meta": {"changes", "last_row_id", …}}` per statement,
 * as the binding gives them. Parameters go as JSON values (strings, numbers, null); D1 has no JSON form for
 * bytes, so a byte value is refused here (no admin command binds one).
 *
 * Transport and authentication failures are AdminErrors (a clear message, exit 1); an SQL error comes back
 * as an Error carrying D1's message, as the binding throws one.
 */
import type { D1Like, D1StatementLike } from '../lib/runtime/workers/d1.ts';
import { AdminError } from './context.ts';

export interface D1HttpConfig {
  /** The `query` URL. */
  endpoint: string;
  apiToken: string;
  /** Who answers, as messages name it: `the Cloudflare API at https://…`. */
  peer: string;
  /** Added to the message when the token is refused (401, 403), and when the database is not found (404). */
  refusedHint?: string;
  notFoundHint?: string;
  /** How long one request may take (default 30 s). */
  timeoutMs?: number;
}

/** The most of an answer read (a listing of every user of a large service is still far below it). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

interface QueryResult {
  results?: unknown[];
  success?: boolean;
  meta?: { changes?: number; last_row_id?: number };
}

interface Envelope {
  success?: boolean;
  errors?: Array<{ code?: number; message?: string }>;
  result?: QueryResult[];
}

type Param = string | number | null;

function param(v: unknown): Param {
  if (v === null || typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) throw new TypeError('byte values cannot be sent through the D1 HTTP API');
  throw new TypeError(`cannot send ${typeof v} through the D1 HTTP API`);
}

class HttpStatement implements D1StatementLike {
  constructor(
    private readonly client: D1Http,
    readonly sql: string,
    readonly params: Param[] = [],
  ) {}

  bind(...values: unknown[]): HttpStatement {
    return new HttpStatement(this.client, this.sql, values.map(param));
  }

  async all(): Promise<QueryResult> {
    const results = await this.client.post({ sql: this.sql, params: this.params });
    if (results.length !== 1) throw new Error(`D1 HTTP API: ${results.length} results for one statement`);
    return results[0]!;
  }
}

export class D1Http implements D1Like {
  constructor(private readonly config: D1HttpConfig) {}

  prepare(sql: string): HttpStatement {
    return new HttpStatement(this, sql);
  }

  async batch(stmts: D1StatementLike[]): Promise<QueryResult[]> {
    const batch = stmts.map((s) => {
      if (!(s instanceof HttpStatement)) throw new TypeError('not a statement of this D1 HTTP client');
      return { sql: s.sql, params: s.params };
    });
    const results = await this.post({ batch });
    if (results.length !== batch.length) throw new Error(`D1 HTTP API: ${results.length} results for ${batch.length} statements`);
    return results;
  }

  /** One request; the results of its statements, in order. */
  async post(body: unknown): Promise<QueryResult[]> {
    const { peer, timeoutMs = 30_000 } = this.config;
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.config.endpoint, {
        method: 'POST',
        headers: { authorization: `Bearer ${this.config.apiToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await readCapped(res, MAX_ANSWER_BYTES, peer);
    } catch (e) {
      if (e instanceof AdminError) throw e;
      const err = e as Error;
      if (err.name === 'TimeoutError') throw new AdminError(`${peer} did not answer within ${timeoutMs / 1000} s`);
      const cause = (err.cause as Error | undefined)?.message ?? err.message;
      throw new AdminError(`cannot reach ${peer}: ${cause}`);
    }
    let env: Envelope | null = null;
    try {
      env = JSON.parse(text) as Envelope;
    } catch {
      // Refused below.
    }
    if (typeof env !== 'object' || env === null) throw new AdminError(`${peer} answered HTTP ${res.status} with something other than a JSON object`);
    const errors = (env.errors ?? []).map((e) => `${e.message ?? 'error'}${e.code !== undefined ? ` (code ${e.code})` : ''}`).join('; ');
    const status = `HTTP ${res.status}${errors ? `: ${errors}` : ''}`;
    if (res.status === 401 || res.status === 403) {
      throw new AdminError(`${peer} refused the token (${status})${this.config.refusedHint ? `: ${this.config.refusedHint}` : ''}`);
    }
    if (res.status === 404) throw new AdminError(`${peer}: not found (${status})${this.config.notFoundHint ? `: ${this.config.notFoundHint}` : ''}`);
    if (!res.ok || env.success !== true || !Array.isArray(env.result)) {
      // D1's own message, as the binding's error carries it (an SQL error, a constraint).
      throw new Error(`D1 over HTTP (${status || 'no result'})`);
    }
    return env.result;
  }
}

/** The body as text, refused past `max` bytes. */
async function readCapped(res: Response, max: number, peer: string): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) throw new AdminError(`${peer} answered more than ${max} bytes`);
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > max) throw new AdminError(`${peer} answered more than ${max} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
