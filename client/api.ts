/**
 * The typed HTTP client every command uses: API.md spoken exactly, bodies checked against the zod schemas
 * the server itself uses (schema/wire). Every request carries `Authorization: Bearer <token>` and
 * `X-Service-Client: kr-cli`; an error answer `{"error": ...}` becomes an {@link ApiError} whose message is
 * the server's own (401 `invalid token` excepted: it says what to do, `token expired or revoked; run kr
 * login`).
 *
 * Every request has a time limit (default {@link DEFAULT_TIMEOUT_MS}, `kr --timeout <seconds>`) covering
 * the whole exchange, answer body included; a server that does not answer in time is reported as such:
 * `the server at <url> did not answer within 30 s`.
 */
import type { z } from 'zod';
import type { LimitsResponse } from '../schema/wire/limits.ts';
import type { PushRequest } from '../schema/wire/sync.ts';
import type { ImportResponse } from '../schema/wire/repos.ts';
import { CliError } from './errors.ts';
import { clean } from './output.ts';
import { DEFAULT_TIMEOUT_MS } from './options.ts';
import { nodeFetch } from './transport.ts';

/** The fixed client name of SPEC.md rule 7 ("the command-line client sends a fixed literal"). */
export const CLIENT_NAME = 'kr-cli';

/** Every request's time limit unless `--timeout` says otherwise (client/options.ts). */
export { DEFAULT_TIMEOUT_MS };
/** The least time an import is given: the server reads and checks the whole bundle before it answers. */
export const IMPORT_TIMEOUT_MS = 600_000;

/** What an older server (no `GET /v1/limits`, 404) is assumed to accept: API.md's defaults. */
export const DEFAULT_LIMITS: LimitsResponse = { max_body_bytes: 8_388_608, max_files_per_push: 10_000, max_page_path_bytes: 512 };

export const TOKEN_INVALID_MESSAGE = 'token expired or revoked; run kr login';

