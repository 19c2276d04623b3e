/** A small typed client of the kr API; every failure becomes an ApiError with the server's own message. */

import type { Commit } from '../../schema/wire/common.ts';
import type { SectionDiff, SectionEntry, FieldChange, EvolutionResponse } from '../../schema/wire/diff.ts';
import type { UserInfo, MeResponse, PatListItem, CreatePatResponse } from '../../schema/wire/auth.ts';
import type { RepoSummary, ActivityResponse } from '../../schema/wire/repos.ts';
import type { PagesResponse, PushResponse, Conflict } from '../../schema/wire/sync.ts';
import type { SearchResult, SearchResponse } from '../../schema/wire/search.ts';
import type { Member, InviteKey, MintInviteResponse } from '../../schema/wire/members.ts';
import type { BillingResponse, AdminStats, AdminUser, AdminRepo } from '../../schema/wire/hosted.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import type { Webhook, CreateWebhookResponse, Delivery } from '../../schema/wire/webhooks.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The error body as the server sent it (a 402 carries `upgrade_url`), when it was JSON. */
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The refusal's code (`last_owner`: docs/api.md "Refusal codes"), what the views match on; null if none. */
  get code(): string | null {
    return typeof this.body.code === 'string' && this.body.code !== '' ? this.body.code : null;
  }

  /** A 402's upgrade page: an http(s) URL, or undefined (anything else is never made a link). */
  get upgradeUrl(): string | undefined {
    const u = this.body.upgrade_url;
    return this.status === 402 && typeof u === 'string' && /^https?:\/\//i.test(u) ? u : undefined;
  }
}

/** A readable sentence for any failure; the API's own `error` text is kept as it is. */
export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 0) return e.message;
    const hint =
      e.status === 401
        ? ' Sign in again.'
        : e.status === 403
          ? ' You do not have access to this.'
          : e.status === 429
            ? ' Too many requests: wait a moment and try again.'
            : '';
    return `${capitalise(e.message)} (HTTP ${e.status}).${hint}`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// The wire types are the server's own (schema/wire, type-only imports: nothing of zod reaches the bundle).
export type { SectionDiff, FieldChange, EvolutionResponse, CreatePatResponse, RepoSummary, ActivityResponse, PushResponse, Conflict };
export type PatInfo = PatListItem;
export type { SearchResult, Member, InviteKey, MintInviteResponse, BillingResponse, AdminStats, AdminUser, AdminRepo, LinksResponse, Webhook, CreateWebhookResponse, Delivery };
export type User = UserInfo;
export type Me = MeResponse;
export type CommitInfo = Commit;
export type SectionChange = SectionEntry;
export type PageSummary = PagesResponse['pages'][number];
export type ActivityEvent = ActivityResponse['events'][number];


/** One file of a push (API.md "Pages and sync"). */
export interface PushFile {
  path: string;
  content?: string;
  parent_sha?: string;
  delete?: true;
}

/** A push's answer: 200 (`ok`) or 409 with its conflicts; any other status throws an ApiError. */
export interface PushAnswer {
  ok: boolean;
  body: PushResponse;
}

/** The views this server has for the signed-in user, as GET /v1/me says: nothing probes a route that would refuse. */
export interface Capabilities {
  /** The hosted build: plan and billing. */
  hosted: boolean;
  /** The hosted build's admin page (the user's email is in SERVICE_ADMIN_EMAILS). */
  admin: boolean;
}

export function capabilitiesOf(me: Me): Capabilities {
  return { hosted: me.server.hosted, admin: me.admin === true };
}

/** What GET /v1/me said about the server: its capabilities, or why it could not say; neither while it is asked. */
export interface ServerInfo {
  caps?: Capabilities;
  error?: string;
}

