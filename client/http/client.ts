/**
 * The one typed client of the kr API (docs/api.md), shared by `kr`, `kr mcp` and the dashboard. It uses only
 * web-standard APIs (URL, Headers, AbortSignal, a fetch-like transport handed in), so it runs in Node and in
 * the browser alike; every answer's type is the server's own, inferred from the zod schemas of schema/wire
 * (type-only imports: no zod is loaded unless a {@link WireCheck} is given).
 *
 * What differs between the clients is handed in ({@link ClientOptions}) or overridden:
 *  - the transport: `kr` sends over node:http (client/transport.ts), which starts faster than Node's fetch;
 *    the dashboard and `kr mcp` use fetch;
 *  - whether answers are checked against the wire schemas (`kr` and `kr mcp` load them lazily; the dashboard
 *    trusts its server and keeps zod out of its bundle);
 *  - a time limit over the whole exchange, fixed headers, the redirect mode;
 *  - the wording of errors: {@link ApiClient.errorFrom} (a refusal) and {@link ApiClient.failure} (no answer)
 *    are the places a client says things its own way (client/api.ts: `run kr login`; the dashboard: why the
 *    browser could not reach the server).
 */
import type { z } from 'zod';
import type * as auth from '../../schema/wire/auth.ts';
import type * as diff from '../../schema/wire/diff.ts';
import type * as hosted from '../../schema/wire/hosted.ts';
import type * as limits from '../../schema/wire/limits.ts';
import type * as links from '../../schema/wire/links.ts';
import type * as members from '../../schema/wire/members.ts';
import type * as repos from '../../schema/wire/repos.ts';
import type * as search from '../../schema/wire/search.ts';
import type * as sync from '../../schema/wire/sync.ts';
import type * as webhooks from '../../schema/wire/webhooks.ts';
import { CliError } from '../errors.ts';
import { clean, encodePath, seconds } from './text.ts';

/** The wire schema modules whose answers the client reads, by the name a {@link WireCheck} loads them under. */
export interface WireModules {
  auth: typeof auth;
  diff: typeof diff;
  hosted: typeof hosted;
  limits: typeof limits;
  links: typeof links;
  members: typeof members;
  repos: typeof repos;
  search: typeof search;
  sync: typeof sync;
  webhooks: typeof webhooks;
}
export type WireModule = keyof WireModules;
/** The name of a zod schema exported by wire module `M`. */
export type WireName<M extends WireModule> = { [N in keyof WireModules[M]]: WireModules[M][N] extends z.ZodType ? N : never }[keyof WireModules[M]] & string;
/** The answer type of schema `N` of module `M`. */
export type Wire<M extends WireModule, N extends WireName<M>> = WireModules[M][N] extends z.ZodType ? z.infer<WireModules[M][N]> : never;

/**
 * Checks an answer against the schema `name` of wire module `module`: null when it fits, else what is wrong
 * (`path: message`). Async so that the schemas can be loaded when first needed.
 */
export type WireCheck = (module: WireModule, name: string, json: unknown) => Promise<string | null>;

/** The part of `fetch` the client uses; its answers need only the members of a Response read here. */
export type Fetch = (input: URL | string, init: RequestInit) => Promise<Response>;

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

/**
 * A request the server refused, or that never reached it (status 0). `message` is the server's `error`
 * (or the client's own sentence), `body` the error body when it was a JSON object, `code` the server's own
 * `code` when it sent one, else a name for the kind of failure (for `kr --json`); as a CliError it exits 1.
 */
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

  /** The server's own `error` text (before any rewording), or null. */
  get serverError(): string | null {
    return typeof this.body?.error === 'string' ? this.body.error : null;
  }

  /**
   * The refusal's code in the server's answer (`not_a_member`, `no_parent`: docs/api.md "Refusal codes"), or
   * null (not reached, not JSON, or a server older than codes). What clients match on, never the text.
   */
  get refusal(): string | null {
    return codeOf(this.body) ?? null;
  }

  /** A 402's upgrade page: an http(s) URL, or undefined (anything else is never made a link). */
  get upgradeUrl(): string | undefined {
    const u = this.body?.upgrade_url;
    return this.status === 402 && typeof u === 'string' && /^https?:\/\//i.test(u) ? u : undefined;
  }
}