/** The repository id in the URL of a repository's route (`…/v1/repos/<id>/…`), or null. */
function repoInUrl(url: string): string | null {
  let path: string;
  try {
    path = new URL(url).pathname;
  } catch {
    return null;
  }
  const m = /\/v1\/repos\/([^/]+)\//.exec(path);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

/** `--json` error codes of HTTP statuses without a code of their own. */
const STATUS_CODES: Record<number, string> = {
  400: 'bad_request',
  401: 'unauthorized',
  402: 'payment_required',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  410: 'gone',
  413: 'too_large',
  429: 'rate_limited',
  503: 'unavailable',
};

/** A request the server refused (or that never reached it): exit 1, message = the server's `error`. */
export class ApiError extends CliError {
  constructor(
    message: string,
    /** HTTP status; 0 when the server could not be reached or answered nonsense. */
    readonly status: number,
    readonly body: Record<string, unknown> | null = null,
    code?: string,
  ) {
    super(message, 1, code ?? (status === 0 ? 'bad_answer' : (STATUS_CODES[status] ?? (status >= 500 ? 'server_error' : `http_${status}`))));
    this.name = 'ApiError';
  }

  /** The server's own `error` text (before any rewording here), or null. */
  get serverError(): string | null {
    return typeof this.body?.error === 'string' ? this.body.error : null;
  }

  /**
   * The refusal's code in the server's answer (`not_a_member`, `no_parent`: docs/api.md "Refusal codes"), or
   * null (not reached, not JSON, or a server older than codes). What the client matches on, never the text.
   */
  get refusal(): string | null {
    return typeof this.body?.code === 'string' && this.body.code !== '' ? this.body.code : null;
  }
}

export interface ApiOptions {
  baseUrl: string;
  /** null: send no Authorization header (sign-in probe). */
  token: string | null;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

/** `30000` → `30`, `1500` → `1.5`: a time limit as people write it. */
export const seconds = (ms: number): string => String(Number((ms / 1000).toFixed(3)));

type Query = Record<string, string | number | boolean | undefined>;

interface CallOptions {
  query?: Query;
  body?: unknown;
  /** Non-2xx statuses whose body is data, not an error (push answers 409 with a PushResponse). */
  dataStatuses?: number[];
}

/** `a/b c.md` → `a/b%20c.md`: each segment encoded, slashes kept. */
export const encodePath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');
const seg = encodeURIComponent;

/**
 * The wire schemas the answers are checked against, each module loaded when a call first needs it: building
 * zod schemas is a good part of a command's start-up, and a command uses a few of them.
 */
const wire = {
  auth: () => import('../schema/wire/auth.ts'),
  repos: () => import('../schema/wire/repos.ts'),
  sync: () => import('../schema/wire/sync.ts'),
  diff: () => import('../schema/wire/diff.ts'),
  members: () => import('../schema/wire/members.ts'),
  links: () => import('../schema/wire/links.ts'),
  limits: () => import('../schema/wire/limits.ts'),
  search: () => import('../schema/wire/search.ts'),
  webhooks: () => import('../schema/wire/webhooks.ts'),
};

export class Api {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  private readonly token: string | null;
  private readonly doFetch: typeof fetch;
  /** For a streamed request body (an import), which client/transport.ts does not send: the global fetch. */
  private readonly streamFetch: typeof fetch;

  constructor(opts: ApiOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    // node:http rather than the global fetch, which takes longer to load than kr takes to start (client/transport.ts);
    // its answers have every member of a Response that this client reads.
    this.doFetch = opts.fetch ?? (nodeFetch as unknown as typeof fetch);
    this.streamFetch = opts.fetch ?? ((input, init) => fetch(input, init));
  }

  /** The refusal of a request that ran out of time. */
  timedOut(): ApiError {
    return new ApiError(`the server at ${this.baseUrl} did not answer within ${seconds(this.timeoutMs)} s`, 0, null, 'timeout');
  }

  /** A failure while talking to the server: out of time, or the connection's own error. */
  private failure(e: unknown): ApiError {
    if (e instanceof ApiError) return e;
    const name = (e as Error | null)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return this.timedOut();
    const cause = (e as { cause?: { code?: string; message?: string; name?: string } }).cause;
    if (cause?.name === 'TimeoutError') return this.timedOut();
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    return new ApiError(`cannot reach the server at ${this.baseUrl}: ${clean(String(why))}`, 0, null, 'unreachable');
  }

  /**
   * One raw request; network failures and the time limit become an ApiError with status 0. The answer's
   * body must be read with {@link Api.text} or {@link Api.bytes}, which stay under the same time limit.
   */
  async send(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      'X-Service-Client': CLIENT_NAME,
      Accept: 'application/json',
    };
    if (this.token !== null) headers.Authorization = `Bearer ${this.token}`;
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    try {
      return await this.doFetch(url, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs), redirect: 'manual' });
    } catch (e) {
      throw this.failure(e);
    }
  }

  /** The body of an answer as text, under the request's time limit. */
  async text(res: Response): Promise<string> {
    try {
      return await res.text();
    } catch (e) {
      throw this.failure(e);
    }
  }

  /** The body of an answer as bytes, under the request's time limit. */
  async bytes(res: Response): Promise<Uint8Array> {
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw this.failure(e);
    }
  }

  /** The error of a non-2xx answer (see {@link Api.errorOf}), its body read under the time limit. */
  async refusal(res: Response): Promise<ApiError> {
    let text = '';
    try {
      text = await this.text(res);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'timeout') return e;
    }
    return Api.errorFrom(res, text);
  }

  /** The error of a non-2xx answer: the server's `error` text (quota answers add the limit and upgrade link). */
  static async errorOf(res: Response): Promise<ApiError> {
    return Api.errorFrom(res, await res.text().catch(() => ''));
  }

  /** {@link Api.errorOf} once the body is read. */
  static errorFrom(res: Response, text: string): ApiError {
    let body: Record<string, unknown> | null = null;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // not JSON: a proxy's page, say
    }
    // Whatever the server says is shown on one line, without control characters (client/output.ts).
    let message = clean(typeof body?.error === 'string' && body.error !== '' ? body.error : `HTTP ${res.status} ${res.statusText}`.trim());
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location');
      return new ApiError(`the server answered with a redirect${to ? ` to ${clean(to)}` : ''}; point kr at the final URL (kr login --server <url>)`, res.status, null, 'redirect');
    }
    if (res.status === 402 && body) {
      const extra = [
        typeof body.limit === 'number' ? `limit ${body.limit}` : '',
        typeof body.upgrade_url === 'string' ? `upgrade at ${clean(body.upgrade_url)}` : '',
      ].filter(Boolean);
      if (extra.length) message += ` (${extra.join('; ')})`;
    }
    if (res.status === 429) {
      const after = res.headers.get('retry-after');
      if (after) message += ` (retry in ${clean(after)} s)`;
    }
    if (res.status === 401 && body?.code === 'invalid_token') return new ApiError(TOKEN_INVALID_MESSAGE, 401, body, 'token_invalid');
    if (res.status === 403 && body?.code === 'not_a_member') {
      // The server says the same to someone who never joined and to a member an owner removed; only
      // `kr join` with an old key is told about the removal. Both need a new invite key.
      const repo = repoInUrl(res.url);
      if (repo !== null) message += `: you are not, or no longer, a member of ${clean(repo)} (an owner may have removed you); ask an owner for a new invite key, then run "kr join <key>"`;
    }
    // kr's own code (`kr --json`) names the status, but for a 402, whose quota code says which cap; the
    // server's code for every refusal is `refusal`, what kr matches on.
    return new ApiError(message, res.status, body, res.status === 402 && typeof body?.code === 'string' && body.code !== '' ? body.code : undefined);
  }

  /** A JSON call checked against `schema`; 204 → undefined. The raw JSON is returned (extra keys kept). */
  async call<S extends z.ZodType>(method: string, path: string, schema: S, opts: CallOptions = {}): Promise<{ status: number; data: z.infer<S> }> {
    const res = await this.send(method, path, opts);
    if (!res.ok && !(opts.dataStatuses ?? []).includes(res.status)) throw await this.refusal(res);
    const text = await this.text(res);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiError(`unexpected answer from ${method} ${path}: not JSON (HTTP ${res.status})`, 0);
    }
    const checked = schema.safeParse(json);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new ApiError(
        `unexpected answer from ${method} ${path}: ${issue ? `${clean(issue.path.join('.')) || '(body)'}: ${clean(issue.message)}` : 'invalid body'}`,
        0,
      );
    }
    return { status: res.status, data: json as z.infer<S> };
  }

  /** A call whose success has no body (204). */
  async noContent(method: string, path: string, body?: unknown): Promise<void> {
    const res = await this.send(method, path, { body });
    if (!res.ok) throw await this.refusal(res);
    await res.body?.cancel();
  }

  // --- service ----------------------------------------------------------------------------------------
  /** `GET /v1/limits`; an older server without the route (404) gets API.md's defaults. */
  async limits(): Promise<LimitsResponse> {
    const res = await this.send('GET', '/v1/limits');
    if (res.status === 404) {
      await res.body?.cancel();
      return { ...DEFAULT_LIMITS };
    }
    if (!res.ok) throw await this.refusal(res);
    const text = await this.text(res);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
    const checked = (await wire.limits()).LimitsResponse.safeParse(json);
    if (!checked.success) throw new ApiError('unexpected answer from GET /v1/limits', 0);
    return checked.data;
  }

  /**
   * Whether the server has an identity provider: `POST /v1/auth/idp` with an empty body answers 503
   * `identity provider not configured` before anything else when it has none. null: could not tell.
   */
  async hasIdentityProvider(): Promise<boolean | null> {
    let res: Response;
    try {
      res = await this.send('POST', '/v1/auth/idp', { body: {} });
    } catch {
      return null;
    }
    const err = res.ok ? null : await this.refusal(res);
    if (res.ok) await res.body?.cancel();
    if (err?.status === 503 && err.refusal === 'idp_not_configured') return false;
    if (err && (err.status === 400 || err.status === 401)) return true;
    return null;
  }

  // --- identity ---------------------------------------------------------------------------------------
  me = async () => (await this.call('GET', '/v1/me', (await wire.auth()).MeResponse)).data;
  createPat = async (body: { label?: string; expires_in_days?: number }) =>
    (await this.call('POST', '/v1/pats', (await wire.auth()).CreatePatResponse, { body })).data;
  listPats = async () => (await this.call('GET', '/v1/pats', (await wire.auth()).PatsResponse)).data;
  revokePat = (id: string) => this.noContent('DELETE', `/v1/pats/${seg(id)}`);

  // --- repositories -----------------------------------------------------------------------------------
  repos = async () => (await this.call('GET', '/v1/repos', (await wire.repos()).ReposResponse)).data;
  createRepo = async (id: string) => (await this.call('POST', '/v1/repos', (await wire.repos()).CreateRepoResponse, { body: { id } })).data;
  /** `DELETE /v1/repos/:id?confirm=<id>`: the repository and everything about it, for good. */
  async deleteRepo(repo: string): Promise<void> {
    const res = await this.send('DELETE', `/v1/repos/${seg(repo)}`, { query: { confirm: repo } });
    if (!res.ok) throw await this.refusal(res);
    await res.body?.cancel();
  }
  /** `GET /v1/repos/:id/export`: the repository as a git bundle. */
  async exportRepo(repo: string): Promise<Uint8Array> {
    const res = await this.send('GET', `/v1/repos/${seg(repo)}/export`);
    if (!res.ok) throw await this.refusal(res);
    return this.bytes(res);
  }

  // --- pages and sync ---------------------------------------------------------------------------------
  /**
   * `POST /v1/repos/:id/import`: a git bundle becomes the repository's history (a new repository, or the
   * caller's empty one). `body` is streamed as it is read (`bytes`: its length, sent as Content-Length); the
   * server checks the whole bundle before it answers, so the time limit is IMPORT_TIMEOUT_MS at least.
   */
  async importRepo(repo: string, body: ReadableStream<Uint8Array>, opts: { bytes?: number; branch?: string } = {}): Promise<ImportResponse> {
    const url = new URL(`${this.baseUrl}/v1/repos/${seg(repo)}/import`);
    if (opts.branch !== undefined) url.searchParams.set('branch', opts.branch);
    const headers: Record<string, string> = {
      'X-Service-Client': CLIENT_NAME,
      Accept: 'application/json',
      'Content-Type': 'application/x-git-bundle',
    };
    if (this.token !== null) headers.Authorization = `Bearer ${this.token}`;
    if (opts.bytes !== undefined) headers['Content-Length'] = String(opts.bytes);
    let res: Response;
    try {
      res = await this.streamFetch(url, {
        method: 'POST',
        headers,
        body,
        signal: AbortSignal.timeout(Math.max(this.timeoutMs, IMPORT_TIMEOUT_MS)),
        redirect: 'manual',
        duplex: 'half',
      } as RequestInit);
    } catch (e) {
      throw this.failure(e);
    }
    if (!res.ok) throw await this.refusal(res);
    const checked = (await wire.repos()).ImportResponse.safeParse(JSON.parse(await this.text(res)));
    if (!checked.success) throw new ApiError(`unexpected answer from POST /v1/repos/${repo}/import`, 0);
    return checked.data;
  }

  pages = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/pages`, (await wire.sync()).PagesResponse)).data;

  /**
   * The page at head (or as it was at commit `at`) and its `X-Page-SHA`, or null when the server has no such
   * page (404 `page not found`).
   */
  async page(repo: string, path: string, at?: string): Promise<{ content: string; sha: string } | null> {
    const res = await this.send('GET', `/v1/repos/${seg(repo)}/pages/${encodePath(path)}`, at === undefined ? {} : { query: { at } });
    if (res.status === 404) {
      const err = await this.refusal(res);
      if (err.refusal === 'page_not_found') return null;
      throw err;
    }
    if (!res.ok) throw await this.refusal(res);
    const sha = res.headers.get('x-page-sha');
    if (!sha) throw new ApiError(`unexpected answer from GET pages/${clean(path)}: no X-Page-SHA header`, 0);
    const bytes = await this.bytes(res);
    return { content: new TextDecoder().decode(bytes), sha };
  }

  /** 200 or 409 (per-file conflicts), both with a PushResponse. */
  push = async (repo: string, body: PushRequest) =>
    this.call('POST', `/v1/repos/${seg(repo)}/sync/push`, (await wire.sync()).PushResponse, { body, dataStatuses: [409] });
  pull = async (repo: string, since?: string) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/sync/pull`, (await wire.sync()).PullResponse, { query: { since: since || undefined } })).data;

  // --- history, diff ----------------------------------------------------------------------------------
  timeline = async (repo: string, limit?: number) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/timeline`, (await wire.sync()).TimelineResponse, { query: { limit } })).data;
  history = async (repo: string, path: string, limit?: number) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/history/${encodePath(path)}`, (await wire.sync()).HistoryResponse, { query: { limit } })).data;
  diff = async (repo: string, path: string, q: { from?: string; to?: string; blame?: boolean }) =>
    (
      await this.call('GET', `/v1/repos/${seg(repo)}/diff/${encodePath(path)}`, (await wire.diff()).SectionDiff, {
        query: { from: q.from, to: q.to, blame: q.blame ? 'true' : undefined },
      })
    ).data;
  evolution = async (repo: string, path: string, q: { limit?: number; blame?: boolean }) =>
    (
      await this.call('GET', `/v1/repos/${seg(repo)}/evolution/${encodePath(path)}`, (await wire.diff()).EvolutionResponse, {
        query: { limit: q.limit, blame: q.blame ? 'true' : undefined },
      })
    ).data;
  activity = async (repo: string, q: { limit?: number; offset?: number; actions?: string }) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/activity`, (await wire.repos()).ActivityResponse, { query: q })).data;

  /** `GET /v1/repos/:id/links/<path>`: what the page links to, and what links to it. */
  links = async (repo: string, path: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/links/${encodePath(path)}`, (await wire.links()).LinksResponse)).data;

  /** `GET /v1/repos/:id/search` with `repo`, else `GET /v1/search` (every repository of the caller). */
  search = async (p: { q: string; repo?: string; type?: string; tag?: string; limit?: number; offset?: number }) =>
    (
      await this.call('GET', p.repo === undefined ? '/v1/search' : `/v1/repos/${seg(p.repo)}/search`, (await wire.search()).SearchResponse, {
        query: { q: p.q, type: p.type, tag: p.tag, limit: p.limit, offset: p.offset },
      })
    ).data;

  // --- live events ------------------------------------------------------------------------------------
  /**
   * `GET /v1/repos/:id/events` (Server-Sent Events), resuming after `lastEventId` when not null: the answer once
   * its head has arrived, within the request time limit; its body is the stream, read for as long as it lasts
   * (until `signal` aborts). Network failures and the time limit become an ApiError with status 0. What reads
   * the stream is lib/events/sse-client.ts; a refused answer's error is {@link Api.eventsRefusal}.
   */
  async openEvents(repo: string, lastEventId: string | null, signal: AbortSignal): Promise<Response> {
    const headers: Record<string, string> = { 'X-Service-Client': CLIENT_NAME, Accept: 'text/event-stream' };
    if (this.token !== null) headers.Authorization = `Bearer ${this.token}`;
    if (lastEventId !== null) headers['Last-Event-ID'] = lastEventId;
    const conn = new AbortController();
    const forward = () => conn.abort(signal.reason);
    if (signal.aborted) forward();
    else signal.addEventListener('abort', forward, { once: true });
    // Only the head is under the time limit: the stream stays open as long as it is read.
    const timer = setTimeout(() => conn.abort(new DOMException('the time limit passed', 'TimeoutError')), this.timeoutMs);
    try {
      return await this.doFetch(`${this.baseUrl}/v1/repos/${seg(repo)}/events`, { headers, signal: conn.signal, redirect: 'manual' });
    } catch (e) {
      throw this.failure(e);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Why an event stream was not opened: the server's refusal (429 explained), or an answer that is no stream. */
  async eventsRefusal(res: Response, repo: string): Promise<ApiError> {
    if (res.ok) {
      await res.body?.cancel().catch(() => undefined);
      const type = clean(res.headers.get('content-type') ?? 'none');
      return new ApiError(`the server at ${this.baseUrl} answered the event stream of ${clean(repo)} with something else (Content-Type ${type}); it may be older than live events`, 0, null, 'bad_answer');
    }
    const err = await this.refusal(res);
    if (err.status === 429 && err.refusal === 'too_many_streams') {
      return new ApiError(
        `too many event streams: the server keeps at most 10 open per person and repository, and yours on ${clean(repo)} are all taken ` +
          '(other "kr watch" or agent sessions); stop one and try again',
        429,
        err.body,
        'too_many_streams',
      );
    }
    return err;
  }

  // --- members and invite keys ------------------------------------------------------------------------
  members = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/members`, (await wire.members()).MembersResponse)).data;
  removeMember = (repo: string, userId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/members/${seg(userId)}`);
  setRole = async (repo: string, userId: string, role: 'owner' | 'member') =>
    (await this.call('POST', `/v1/repos/${seg(repo)}/members/${seg(userId)}/role`, (await wire.members()).SetRoleResponse, { body: { role } })).data;
  createInvite = async (repo: string, label?: string) =>
    (await this.call('POST', `/v1/repos/${seg(repo)}/invite-keys`, (await wire.members()).MintInviteResponse, { body: label === undefined ? {} : { label } })).data;
  listInvites = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/invite-keys`, (await wire.members()).InviteKeysResponse)).data;
  revokeInvite = (repo: string, keyId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/invite-keys/${seg(keyId)}`);
  join = async (key: string) => (await this.call('POST', '/v1/repos/join', (await wire.members()).JoinResponse, { body: { key } })).data;

  // --- webhooks (docs/api.md "Webhooks") -------------------------------------------------------------------
  createWebhook = async (repo: string, body: { url: string; events?: string[] }) =>
    (await this.call('POST', `/v1/repos/${seg(repo)}/webhooks`, (await wire.webhooks()).CreateWebhookResponse, { body })).data;
  webhooks = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/webhooks`, (await wire.webhooks()).WebhooksResponse)).data;
  removeWebhook = (repo: string, id: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/webhooks/${seg(id)}`);
  /** `POST …/test` (202, no body): the server delivers a `ping` event to the webhook. */
  async testWebhook(repo: string, id: string): Promise<void> {
    const res = await this.send('POST', `/v1/repos/${seg(repo)}/webhooks/${seg(id)}/test`);
    if (!res.ok) throw await this.refusal(res);
    await res.body?.cancel();
  }
  deliveries = async (repo: string, id: string, limit?: number) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/webhooks/${seg(id)}/deliveries`, (await wire.webhooks()).DeliveriesResponse, { query: { limit } })).data;
}