/**
 * Why a request got no answer at all. The browser reports a CORS refusal as the same network error as a server
 * that is down, so two probes of the server's `/health` (public, not rate limited) tell them apart: a CORS
 * request, which succeeds only if this origin is allowed, and a no-cors one, which succeeds whenever the server
 * answers (its answer stays opaque). The server is up but the CORS probe fails: the origin is not allowed.
 */
export async function unreachableReason(baseUrl: string, origin: string): Promise<string> {
  const health = `${baseUrl}/health`;
  const down = `The server at ${baseUrl} could not be reached.`;
  try {
    await fetch(health, { cache: 'no-store' });
    return down; // this origin is allowed: the failure was the connection's
  } catch {
    // refused by CORS, or down: the no-cors probe decides
  }
  try {
    await fetch(health, { mode: 'no-cors', cache: 'no-store' });
  } catch {
    return down;
  }
  return `This dashboard's origin ${origin} is not allowed by the server at ${baseUrl}: add it to SERVICE_CORS_ORIGINS in the server's settings (comma-separated) and restart the server.`;
}

/** Page paths go into the URL segment by segment, so slashes stay path separators. */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export class Api {
  /** The probe under way after a request got no answer; concurrent failures share it. */
  private probe: Promise<string> | undefined;

  constructor(
    readonly baseUrl: string,
    private readonly token: string | null,
  ) {}

  private unreachable(): Promise<string> {
    this.probe ??= unreachableReason(this.baseUrl, location.origin).finally(() => {
      this.probe = undefined;
    });
    return this.probe;
  }

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.token) headers.set('authorization', `Bearer ${this.token}`);
    if (init.body !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, { ...init, headers });
    } catch (e) {
      if (init.signal?.aborted) throw e; // the caller stopped it: nothing to explain
      throw new ApiError(0, await this.unreachable());
    }
    if (!res.ok && !(init.method === 'POST' && res.status === 409 && path.endsWith('/sync/push'))) {
      let message = `${res.status} ${res.statusText}`.trim();
      let body: Record<string, unknown> = {};
      try {
        const parsed = (await res.json()) as unknown;
        if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
        if (typeof body.error === 'string' && body.error !== '') message = body.error;
      } catch {
        // not JSON: keep the status line
      }
      throw new ApiError(res.status, message, body);
    }
    return res;
  }

  private async json<T>(path: string, init?: RequestInit): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  /** The user, and which views the server has for them (capabilitiesOf). */
  me(): Promise<Me> {
    return this.json('/v1/me');
  }

  exchangeIdToken(idToken: string): Promise<{ access_token: string; user: User }> {
    return this.json('/v1/auth/idp', { method: 'POST', body: JSON.stringify({ id_token: idToken }) });
  }

  async repos(): Promise<RepoSummary[]> {
    return (await this.json<{ repos: RepoSummary[] }>('/v1/repos')).repos;
  }

  createRepo(id: string): Promise<{ id: string; role: string }> {
    return this.json('/v1/repos', { method: 'POST', body: JSON.stringify({ id }) });
  }

  /**
   * `POST /v1/repos/:id/import`: a git bundle file becomes the history of a new repository (or the user's
   * empty one). The browser sends the file as it reads it.
   */
  importRepo(id: string, bundle: Blob): Promise<{ id: string; head: string; commits: number; pages: number }> {
    return this.json(`/v1/repos/${encodeURIComponent(id)}/import`, {
      method: 'POST',
      body: bundle,
      headers: { 'content-type': 'application/x-git-bundle' },
    });
  }

  async pages(repo: string): Promise<PageSummary[]> {
    return (await this.json<{ pages: PageSummary[] }>(`/v1/repos/${encodeURIComponent(repo)}/pages`)).pages;
  }

  async page(repo: string, path: string): Promise<{ text: string; sha: string }> {
    const res = await this.request(`/v1/repos/${encodeURIComponent(repo)}/pages/${encodePath(path)}`);
    return { text: await res.text(), sha: res.headers.get('x-page-sha') ?? '' };
  }

  search(repo: string, q: string): Promise<SearchResponse> {
    return this.json(`/v1/repos/${encodeURIComponent(repo)}/search?q=${encodeURIComponent(q)}&limit=50`);
  }

  /** Every repository the user belongs to. */
  searchAll(q: string): Promise<SearchResponse> {
    return this.json(`/v1/search?q=${encodeURIComponent(q)}&limit=50`);
  }

  /**
   * Writes pages in one commit. A stale `parent_sha` is merged section by section (`merge: "sections"`);
   * what cannot be merged comes back as a 409 with its conflicts, resolved by the caller.
   */
  async push(repo: string, files: PushFile[], message: string): Promise<PushAnswer> {
    const res = await this.request(this.repoUrl(repo, '/sync/push'), this.body('POST', { message, merge: 'sections', files }));
    return { ok: res.ok, body: (await res.json()) as PushResponse };
  }

  /**
   * The repository's event stream (API.md "Live events"), resuming after the event id `after`: a fetch, whose
   * body is read as it arrives (live.ts), since EventSource cannot send the token. Stopped with `signal`.
   */
  openEvents(repo: string, after: string | undefined, signal: AbortSignal): Promise<Response> {
    const q = after ? `?after=${encodeURIComponent(after)}` : '';
    return this.request(this.repoUrl(repo, `/events${q}`), { signal, cache: 'no-store', headers: { accept: 'text/event-stream' } });
  }

  links(repo: string, path: string): Promise<LinksResponse> {
    return this.json(this.repoUrl(repo, `/links/${encodePath(path)}`));
  }

  setRole(repo: string, userId: string, role: 'owner' | 'member'): Promise<{ user_id: string; email: string; role: string }> {
    return this.json(this.repoUrl(repo, `/members/${encodeURIComponent(userId)}/role`), this.body('POST', { role }));
  }

  /** Deletes the repository and everything in it; `confirm` must be its id. */
  async deleteRepo(repo: string, confirm: string): Promise<void> {
    await this.request(this.repoUrl(repo, `?confirm=${encodeURIComponent(confirm)}`), { method: 'DELETE' });
  }

  /** The repository as a git bundle (owners). */
  async exportRepo(repo: string): Promise<Blob> {
    return (await this.request(this.repoUrl(repo, '/export'))).blob();
  }

  async history(repo: string, path: string, limit = 200): Promise<CommitInfo[]> {
    const url = `/v1/repos/${encodeURIComponent(repo)}/history/${encodePath(path)}?limit=${limit}`;
    return (await this.json<{ commits: CommitInfo[] }>(url)).commits;
  }

  diff(repo: string, path: string, range: { from?: string; to?: string } = {}): Promise<SectionDiff> {
    const q = new URLSearchParams({ blame: 'true' });
    if (range.from) q.set('from', range.from);
    if (range.to) q.set('to', range.to);
    return this.json(`/v1/repos/${encodeURIComponent(repo)}/diff/${encodePath(path)}?${q}`);
  }

  private body(method: string, value?: unknown): RequestInit {
    return value === undefined ? { method } : { method, body: JSON.stringify(value) };
  }

  private repoUrl(repo: string, rest = ''): string {
    return `/v1/repos/${encodeURIComponent(repo)}${rest}`;
  }

  async evolution(repo: string, path: string, limit = 50): Promise<EvolutionResponse> {
    return this.json(this.repoUrl(repo, `/evolution/${encodePath(path)}?limit=${limit}&blame=true`));
  }

  /** `actions`: only these kinds of event (the server's `?actions=`); all of them when omitted. */
  activity(repo: string, opts: { limit?: number; offset?: number; actions?: readonly string[] } = {}): Promise<ActivityResponse> {
    const q = new URLSearchParams({ limit: String(opts.limit ?? 500), offset: String(opts.offset ?? 0) });
    if (opts.actions) q.set('actions', opts.actions.join(','));
    return this.json(this.repoUrl(repo, `/activity?${q}`));
  }

  async members(repo: string): Promise<Member[]> {
    return (await this.json<{ members: Member[] }>(this.repoUrl(repo, '/members'))).members;
  }

  async removeMember(repo: string, userId: string): Promise<void> {
    await this.request(this.repoUrl(repo, `/members/${encodeURIComponent(userId)}`), { method: 'DELETE' });
  }

  /** Redeems an invite key (POST /v1/repos/join): the repository joined and the role held there. */
  join(key: string): Promise<{ repo_id: string; role: string }> {
    return this.json('/v1/repos/join', this.body('POST', { key }));
  }

  async inviteKeys(repo: string): Promise<InviteKey[]> {
    return (await this.json<{ keys: InviteKey[] }>(this.repoUrl(repo, '/invite-keys'))).keys;
  }

  mintInviteKey(repo: string, label?: string): Promise<MintInviteResponse> {
    return this.json(this.repoUrl(repo, '/invite-keys'), this.body('POST', label ? { label } : {}));
  }

  async revokeInviteKey(repo: string, keyId: string): Promise<void> {
    await this.request(this.repoUrl(repo, `/invite-keys/${encodeURIComponent(keyId)}`), { method: 'DELETE' });
  }

  // Webhooks (docs/api.md "Webhooks"): owners add, test and remove; members list.
  async webhooks(repo: string): Promise<Webhook[]> {
    return (await this.json<{ webhooks: Webhook[] }>(this.repoUrl(repo, '/webhooks'))).webhooks;
  }

  createWebhook(repo: string, url: string, events: string[]): Promise<CreateWebhookResponse> {
    return this.json(this.repoUrl(repo, '/webhooks'), this.body('POST', { url, events }));
  }

  /** Queues a `ping` delivery (202). */
  async testWebhook(repo: string, id: string): Promise<void> {
    await this.request(this.repoUrl(repo, `/webhooks/${encodeURIComponent(id)}/test`), { method: 'POST' });
  }

  async deliveries(repo: string, id: string, limit = 20): Promise<Delivery[]> {
    return (await this.json<{ deliveries: Delivery[] }>(this.repoUrl(repo, `/webhooks/${encodeURIComponent(id)}/deliveries?limit=${limit}`))).deliveries;
  }

  async removeWebhook(repo: string, id: string): Promise<void> {
    await this.request(this.repoUrl(repo, `/webhooks/${encodeURIComponent(id)}`), { method: 'DELETE' });
  }

  async pats(): Promise<PatInfo[]> {
    return (await this.json<{ pats: PatInfo[] }>('/v1/pats')).pats;
  }

  createPat(opts: { label?: string; expires_in_days?: number }): Promise<CreatePatResponse> {
    return this.json('/v1/pats', this.body('POST', opts));
  }

  async revokePat(id: string): Promise<void> {
    await this.request(`/v1/pats/${encodeURIComponent(id)}`, { method: 'DELETE' });
  }

  /** Hosted build only (Capabilities.hosted); a self-hosted server answers 404. The admin routes: Capabilities.admin. */
  billing(): Promise<BillingResponse> {
    return this.json('/v1/billing');
  }

  checkout(): Promise<{ url: string }> {
    return this.json('/v1/billing/checkout', { method: 'POST' });
  }

  adminStats(): Promise<AdminStats> {
    return this.json('/v1/admin/stats');
  }

  async adminUsers(): Promise<AdminUser[]> {
    return (await this.json<{ users: AdminUser[] }>('/v1/admin/users')).users;
  }

  async adminRepos(): Promise<AdminRepo[]> {
    return (await this.json<{ repos: AdminRepo[] }>('/v1/admin/repos')).repos;
  }

  async setSubscription(userId: string, subscribed: boolean): Promise<void> {
    await this.request(`/v1/admin/users/${encodeURIComponent(userId)}/subscription`, this.body('POST', { subscribed }));
  }
}
