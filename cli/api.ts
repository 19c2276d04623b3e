/**
 * The typed HTTP client every command uses: API.md spoken exactly, bodies checked against the zod schemas
 * the server itself uses (schema/wire). Every request carries `Authorization: Bearer <token>` and
 * `X-Service-Client: kr-cli`; an error answer `{"error": ...}` becomes an {@link ApiError} whose message is
 * the server's own.
 */
import type { z } from 'zod';
import { MeResponse, CreatePatResponse, PatsResponse } from '../schema/wire/auth.ts';
import { ActivityResponse, CreateRepoResponse, ReposResponse } from '../schema/wire/repos.ts';
import {
  HistoryResponse,
  PagesResponse,
  PullResponse,
  PushResponse,
  TimelineResponse,
  type PushRequest,
} from '../schema/wire/sync.ts';
import { EvolutionResponse, SectionDiff } from '../schema/wire/diff.ts';
import { InviteKeysResponse, JoinResponse, MembersResponse, MintInviteResponse } from '../schema/wire/members.ts';
import { CliError } from './errors.ts';

/** The fixed client name of SPEC.md rule 7 ("the command-line client sends a fixed literal"). */
export const CLIENT_NAME = 'kr-cli';

/** A request the server refused (or that never reached it): exit 1, message = the server's `error`. */
export class ApiError extends CliError {
  constructor(
    message: string,
    /** HTTP status; 0 when the server could not be reached or answered nonsense. */
    readonly status: number,
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message, 1);
    this.name = 'ApiError';
  }
}

export interface ApiOptions {
  baseUrl: string;
  token: string;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

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

export class Api {
  readonly baseUrl: string;
  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly doFetch: typeof fetch;

  constructor(opts: ApiOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 120_000;
    this.doFetch = opts.fetch ?? fetch;
  }

