/**
 * Following a repository's live events with the CLI's client (`kr watch`, and `kr mcp`'s resource
 * subscriptions): the stream reader of lib/core/sse/client.ts over {@link Api.openEvents}, with the CLI's
 * rules for what is passing — the server unreachable or out of time, a 5xx (a proxy while the server
 * restarts), a 429 once a stream was open before (the server has not yet seen the old connection go) — and
 * what ends following: any other refusal (401 `token expired or revoked; run kr login`, 403 not a member, 404,
 * the first 429 `too many event streams`), and `event: revoked`, worded by {@link revokedMessage}.
 */
import { followEvents, type FollowEnd, type FollowOptions } from '../lib/core/sse/client.ts';
import { ApiError, type Api } from './api.ts';
import { clean } from './output.ts';

/**
 * Whether an error while following (opening the stream, or pulling for an event) calls for a reconnection; a
 * stream that drops while open always does (lib/core/sse/client.ts).
 */
export function passing(e: unknown, connectedBefore: boolean): boolean {
  if (!(e instanceof ApiError)) return false;
  if (e.code === 'unreachable' || e.code === 'timeout') return true;
  if (e.status >= 500 || e.status === 408) return true;
  return e.status === 429 && connectedBefore;
}

/** The options of {@link followEvents} for `repo` through `api`; the caller adds its handlers. */
export function repoEvents(api: Api, repo: string): Pick<FollowOptions, 'open' | 'refusal' | 'retryable'> {
  return {
    open: (lastEventId, signal) => api.openEvents(repo, lastEventId, signal),
    refusal: (res) => api.eventsRefusal(res, repo),
    retryable: passing,
  };
}

/** Follows `repo`'s events through `api` (see lib/core/sse/client.ts). */
export function followRepo(api: Api, repo: string, handlers: Omit<FollowOptions, 'open' | 'refusal' | 'retryable'>): Promise<FollowEnd> {
  return followEvents({ ...repoEvents(api, repo), ...handlers });
}

/** The server's reasons for ending a stream (docs/api.md "Live events"; lib/events). */
const REMOVED = ['removed from this repo', 'no longer a member of this repo'];
const CREDENTIAL = 'credential no longer valid';
const DELETED = 'repository deleted';

/** What an `event: revoked` means to the user, and what to do about it. */
export function revokedMessage(reason: string, repo: string): string {
  const r = clean(repo);
  if (REMOVED.includes(reason)) {
    return `you were removed from ${r}: the server ended its event stream (${clean(reason)}); ask an owner for a new invite key, then run "kr join <key>"`;
  }
  if (reason === CREDENTIAL) {
    return `your token is no longer valid (revoked or expired, or your account was disabled): the server ended the event stream of ${r}; run kr login`;
  }
  if (reason === DELETED) return `the repository ${r} was deleted: the server ended its event stream`;
  return `the server ended the event stream of ${r}: ${clean(reason)}`;
}
