/**
 * The catalogue of refusals: every 4xx/5xx answer the service gives in JSON, each `{status, code, message}`.
 * A refusal's `code` is stable and snake_case, named for what happened; clients match on it, never on the
 * message, whose text is for people (the original client shows it as it is). Every JSON error body is
 * `{"error": <message>, "code": <code>, ...extra}` (lib/core/errors.ts `HttpError.body`).
 *
 * Throwing one: `throw refuse(R.invalid_repo_id)`, or with the variable part of its message,
 * `throw refuse(R.unknown_sha, value)` (lib/core/errors.ts). Route docs list the same entries (lib/framework/route.ts
 * `RouteDoc.errors`), so the OpenAPI document and docs/api.md's table of codes come from here.
 *
 * One code per message: the only message with two statuses, `not a member of this repo`, has the one code
 * `not_a_member` in both (403: the caller is not a member of the repository; 404: the user a request names is
 * not). The hosted build's 402s keep the codes `quota_repos` and `quota_members` they had before codes were
 * on every body.
 *
 * This module imports nothing: every layer may name a refusal.
 */

/**
 * One refusal. `message` is its text, where `<...>` stands for a part taken from the request or the server's
 * state; such a refusal has `format`, which makes the text from those parts.
 */
export class Refusal<A extends Array<string | number> = []> {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly format?: (...args: A) => string,
  ) {}

  /** The message with its variable parts filled in. */
  text(...args: A): string {
    return this.format ? this.format(...args) : this.message;
  }

  /** An example of it for a route's docs: the message as a given request would get it. */
  example(...args: A): RefusalExample {
    return { refusal: this as Refusal<never>, message: this.text(...args) };
  }
}

/** A refusal as one route words it (a field's name filled in, say), for its docs. */
export interface RefusalExample {
  refusal: Refusal<never>;
  message: string;
}

/** What a route's docs list: catalogue entries, or examples of them. */
export type DocRefusal = Refusal<never> | RefusalExample;

const r = <A extends Array<string | number> = []>(status: number, code: string, message: string, format?: (...args: A) => string) =>
  new Refusal<A>(status, code, message, format);

/** Free text the thrower words (a git client's malformed request): the message is the whole of it. */
const free = (text: string) => text;

