/**
 * What every tool of the agent tool server starts from: the project folder (`.kr/`, found once at start),
 * read afresh on every call (the CLI may change it in between), and a session with the CLI's credentials
 * and API client — whose requests carry, as `X-Service-Client`, the name the agent announced at
 * initialisation (docs/agents.md "Limits and errors"), so the activity feed shows which agent pulled.
 */
import { Api, type ApiOptions } from '../client/api.ts';
import { connect, loadCredentials, repoOf, requestTimeout } from '../client/config.ts';
import { Project, loadState } from '../client/project.ts';
import type { Commit } from '../schema/wire/common.ts';
import type { PagesResponse } from '../schema/wire/sync.ts';

/** Sent as `X-Service-Client` until the agent has announced a name. */
export const FALLBACK_CLIENT_NAME = 'kr-mcp';

/** A client name as an HTTP header value: printable ASCII, at most 100 characters. */
export function headerSafeName(name: string | undefined): string {
  const safe = (name ?? '').replace(/[^\x20-\x7E]/g, '').trim().slice(0, 100);
  return safe === '' ? FALLBACK_CLIENT_NAME : safe;
}

export interface Connected {
  api: Api;
  serverUrl: string;
  repo: string;
  project: Project;
}

export class KrContext {
  /** The state of live updates, for kr_status (set by mcp/live.ts's owner; null: nothing subscribed). */
  liveStatus: () => string | null = () => null;
  /** The tail of the queue of {@link KrContext.exclusive} work. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    /** The folder that holds `.kr/`. */
    readonly root: string,
    /** The client name the agent announced (undefined before initialisation). */
    private readonly clientName: () => string | undefined,
  ) {}

  /** The project folder as it is now (state and page files read afresh). */
  async project(): Promise<Project> {
    const project = new Project(this.root, await loadState(this.root));
    await project.scan();
    return project;
  }

  /**
   * Runs `fn` after every earlier exclusive work has ended: the tools that write the folder's state (pull,
   * push, write, status) and the pulls of live updates (mcp/live.ts) never interleave their reads and
   * writes of `.kr/state.json`.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** The X-Service-Client value now. */
  client(): string {
    return headerSafeName(this.clientName());
  }

  /** The project, the CLI's credentials and server, and the folder's repository; refusals as the CLI words them. */
  async connect(): Promise<Connected> {
    const project = await this.project();
    const session = await connect();
    const creds = await loadCredentials();
    const withClient: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('X-Service-Client', this.client());
      return fetch(input, { ...init, headers });
    };
    const opts: ApiOptions = { baseUrl: session.serverUrl, token: creds.token, timeoutMs: requestTimeout(), fetch: withClient };
    const repo = repoOf(session, undefined, project);
    return { api: new Api(opts), serverUrl: session.serverUrl, repo, project };
  }
}

/** path → last commit (author, email, sha, time) of every page on the server; empty when it cannot say. */
export async function lastCommits(api: Api, repo: string): Promise<Map<string, PagesResponse['pages'][number]>> {
  try {
    return new Map((await api.pages(repo)).pages.map((p) => [p.path, p]));
  } catch {
    return new Map();
  }
}

/** `Alice <alice@example.com>` of a commit-like record. */
export const authorOf = (c: { author: string; email: string } | undefined): string | null =>
  c ? (c.author && c.author !== c.email ? `${c.author} <${c.email}>` : c.email) : null;

/** How many of a page's commits are asked for to name the authors of given commits (the route's own cap is 1000). */
export const AUTHOR_LOOKUP_COMMITS = 200;

/**
 * The commits that touched `path`, newest first (at most {@link AUTHOR_LOOKUP_COMMITS}), to name who wrote a
 * version of it: the server records each commit's author as the member who pushed it. Empty when the
 * server cannot say.
 */
export async function pageCommits(api: Api, repo: string, path: string): Promise<Commit[]> {
  try {
    return (await api.history(repo, path, AUTHOR_LOOKUP_COMMITS)).commits;
  } catch {
    return [];
  }
}

/** The commit of `commits` whose sha is `sha` (or starts with it: a short sha). */
export function commitOf(commits: readonly Commit[], sha: string | null | undefined): Commit | undefined {
  if (!sha) return undefined;
  const want = sha.toLowerCase();
  return commits.find((c) => c.sha === want) ?? (want.length >= 7 ? commits.find((c) => c.sha.startsWith(want)) : undefined);
}

/**
 * Who wrote the changes from `fromSha` (exclusive; '' for the page's beginning) to `toSha` (inclusive):
 * the authors of those commits, newest first, each once, with the newest commit of each. Null when the
 * server cannot say (`toSha` not among `commits`).
 */
export function authorsBetween(commits: readonly Commit[], fromSha: string, toSha: string): string | null {
  const to = commitOf(commits, toSha);
  if (!to) return null;
  const from = fromSha === '' ? undefined : commitOf(commits, fromSha);
  const range = commits.slice(commits.indexOf(to), from ? Math.max(commits.indexOf(from), commits.indexOf(to) + 1) : commits.length);
  const seen = new Map<string, string>();
  for (const c of range) {
    const who = authorOf(c)!;
    if (!seen.has(who)) seen.set(who, c.sha.slice(0, 8));
  }
  const names = [...seen].map(([who, sha]) => `${who} (${sha})`);
  return names.length > 5 ? `${names.slice(0, 5).join(', ')} and ${names.length - 5} more` : names.join(', ');
}
