/**
 * What every tool of the agent tool server starts from: the project folder (`.kr/`, found once at start),
 * read afresh on every call (the CLI may change it in between), and a session with the CLI's credentials
 * and API client — whose requests carry, as `X-Service-Client`, the name the agent announced at
 * initialisation (SPEC.md rule 7), so the activity feed shows which agent pulled.
 */
import { Api, type ApiOptions } from '../cli/api.ts';
import { connect, loadCredentials, repoOf, requestTimeout } from '../cli/config.ts';
import { Project, loadState } from '../cli/project.ts';
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