/** The catalogue. Keys are the codes (but `member_not_found`, which shares `not_a_member`'s code). */
export const R = {
  // The app (lib/framework/app.ts, lib/runtime/workers/entry.ts)
  not_found: r(404, 'not_found', 'not found'),
  method_not_allowed: r(405, 'method_not_allowed', 'method not allowed'),
  internal_error: r(500, 'internal_error', 'internal error'),
  server_misconfigured: r(503, 'server_misconfigured', 'server misconfigured'),
  rate_limited: r(429, 'rate_limited', 'rate limit exceeded'),

  // Request bodies (lib/framework/http/body-limit.ts, lib/framework/http/parse.ts)
  invalid_json: r(400, 'invalid_json', 'invalid JSON body'),
  invalid_request: r(400, 'invalid_request', 'invalid request: <problem>', (problem: string) => `invalid request: ${problem}`),
  body_incomplete: r(400, 'body_incomplete', 'request body incomplete'),
  body_timeout: r(408, 'body_timeout', 'request body timeout'),
  body_too_large: r(413, 'body_too_large', 'request body too large'),
  import_too_large: r(413, 'import_too_large', 'request body too large (at most <n> bytes)', (n: number) => `request body too large (at most ${n} bytes)`),
  server_busy: r(503, 'server_busy', 'server busy'),
  server_stopping: r(503, 'server_stopping', 'server stopping'),

  // Credentials (lib/auth, lib/usecases/policy.ts)
  missing_authorization: r(401, 'missing_authorization', 'missing authorization header'),
  invalid_authorization_format: r(401, 'invalid_authorization_format', 'invalid authorization format, expected Bearer <token>'),
  invalid_git_authorization_format: r(401, 'invalid_git_authorization_format', 'invalid authorization format, expected Basic or Bearer credentials'),
  invalid_token: r(401, 'invalid_token', 'invalid token'),
  session_required: r(401, 'session_required', 'session required'),
  invalid_id_token: r(401, 'invalid_id_token', 'invalid id token: <reason>', (reason: string) => `invalid id token: ${reason}`),
  id_token_required: r(400, 'id_token_required', 'id_token required'),
  account_disabled: r(403, 'account_disabled', 'account disabled'),
  idp_not_configured: r(503, 'idp_not_configured', 'identity provider not configured'),
  idp_unavailable: r(503, 'idp_unavailable', 'identity provider unavailable'),
  user_session_required: r(403, 'user_session_required', 'user session required'),
  admin_only: r(403, 'admin_only', 'admin only'),
  pat_not_found: r(404, 'pat_not_found', 'pat not found'),

  // Opening a repository (lib/framework/http/params.ts, lib/usecases/open-repo.ts openRepo)
  invalid_repo_id: r(400, 'invalid_repo_id', 'invalid repo id'),
  not_a_member: r(403, 'not_a_member', 'not a member of this repo'),
  repo_not_found: r(404, 'repo_not_found', 'repo not found'),
  repo_busy: r(503, 'repo_busy', 'repository busy, retry'),

  // Roles (lib/usecases/policy.ts)
  owner_only_invites: r(403, 'owner_only_invites', 'only an owner can manage invite keys'),
  owner_only_remove: r(403, 'owner_only_remove', 'only an owner can remove members'),
  owner_only_roles: r(403, 'owner_only_roles', 'only an owner can change roles'),
  owner_only_export: r(403, 'owner_only_export', 'only an owner can export'),
  owner_only_import: r(403, 'owner_only_import', 'only an owner can import'),
  owner_only_delete: r(403, 'owner_only_delete', 'only an owner can delete a repository'),
  owner_only_webhooks: r(403, 'owner_only_webhooks', 'only an owner can manage webhooks'),

  // Repositories (lib/usecases/open-repo.ts, functions/repos)
  invalid_new_repo_id: r(400, 'invalid_new_repo_id', 'id must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}'),
  repo_exists: r(409, 'repo_exists', 'repo already exists'),
  confirm_required: r(400, 'confirm_required', 'confirm the deletion with ?confirm=<id>'),
  repo_empty: r(409, 'repo_empty', 'repo is empty: nothing to export'),
  repo_not_empty: r(409, 'repo_not_empty', 'repository is not empty'),

  // Imports (lib/git/import.ts, lib/repo)
  imports_unavailable: r(501, 'imports_unavailable', 'imports are not available on this server'),
  import_discarded: r(409, 'import_discarded', 'import not found (it was discarded): start it again'),
  import_already_checked: r(409, 'import_already_checked', 'import already checked'),
  import_not_checked: r(409, 'import_not_checked', 'import not checked'),
  invalid_bundle: r(400, 'invalid_bundle', 'invalid bundle: <why>', (why: string) => `invalid bundle: ${why}`),
  bundle_prerequisites: r(400, 'bundle_prerequisites', 'bundle has prerequisites'),
  bundle_no_branch: r(400, 'bundle_no_branch', 'bundle has no branch <name>', (name: string) => `bundle has no branch ${name}`),
  bundle_no_head: r(400, 'bundle_no_head', 'bundle has no HEAD, no single branch and no main: name one with ?branch='),
  import_invalid_path: r(400, 'import_invalid_path', 'invalid page path in <commit sha>: <path>', (commit: string, path: string) => `invalid page path in ${commit}: ${path}`),
  import_symlink: r(400, 'import_symlink', 'symlink in <commit sha>: <path>', (commit: string, path: string) => `symlink in ${commit}: ${path}`),
  import_submodule: r(400, 'import_submodule', 'submodule in <commit sha>: <path>', (commit: string, path: string) => `submodule in ${commit}: ${path}`),
  import_file_too_large: r(
    413,
    'import_file_too_large',
    'file too large in <commit sha>: <path> (<n> bytes, at most <max>)',
    (commit: string, path: string, n: number, max: number) => `file too large in ${commit}: ${path} (${n} bytes, at most ${max})`,
  ),

  // Pages, pushes and history (lib/usecases/sync.ts, lib/differ, lib/core/errors.ts's store errors)
  invalid_page_path: r(400, 'invalid_page_path', 'invalid page path: <path>', (path: string) => `invalid page path: ${path}`),
  unsafe_name: r(400, 'unsafe_name', '<what is unsafe>', free),
  page_not_found: r(404, 'page_not_found', 'page not found'),
  unknown_sha: r(400, 'unknown_sha', 'unknown sha: <value>', (value: string) => `unknown sha: ${value}`),
  invalid_merge_mode: r(400, 'invalid_merge_mode', 'invalid merge mode'),
  too_many_files: r(413, 'too_many_files', 'too many files in one push (max <n>)', (n: number) => `too many files in one push (max ${n})`),
  invalid_parent_sha: r(400, 'invalid_parent_sha', 'invalid parent_sha: <value>', (value: string) => `invalid parent_sha: ${value}`),
  label_too_long: r(400, 'label_too_long', 'label too long (max <n>)', (n: number) => `label too long (max ${n})`),
  path_case: r(400, 'path_case', 'path "<path>" differs only in letter case from "<existing>"', (path: string, existing: string) => `path "${path}" differs only in letter case from "${existing}"`),
  path_collision: r(409, 'path_collision', 'path collides with an existing page or directory: <path>', (path: string) => `path collides with an existing page or directory: ${path}`),
  concurrent_update: r(409, 'concurrent_update', 'concurrent update, retry'),
  path_not_in_repo: r(404, 'path_not_in_repo', 'path not present in repo'),
  path_not_at_either_sha: r(404, 'path_not_at_either_sha', 'path not present at either sha'),
  no_parent: r(400, 'no_parent', 'no parent commit for this path; pass ?from explicitly'),
  invalid_actions: r(400, 'invalid_actions', 'invalid actions: <value>', (value: string) => `invalid actions: ${value}`),

  // Search (lib/core/search-query.ts)
  q_required: r(400, 'q_required', 'q required'),
  invalid_query: r(400, 'invalid_query', 'invalid query: <problem>', (problem: string) => `invalid query: ${problem}`),

  // Members and invite keys (lib/usecases/membership.ts, functions/members, functions/invites)
  member_not_found: r(404, 'not_a_member', 'not a member of this repo'),
  last_owner: r(409, 'last_owner', "can't remove the last owner"),
  invalid_role: r(400, 'invalid_role', 'role must be owner or member'),
  key_required: r(400, 'key_required', 'key required'),
  invite_key_not_recognized: r(404, 'invite_key_not_recognized', 'invite key not recognized'),
  invite_key_expired: r(410, 'invite_key_expired', 'invite key expired'),
  invite_key_not_found: r(404, 'invite_key_not_found', 'invite key not found'),
  removed_from_repo: r(403, 'removed_from_repo', 'removed from this repo; ask an owner for a new invite key'),

  // Events and webhooks (lib/events, lib/usecases/webhooks.ts)
  too_many_streams: r(429, 'too_many_streams', 'too many event streams'),
  too_many_webhooks: r(409, 'too_many_webhooks', 'too many webhooks (max <n>)', (n: number) => `too many webhooks (max ${n})`),
  webhook_not_found: r(404, 'webhook_not_found', 'webhook not found'),
  webhook_url_https: r(400, 'webhook_url_https', 'webhook url must use https'),
  webhook_url_not_allowed: r(400, 'webhook_url_not_allowed', 'webhook url not allowed: <reason>', (reason: string) => `webhook url not allowed: ${reason}`),

  // git's smart HTTP (lib/usecases/git-http.ts, lib/git/upload-request.ts, lib/git/upload-pack.ts)
  unsupported_service: r(400, 'unsupported_service', "only git's smart HTTP protocol is served: service=git-upload-pack"),
  unsupported_encoding: r(415, 'unsupported_encoding', 'unsupported content encoding'),
  invalid_gzip: r(400, 'invalid_gzip', 'invalid gzip body'),
  invalid_git_request: r(400, 'invalid_git_request', '<what the request gets wrong>', free),
  git_request_too_large: r(413, 'git_request_too_large', 'too many <what> (at most <n>)', (what: string, n: number | string) => `too many ${what} (at most ${n})`),

  // The client package (lib/usecases/client-package.ts)
  client_not_built: r(404, 'client_not_built', 'client package not built on this server (npm run build:client)'),

  // The hosted build (lib/usecases/quota.ts, lib/hosted)
  quota_repos: r(402, 'quota_repos', "repository limit reached for <whose> plan (<limit>)", free),
  quota_members: r(402, 'quota_members', "member limit reached for this repository's plan (<limit>)", free),
  billing_not_configured: r(503, 'billing_not_configured', 'billing not configured'),
  invalid_signature: r(401, 'invalid_signature', 'invalid signature'),
  stale_signature: r(401, 'stale_signature', 'stale signature'),
  user_id_required: r(400, 'user_id_required', 'user_id required'),
  user_not_found: r(404, 'user_not_found', 'user not found'),
} as const;

/** Every entry of the catalogue, in its order. */
export const CATALOGUE: ReadonlyArray<Refusal<never>> = Object.values(R) as ReadonlyArray<Refusal<never>>;

/** The entry a DocRefusal names, and the message it documents. */
export function docRefusal(d: DocRefusal): { refusal: Refusal<never>; message: string } {
  return d instanceof Refusal ? { refusal: d, message: d.message } : d;
}
