/**
 * The client `kr` and `kr mcp` use: the shared API client (client/http/client.ts) with the command line's
 * choices. Answers are checked against the zod schemas the server itself uses (schema/wire), each schema
 * module loaded when a call first needs it. Every request carries `Authorization: Bearer <token>` and
 * `X-Service-Client: kr-cli`; an error answer `{"error": ...}` becomes an {@link ApiError} whose message is
 * the server's own, with what to do about it where kr knows (401 `invalid token`: `token expired or
 * revoked; run kr login`).
 *
 * Every request has a time limit (default {@link DEFAULT_TIMEOUT_MS}, `kr --timeout <seconds>`) covering
 * the whole exchange, answer body included; a server that does not answer in time is reported as such:
 * `the server at <url> did not answer within 30 s`.
 */
import type { z } from 'zod';
import type { LimitsResponse } from '../schema/wire/limits.ts';
import type { ImportResponse } from '../schema/wire/repos.ts';
import { ApiClient, ApiError, errorBody, issueOf, type WireCheck, type WireModule } from './http/client.ts';
import { clean } from './http/text.ts';
import { DEFAULT_TIMEOUT_MS } from './options.ts';
import { nodeFetch } from './transport.ts';

export { ApiError };
export { seconds, encodePath } from './http/text.ts';

/** The fixed `X-Service-Client` of the command-line client (docs/api.md "Conventions"). */
export const CLIENT_NAME = 'kr-cli';

/** Every request's time limit unless `--timeout` says otherwise (client/options.ts). */
export { DEFAULT_TIMEOUT_MS };
/** The least time an import is given: the server reads and checks the whole bundle before it answers. */
export const IMPORT_TIMEOUT_MS = 600_000;

/** What an older server (no `GET /v1/limits`, 404) is assumed to accept: the documented defaults (docs/api.md). */
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


/** The wire schema modules, each loaded when an answer first needs it: building zod schemas is a good part of a command's start-up. */
const wire: Record<WireModule, () => Promise<unknown>> = {
  auth: () => import('../schema/wire/auth.ts'),
  diff: () => import('../schema/wire/diff.ts'),
  hosted: () => import('../schema/wire/hosted.ts'),
  limits: () => import('../schema/wire/limits.ts'),
  links: () => import('../schema/wire/links.ts'),
  members: () => import('../schema/wire/members.ts'),
  repos: () => import('../schema/wire/repos.ts'),
  search: () => import('../schema/wire/search.ts'),
  sync: () => import('../schema/wire/sync.ts'),
  webhooks: () => import('../schema/wire/webhooks.ts'),
};

/** An answer checked against its wire schema: null, or its first issue on one line. */
export const checkWire: WireCheck = async (module, name, json) => {
  const schema = ((await wire[module]()) as Record<string, z.ZodType>)[name];
  if (!schema) throw new Error(`no wire schema ${module}.${name}`);
  return issueOf(schema.safeParse(json));
};

export interface ApiOptions {
  baseUrl: string;
  /** null: send no Authorization header (sign-in probe). */
  token: string | null;
  timeoutMs?: number;
  /** The transport; node:http (client/transport.ts) when omitted. */
  fetch?: typeof fetch;
}

export class Api extends ApiClient {
  declare readonly timeoutMs: number;

  constructor(opts: ApiOptions) {
    super({
      baseUrl: opts.baseUrl,
      token: opts.token,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      // node:http rather than the global fetch, which takes longer to load than kr takes to start
      // (client/transport.ts); its answers have every member of a Response that the client reads.
      fetch: opts.fetch ?? (nodeFetch as unknown as typeof fetch),
      // A streamed request body (an import), which client/transport.ts does not send: the global fetch.
      streamFetch: opts.fetch ?? ((input, init) => fetch(input, init)),
      headers: { 'X-Service-Client': CLIENT_NAME, Accept: 'application/json' },
      check: checkWire,
      redirect: 'manual',
      resumeEvents: 'header',
    });
  }

  protected override errorFrom(res: Response, text: string): ApiError {
    return Api.errorFrom(res, text);
  }

  /** The error of a non-2xx answer: the server's `error` text (quota answers add the limit and upgrade link). */
  static async errorOf(res: Response): Promise<ApiError> {
    return Api.errorFrom(res, await res.text().catch(() => ''));
  }

  /** {@link Api.errorOf} once the body is read: the server's words on one line, and what to do where kr knows. */
  static errorFrom(res: Response, text: string): ApiError {
    const body = errorBody(text);
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

  /** `GET /v1/limits`; an older server without the route (404) gets the documented defaults. */
  override async limits(): Promise<LimitsResponse> {
    return (await super.limits()) ?? { ...DEFAULT_LIMITS };
  }

  /** The import of a bundle (see {@link ApiClient.importRepo}), given IMPORT_TIMEOUT_MS at least. */
  override importRepo(repo: string, body: ReadableStream<Uint8Array> | Blob, opts: { bytes?: number; branch?: string } = {}): Promise<ImportResponse> {
    return super.importRepo(repo, body, { ...opts, minTimeoutMs: IMPORT_TIMEOUT_MS });
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
}