/** The error body of an answer: its JSON when that is an object, else null (a proxy's page, say). */
export function errorBody(text: string): Record<string, unknown> | null {
  try {
    const parsed: unknown = JSON.parse(text);
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // not JSON
  }
  return null;
}

/** A zod check's first issue on one line (`path: message`), or null when the value fits. */
export function issueOf(checked: { success: true } | { success: false; error: { issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }> } }): string | null {
  if (checked.success) return null;
  const issue = checked.error.issues[0];
  return issue ? `${clean(issue.path.map(String).join('.')) || '(body)'}: ${clean(issue.message)}` : 'invalid body';
}

/** The server's `code` in an error body, when it has one. */
export const codeOf = (body: Record<string, unknown> | null): string | undefined =>
  typeof body?.code === 'string' && body.code !== '' ? body.code : undefined;

export interface ClientOptions {
  baseUrl: string;
  /** null: send no Authorization header (a sign-in). */
  token: string | null;
  /** The transport of every request. */
  fetch: Fetch;
  /** The transport of a request whose body is a stream (an import); `fetch` when omitted. */
  streamFetch?: Fetch;
  /** Headers sent with every request (a request's own headers win). */
  headers?: Record<string, string>;
  /** The time limit of every request, the answer's body included; none when omitted. */
  timeoutMs?: number;
  /** Checks answers against the wire schemas; unchecked when omitted. */
  check?: WireCheck;
  /** `manual`: redirects are errors ({@link ApiClient.errorFrom}), never followed. */
  redirect?: RequestRedirect;
  /**
   * How an event stream resumes: the `Last-Event-ID` header, or `?after=` (what a browser can send: CORS
   * lets no Last-Event-ID through). The server reads either.
   */
  resumeEvents?: 'header' | 'query';
}

type Query = Record<string, string | number | boolean | undefined>;

interface CallOptions {
  query?: Query;
  body?: unknown;
  /** Non-2xx statuses whose body is data, not an error (push answers 409 with a PushResponse). */
  dataStatuses?: number[];
}

/** A push's answer: 200, or 409 with the files that conflict (`ok` false); any other status throws. */
export interface PushAnswer {
  status: number;
  ok: boolean;
  data: Wire<'sync', 'PushResponse'>;
}

const seg = encodeURIComponent;

export class ApiClient {
  readonly baseUrl: string;
  /** The time limit of every request (undefined: none). */
  readonly timeoutMs: number | undefined;
  protected readonly token: string | null;
  private readonly opts: ClientOptions;

  constructor(opts: ClientOptions) {
    this.opts = opts;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs;
  }

  // --- the exchange ----------------------------------------------------------------------------------------
  /** The refusal of a request that ran out of time. */
  timedOut(): ApiError {
    return new ApiError(`the server at ${this.baseUrl} did not answer within ${seconds(this.timeoutMs ?? 0)} s`, 0, null, 'timeout');
  }

  /**
   * A failure while talking to the server (no answer, or its body cut): out of time, or the connection's own
   * error. `signal` is the caller's own, when it gave one. A client may say it its own way (the dashboard).
   */
  protected failure(e: unknown, _signal?: AbortSignal): ApiError | Promise<ApiError> {
    if (e instanceof ApiError) return e;
    const name = (e as Error | null)?.name;
    if (name === 'TimeoutError' || name === 'AbortError') return this.timedOut();
    const cause = (e as { cause?: { code?: string; message?: string; name?: string } }).cause;
    if (cause?.name === 'TimeoutError') return this.timedOut();
    const why = cause?.code ?? cause?.message ?? (e as Error).message;
    return new ApiError(`cannot reach the server at ${this.baseUrl}: ${clean(String(why))}`, 0, null, 'unreachable');
  }

  /**
   * The error of a non-2xx answer whose body is `text`: the server's `error`, else the status line. A client
   * may add to it (client/api.ts: what to do about it).
   */
  protected errorFrom(res: Response, text: string): ApiError {
    const body = errorBody(text);
    const message = typeof body?.error === 'string' && body.error !== '' ? body.error : `${res.status} ${res.statusText}`.trim();
    return new ApiError(message, res.status, body, codeOf(body));
  }

  private headers(own: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { ...this.opts.headers, ...own };
    if (this.token !== null) headers.Authorization = `Bearer ${this.token}`;
    return headers;
  }

