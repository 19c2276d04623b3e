/** A small typed client of the kr API; every failure becomes an ApiError with the server's own message. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface User {
  id: string;
  email: string;
  name: string;
}

export interface CommitInfo {
  sha: string;
  author: string;
  email: string;
  time: string;
  message: string;
}

export interface RepoSummary {
  id: string;
  page_count: number;
  role?: string;
  last_commit?: CommitInfo;
}

export interface PageSummary extends CommitInfo {
  path: string;
}

export interface SearchResult {
  repo_id?: string;
  path: string;
  title?: string;
  type?: string;
  tags?: string[];
  snippet: string;
  score: number;
  sha: string;
}

export interface SectionChange {
  heading: string;
  status: 'added' | 'removed' | 'modified' | 'unchanged' | 'renamed';
  from?: string;
  to?: string;
  line_diff?: string;
  old_heading?: string;
  introduced_by?: CommitInfo;
}

export interface FieldChange {
  field: string;
  from?: unknown;
  to?: unknown;
}

export interface SectionDiff {
  from_sha: string;
  to_sha: string;
  frontmatter: { changed: FieldChange[]; added: FieldChange[]; removed: FieldChange[] };
  preamble?: SectionChange;
  sections: SectionChange[];
  parse_fallback?: boolean;
  truncated?: boolean;
}

/** Page paths go into the URL segment by segment, so slashes stay path separators. */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export class Api {
  constructor(
    readonly baseUrl: string,
    private readonly token: string | null,
  ) {}

  private async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.token) headers.set('authorization', `Bearer ${this.token}`);
    if (init.body !== undefined) headers.set('content-type', 'application/json');
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${path}`, { ...init, headers });
    } catch {
      throw new ApiError(0, `The server at ${this.baseUrl} could not be reached.`);
    }
    if (!res.ok) {
      let message = `${res.status} ${res.statusText}`.trim();
      try {
        const body = (await res.json()) as { error?: unknown };
        if (typeof body.error === 'string' && body.error !== '') message = body.error;
      } catch {
        // not JSON: keep the status line
      }
      throw new ApiError(res.status, message);
    }
    return res;
  }

  private async json<T>(path: string, init?: RequestInit): Promise<T> {
    return (await (await this.request(path, init)).json()) as T;
  }

  me(): Promise<User> {
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

  async pages(repo: string): Promise<PageSummary[]> {
    return (await this.json<{ pages: PageSummary[] }>(`/v1/repos/${encodeURIComponent(repo)}/pages`)).pages;
  }

  async page(repo: string, path: string): Promise<{ text: string; sha: string }> {
    const res = await this.request(`/v1/repos/${encodeURIComponent(repo)}/pages/${encodePath(path)}`);
    return { text: await res.text(), sha: res.headers.get('x-page-sha') ?? '' };
  }

  search(repo: string, q: string): Promise<{ results: SearchResult[]; total: number }> {
    return this.json(`/v1/repos/${encodeURIComponent(repo)}/search?q=${encodeURIComponent(q)}&limit=50`);
  }

  async history(repo: string, path: string): Promise<CommitInfo[]> {
    const url = `/v1/repos/${encodeURIComponent(repo)}/history/${encodePath(path)}?limit=200`;
    return (await this.json<{ commits: CommitInfo[] }>(url)).commits;
  }

  diff(repo: string, path: string, range: { from?: string; to?: string } = {}): Promise<SectionDiff> {
    const q = new URLSearchParams({ blame: 'true' });
    if (range.from) q.set('from', range.from);
    if (range.to) q.set('to', range.to);
    return this.json(`/v1/repos/${encodeURIComponent(repo)}/diff/${encodePath(path)}?${q}`);
  }
}