  /** One raw request; network failures become an ApiError with status 0. */
  async send(method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<Response> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.token}`,
      'X-Service-Client': CLIENT_NAME,
      Accept: 'application/json',
    };
    let body: string | undefined;
    if (opts.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    try {
      return await this.doFetch(url, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs), redirect: 'manual' });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why =
        (e as Error).name === 'TimeoutError'
          ? `no answer within ${Math.round(this.timeoutMs / 1000)} s`
          : (cause?.code ?? cause?.message ?? (e as Error).message);
      throw new ApiError(`cannot reach the server at ${this.baseUrl}: ${why}`, 0);
    }
  }

  /** The error of a non-2xx answer: the server's `error` text (quota answers add the limit and upgrade link). */
  static async errorOf(res: Response): Promise<ApiError> {
    const text = await res.text().catch(() => '');
    let body: Record<string, unknown> | null = null;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch {
      // not JSON: a proxy's page, say
    }
    let message = typeof body?.error === 'string' && body.error !== '' ? body.error : `HTTP ${res.status} ${res.statusText}`.trim();
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location');
      return new ApiError(`the server answered with a redirect${to ? ` to ${to}` : ''}; point kr at the final URL (kr login --server <url>)`, res.status);
    }
    if (res.status === 402 && body) {
      const extra = [
        typeof body.limit === 'number' ? `limit ${body.limit}` : '',
        typeof body.upgrade_url === 'string' ? `upgrade at ${body.upgrade_url}` : '',
      ].filter(Boolean);
      if (extra.length) message += ` (${extra.join('; ')})`;
    }
    if (res.status === 429) {
      const after = res.headers.get('retry-after');
      if (after) message += ` (retry in ${after} s)`;
    }
    return new ApiError(message, res.status, body);
  }

  /** A JSON call checked against `schema`; 204 → undefined. The raw JSON is returned (extra keys kept). */
  async call<S extends z.ZodType>(method: string, path: string, schema: S, opts: CallOptions = {}): Promise<{ status: number; data: z.infer<S> }> {
    const res = await this.send(method, path, opts);
    if (!res.ok && !(opts.dataStatuses ?? []).includes(res.status)) throw await Api.errorOf(res);
    const text = await res.text();
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
        `unexpected answer from ${method} ${path}: ${issue ? `${issue.path.join('.') || '(body)'}: ${issue.message}` : 'invalid body'}`,
        0,
      );
    }
    return { status: res.status, data: json as z.infer<S> };
  }

  /** A call whose success has no body (204). */
  async noContent(method: string, path: string, body?: unknown): Promise<void> {
    const res = await this.send(method, path, { body });
    if (!res.ok) throw await Api.errorOf(res);
    await res.body?.cancel();
  }

  // --- identity ---------------------------------------------------------------------------------------
  me = async () => (await this.call('GET', '/v1/me', MeResponse)).data;
  createPat = async (body: { label?: string; expires_in_days?: number }) =>
    (await this.call('POST', '/v1/pats', CreatePatResponse, { body })).data;
  listPats = async () => (await this.call('GET', '/v1/pats', PatsResponse)).data;
  revokePat = (id: string) => this.noContent('DELETE', `/v1/pats/${seg(id)}`);

  // --- repositories -----------------------------------------------------------------------------------
  repos = async () => (await this.call('GET', '/v1/repos', ReposResponse)).data;
  createRepo = async (id: string) => (await this.call('POST', '/v1/repos', CreateRepoResponse, { body: { id } })).data;

  // --- pages and sync ---------------------------------------------------------------------------------
  pages = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/pages`, PagesResponse)).data;

  /** The page at head and its `X-Page-SHA`, or null when the server has no such page (404 `page not found`). */
  async page(repo: string, path: string): Promise<{ content: string; sha: string } | null> {
    const res = await this.send('GET', `/v1/repos/${seg(repo)}/pages/${encodePath(path)}`);
    if (res.status === 404) {
      const err = await Api.errorOf(res);
      if (err.message === 'page not found') return null;
      throw err;
    }
    if (!res.ok) throw await Api.errorOf(res);
    const sha = res.headers.get('x-page-sha');
    if (!sha) throw new ApiError(`unexpected answer from GET pages/${path}: no X-Page-SHA header`, 0);
    const bytes = new Uint8Array(await res.arrayBuffer());
    return { content: new TextDecoder().decode(bytes), sha };
  }

  /** 200 or 409 (per-file conflicts), both with a PushResponse. */
  push = async (repo: string, body: PushRequest) =>
    this.call('POST', `/v1/repos/${seg(repo)}/sync/push`, PushResponse, { body, dataStatuses: [409] });
  pull = async (repo: string, since?: string) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/sync/pull`, PullResponse, { query: { since: since || undefined } })).data;

  // --- history, diff ----------------------------------------------------------------------------------
  timeline = async (repo: string, limit?: number) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/timeline`, TimelineResponse, { query: { limit } })).data;
  history = async (repo: string, path: string, limit?: number) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/history/${encodePath(path)}`, HistoryResponse, { query: { limit } })).data;
  diff = async (repo: string, path: string, q: { from?: string; to?: string; blame?: boolean }) =>
    (
      await this.call('GET', `/v1/repos/${seg(repo)}/diff/${encodePath(path)}`, SectionDiff, {
        query: { from: q.from, to: q.to, blame: q.blame ? 'true' : undefined },
      })
    ).data;
  evolution = async (repo: string, path: string, q: { limit?: number; blame?: boolean }) =>
    (
      await this.call('GET', `/v1/repos/${seg(repo)}/evolution/${encodePath(path)}`, EvolutionResponse, {
        query: { limit: q.limit, blame: q.blame ? 'true' : undefined },
      })
    ).data;
  activity = async (repo: string, q: { limit?: number; offset?: number }) =>
    (await this.call('GET', `/v1/repos/${seg(repo)}/activity`, ActivityResponse, { query: q })).data;

  // --- members and invite keys ------------------------------------------------------------------------
  members = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/members`, MembersResponse)).data;
  removeMember = (repo: string, userId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/members/${seg(userId)}`);
  createInvite = async (repo: string, label?: string) =>
    (await this.call('POST', `/v1/repos/${seg(repo)}/invite-keys`, MintInviteResponse, { body: label === undefined ? {} : { label } })).data;
  listInvites = async (repo: string) => (await this.call('GET', `/v1/repos/${seg(repo)}/invite-keys`, InviteKeysResponse)).data;
  revokeInvite = (repo: string, keyId: string) => this.noContent('DELETE', `/v1/repos/${seg(repo)}/invite-keys/${seg(keyId)}`);
  join = async (key: string) => (await this.call('POST', '/v1/repos/join', JoinResponse, { body: { key } })).data;
}