  private url(path: string, query: Query = {}): URL {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    return url;
  }

  private signal(): AbortSignal | undefined {
    return this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs);
  }

  /**
   * One raw request; network failures and the time limit become an ApiError with status 0. The answer's
   * body must be read with {@link ApiClient.text} or {@link ApiClient.bytes}, which stay under the same limit.
   */
  async send(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<Response> {
    const own: Record<string, string> = {};
    let body: string | undefined;
    if (opts.body !== undefined) {
      own['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    const init: RequestInit = { method, headers: this.headers(own), signal: this.signal() };
    if (body !== undefined) init.body = body;
    if (this.opts.redirect !== undefined) init.redirect = this.opts.redirect;
    try {
      return await this.opts.fetch(this.url(path, opts.query), init);
    } catch (e) {
      throw await this.failure(e);
    }
  }

  /** The body of an answer as text, under the request's time limit. */
  async text(res: Response): Promise<string> {
    try {
      return await res.text();
    } catch (e) {
      throw await this.failure(e);
    }
  }

  /** The body of an answer as bytes, under the request's time limit. */
  async bytes(res: Response): Promise<Uint8Array<ArrayBuffer>> {
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      throw await this.failure(e);
    }
  }

  /** The error of a non-2xx answer, its body read under the time limit. */
  async refusal(res: Response): Promise<ApiError> {
    let text = '';
    try {
      text = await this.text(res);
    } catch (e) {
      if (e instanceof ApiError && e.code === 'timeout') return e;
    }
    return this.errorFrom(res, text);
  }

  /**
   * A JSON call whose answer has the wire schema `[module, name]` (checked when the client checks answers),
   * or the zod schema given (always checked). The raw JSON is returned (extra keys kept); 409 and the like
   * are data only when listed in `dataStatuses`.
   */
  call<M extends WireModule, N extends WireName<M>>(method: string, path: string, schema: readonly [M, N], opts?: CallOptions): Promise<{ status: number; data: Wire<M, N> }>;
  call<S extends z.ZodType>(method: string, path: string, schema: S, opts?: CallOptions): Promise<{ status: number; data: z.infer<S> }>;
  async call(method: string, path: string, schema: readonly [WireModule, string] | z.ZodType, opts: CallOptions = {}): Promise<{ status: number; data: unknown }> {
    const res = await this.send(method, path, opts);
    if (!res.ok && !(opts.dataStatuses ?? []).includes(res.status)) throw await this.refusal(res);
    const text = await this.text(res);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new ApiError(`unexpected answer from ${method} ${path}: not JSON (HTTP ${res.status})`, 0);
    }
    const issue = Array.isArray(schema) ? await this.check(schema[0], schema[1], json) : issueOf((schema as z.ZodType).safeParse(json));
    if (issue !== null) throw new ApiError(`unexpected answer from ${method} ${path}: ${issue}`, 0);
    return { status: res.status, data: json };
  }

  /** What is wrong with an answer of wire schema `module.name`, when the client checks answers; else null. */
  private check(module: WireModule, name: string, json: unknown): Promise<string | null> {
    return this.opts.check ? this.opts.check(module, name, json) : Promise.resolve(null);
  }

  /** A call whose success has no body (204, or 202 queued). */
  async noContent(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<void> {
    const res = await this.send(method, path, opts);
    if (!res.ok) throw await this.refusal(res);
    await res.body?.cancel().catch(() => undefined);
  }

  private get = async <M extends WireModule, N extends WireName<M>>(path: string, schema: readonly [M, N], query?: Query) =>
    (await this.call('GET', path, schema, { query })).data;
  private post = async <M extends WireModule, N extends WireName<M>>(path: string, schema: readonly [M, N], body: unknown) =>
    (await this.call('POST', path, schema, { body })).data;

  // --- service ------------------------------------------------------------------------------------------
  /** `GET /v1/limits`; null from a server older than the route (404). */
  async limits(): Promise<Wire<'limits', 'LimitsResponse'> | null> {
    const res = await this.send('GET', '/v1/limits');
    if (res.status === 404) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    if (!res.ok) throw await this.refusal(res);
    let json: unknown = null;
    try {
      json = JSON.parse(await this.text(res));
    } catch (e) {
      if (e instanceof ApiError) throw e;
    }
    if ((await this.check('limits', 'LimitsResponse', json)) !== null) throw new ApiError('unexpected answer from GET /v1/limits', 0);
    return json as Wire<'limits', 'LimitsResponse'>;
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
    if (res.ok) await res.body?.cancel().catch(() => undefined);
    if (err?.status === 503 && err.refusal === 'idp_not_configured') return false;
    if (err && (err.status === 400 || err.status === 401)) return true;
    return null;
  }

  // --- identity -----------------------------------------------------------------------------------------
  /** `POST /v1/auth/idp`: an identity provider's ID token becomes a session token. */
  signIn = (idToken: string) => this.post('/v1/auth/idp', ['auth', 'IdpSignInResponse'], { id_token: idToken });
  /** The caller, and what the server has for them (`server.hosted`, `admin`). */
  me = () => this.get('/v1/me', ['auth', 'MeResponse']);
  createPat = (body: { label?: string; expires_in_days?: number }) => this.post('/v1/pats', ['auth', 'CreatePatResponse'], body);
  listPats = () => this.get('/v1/pats', ['auth', 'PatsResponse']);
  revokePat = (id: string) => this.noContent('DELETE', `/v1/pats/${seg(id)}`);

  // --- repositories -------------------------------------------------------------------------------------
  repos = () => this.get('/v1/repos', ['repos', 'ReposResponse']);
  createRepo = (id: string) => this.post('/v1/repos', ['repos', 'CreateRepoResponse'], { id });
  /** `DELETE /v1/repos/:id?confirm=<id>`: the repository and everything about it, for good (`confirm` must be its id). */
  deleteRepo = (repo: string, confirm: string = repo) => this.noContent('DELETE', `/v1/repos/${seg(repo)}`, { query: { confirm } });
  /** `GET /v1/repos/:id/export`: the repository as a git bundle. */
  async exportRepo(repo: string): Promise<Uint8Array<ArrayBuffer>> {
    const res = await this.send('GET', `/v1/repos/${seg(repo)}/export`);
    if (!res.ok) throw await this.refusal(res);
    return this.bytes(res);
  }

  /**
   * `POST /v1/repos/:id/import`: a git bundle becomes the repository's history (a new repository, or the
   * caller's empty one). A stream `body` is sent as it is read (`bytes`: its length, sent as Content-Length);
   * the server checks the whole bundle before it answers, so the time limit is `minTimeoutMs` at least.
   */
  async importRepo(
    repo: string,
    body: ReadableStream<Uint8Array> | Blob,
    opts: { bytes?: number; branch?: string; minTimeoutMs?: number } = {},
  ): Promise<Wire<'repos', 'ImportResponse'>> {
    const own: Record<string, string> = { 'Content-Type': 'application/x-git-bundle' };
    if (opts.bytes !== undefined) own['Content-Length'] = String(opts.bytes);
    const init: RequestInit & { duplex?: 'half' } = { method: 'POST', headers: this.headers(own), body };
    if (this.timeoutMs !== undefined) init.signal = AbortSignal.timeout(Math.max(this.timeoutMs, opts.minTimeoutMs ?? 0));
    if (this.opts.redirect !== undefined) init.redirect = this.opts.redirect;
    const stream = !(typeof Blob !== 'undefined' && body instanceof Blob);
    if (stream) init.duplex = 'half';
    const path = `/v1/repos/${seg(repo)}/import`;
    let res: Response;
    try {
      res = await (stream ? (this.opts.streamFetch ?? this.opts.fetch) : this.opts.fetch)(this.url(path, { branch: opts.branch }), init);
    } catch (e) {
      throw await this.failure(e);
    }
    if (!res.ok) throw await this.refusal(res);
    let json: unknown;
    try {
      json = JSON.parse(await this.text(res));
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new ApiError(`unexpected answer from POST ${path}: not JSON (HTTP ${res.status})`, 0);
    }
    if ((await this.check('repos', 'ImportResponse', json)) !== null) throw new ApiError(`unexpected answer from POST /v1/repos/${repo}/import`, 0);
    return json as Wire<'repos', 'ImportResponse'>;
  }

  // --- pages and sync -----------------------------------------------------------------------------------
  pages = (repo: string) => this.get(`/v1/repos/${seg(repo)}/pages`, ['sync', 'PagesResponse']);

  /** The page at head (or as it was at commit `at`) and its `X-Page-SHA`; a missing page is a 404 ApiError. */
  async readPage(repo: string, path: string, at?: string): Promise<{ content: string; sha: string }> {
    const res = await this.send('GET', `/v1/repos/${seg(repo)}/pages/${encodePath(path)}`, at === undefined ? {} : { query: { at } });
    if (!res.ok) throw await this.refusal(res);
    const sha = res.headers.get('x-page-sha');
    if (!sha) {
      await res.body?.cancel().catch(() => undefined);
      throw new ApiError(`unexpected answer from GET pages/${clean(path)}: no X-Page-SHA header`, 0);
    }
    const bytes = await this.bytes(res);
    return { content: new TextDecoder().decode(bytes), sha };
  }

  /** {@link ApiClient.readPage}, or null when the server has no such page (404 `page not found`). */
  async page(repo: string, path: string, at?: string): Promise<{ content: string; sha: string } | null> {
    try {
      return await this.readPage(repo, path, at);
    } catch (e) {
      if (e instanceof ApiError && e.status === 404 && e.refusal === 'page_not_found') return null;
      throw e;
    }
  }

  /** One commit: 200, or 409 with the per-file conflicts (as data, `ok` false). */
  async push(repo: string, body: Wire<'sync', 'PushRequest'>): Promise<PushAnswer> {
    const { status, data } = await this.call('POST', `/v1/repos/${seg(repo)}/sync/push`, ['sync', 'PushResponse'], { body, dataStatuses: [409] });
    return { status, ok: status >= 200 && status < 300, data };
  }
  pull = (repo: string, since?: string) => this.get(`/v1/repos/${seg(repo)}/sync/pull`, ['sync', 'PullResponse'], { since: since || undefined });

  // --- history, diff, activity, links, search -----------------------------------------------------------
  timeline = (repo: string, limit?: number) => this.get(`/v1/repos/${seg(repo)}/timeline`, ['sync', 'TimelineResponse'], { limit });
  history = (repo: string, path: string, limit?: number) =>
    this.get(`/v1/repos/${seg(repo)}/history/${encodePath(path)}`, ['sync', 'HistoryResponse'], { limit });
  diff = (repo: string, path: string, q: { from?: string; to?: string; blame?: boolean } = {}) =>
    this.get(`/v1/repos/${seg(repo)}/diff/${encodePath(path)}`, ['diff', 'SectionDiff'], { from: q.from || undefined, to: q.to || undefined, blame: q.blame ? 'true' : undefined });
  evolution = (repo: string, path: string, q: { limit?: number; blame?: boolean } = {}) =>
    this.get(`/v1/repos/${seg(repo)}/evolution/${encodePath(path)}`, ['diff', 'EvolutionResponse'], { limit: q.limit, blame: q.blame ? 'true' : undefined });
  /** `actions`: only these kinds of event (`push,import`), push, pull and import when omitted (`member` only when asked for). */
  activity = (repo: string, q: { limit?: number; offset?: number; actions?: string | readonly string[] } = {}) =>
    this.get(`/v1/repos/${seg(repo)}/activity`, ['repos', 'ActivityResponse'], {
      limit: q.limit,
      offset: q.offset,
      actions: typeof q.actions === 'string' || q.actions === undefined ? q.actions : q.actions.join(','),
    });
  /** `GET /v1/repos/:id/links/<path>`: what the page links to, and what links to it. */
  links = (repo: string, path: string) => this.get(`/v1/repos/${seg(repo)}/links/${encodePath(path)}`, ['links', 'LinksResponse']);
  /** `GET /v1/repos/:id/search` with `repo`, else `GET /v1/search` (every repository of the caller). */
  search = (p: { q: string; repo?: string; type?: string; tag?: string; limit?: number; offset?: number }) =>
    this.get(p.repo === undefined ? '/v1/search' : `/v1/repos/${seg(p.repo)}/search`, ['search', 'SearchResponse'], {
      q: p.q,
      type: p.type,
      tag: p.tag,
      limit: p.limit,
      offset: p.offset,
    });

  // --- live events --------------------------------------------------------------------------------------
  /**
   * `GET /v1/repos/:id/events` (Server-Sent Events), resuming after `after` when given: the answer once its
   * head has arrived, within the request time limit; its body is the stream, read for as long as it lasts
   * (until `signal` aborts). The answer is returned whatever its status: {@link ApiClient.refusal} says why a
   * non-2xx one was refused.
   */
  async openEvents(repo: string, after: string | null | undefined, signal: AbortSignal): Promise<Response> {
    const own: Record<string, string> = { Accept: 'text/event-stream' };
    const query: Query = {};
    if (after !== null && after !== undefined && after !== '') {
      if (this.opts.resumeEvents === 'header') own['Last-Event-ID'] = after;
      else query.after = after;
    }
    const conn = new AbortController();
    const forward = () => conn.abort(signal.reason);
    if (signal.aborted) forward();
    else signal.addEventListener('abort', forward, { once: true });
    // Only the head is under the time limit: the stream stays open as long as it is read.
    const timer =
      this.timeoutMs === undefined ? undefined : setTimeout(() => conn.abort(new DOMException('the time limit passed', 'TimeoutError')), this.timeoutMs);
    const init: RequestInit = { headers: this.headers(own), signal: conn.signal, cache: 'no-store' };
    if (this.opts.redirect !== undefined) init.redirect = this.opts.redirect;
    try {
      return await this.opts.fetch(this.url(`/v1/repos/${seg(repo)}/events`, query), init);
    } catch (e) {
      throw await this.failure(e, signal);
    } finally {
      clearTimeout(timer);
    }
  }

  // --- members and invite keys --------------------------------------------------------------------------
  members = (repo: string) => this.get(`/v1/repos/${seg(repo)}/members`, ['members', 'MembersResponse']);
  removeMember = (repo: string, userId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/members/${seg(userId)}`);
  setRole = (repo: string, userId: string, role: 'owner' | 'member') =>
    this.post(`/v1/repos/${seg(repo)}/members/${seg(userId)}/role`, ['members', 'SetRoleResponse'], { role });
  createInvite = (repo: string, label?: string) =>
    this.post(`/v1/repos/${seg(repo)}/invite-keys`, ['members', 'MintInviteResponse'], label === undefined ? {} : { label });
  listInvites = (repo: string) => this.get(`/v1/repos/${seg(repo)}/invite-keys`, ['members', 'InviteKeysResponse']);
  revokeInvite = (repo: string, keyId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/invite-keys/${seg(keyId)}`);
  /** Redeems an invite key: the repository joined and the role held there. */
  join = (key: string) => this.post('/v1/repos/join', ['members', 'JoinResponse'], { key });

  // --- webhooks (docs/api.md "Webhooks") ----------------------------------------------------------------
  createWebhook = (repo: string, body: { url: string; events?: string[] }) => this.post(`/v1/repos/${seg(repo)}/webhooks`, ['webhooks', 'CreateWebhookResponse'], body);
  webhooks = (repo: string) => this.get(`/v1/repos/${seg(repo)}/webhooks`, ['webhooks', 'WebhooksResponse']);
  removeWebhook = (repo: string, id: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/webhooks/${seg(id)}`);
  /** `POST …/test` (202, no body): the server delivers a `ping` event to the webhook. */
  testWebhook = (repo: string, id: string) => this.noContent('POST', `/v1/repos/${seg(repo)}/webhooks/${seg(id)}/test`);
  deliveries = (repo: string, id: string, limit?: number) =>
    this.get(`/v1/repos/${seg(repo)}/webhooks/${seg(id)}/deliveries`, ['webhooks', 'DeliveriesResponse'], { limit });

  // --- the hosted build (docs/api.md "Hosted"): billing for users, the admin routes for admins ------------
  billing = () => this.get('/v1/billing', ['hosted', 'BillingResponse']);
  checkout = () => this.call('POST', '/v1/billing/checkout', ['hosted', 'CheckoutResponse']).then((r) => r.data);
  adminStats = () => this.get('/v1/admin/stats', ['hosted', 'AdminStats']);
  adminUsers = () => this.get('/v1/admin/users', ['hosted', 'AdminUsersResponse']);
  adminRepos = () => this.get('/v1/admin/repos', ['hosted', 'AdminReposResponse']);
  setSubscription = (userId: string, subscribed: boolean) => this.noContent('POST', `/v1/admin/users/${seg(userId)}/subscription`, { body: { subscribed } });
}
