/**
 * Hash routes, so the build needs nothing from the static host: #/, #/search?q=, #/repo/<id>,
 * #/repo/<id>/page/<path>, #/repo/<id>/edit/<path>, #/repo/<id>/new?type=&slug=,
 * #/repo/<id>/diff/<path>?from=&to=, #/repo/<id>/evolution/<path>, #/repo/<id>/team, #/repo/<id>/activity,
 * #/repo/<id>/settings, #/tokens, #/billing, #/admin, #/cli-login?port=&state=&hostname=. Two path entry
 * points, /cli-login (the CLI's browser login) and /billing (the hosted build's upgrade link), become their hash
 * routes (entryFromPath).
 */

export type Route =
  | { name: 'repos' }
  | { name: 'search'; q: string }
  | { name: 'repo'; repo: string; q?: string }
  | { name: 'page'; repo: string; path: string }
  | { name: 'edit'; repo: string; path: string; title?: string }
  | { name: 'new'; repo: string; type?: string; slug?: string }
  | { name: 'settings'; repo: string }
  | { name: 'diff'; repo: string; path: string; from?: string; to?: string }
  | { name: 'evolution'; repo: string; path: string }
  | { name: 'team'; repo: string }
  | { name: 'activity'; repo: string }
  | { name: 'tokens' }
  | { name: 'billing' }
  | { name: 'admin' }
  | { name: 'cliLogin'; port: string; state: string; hostname: string }
  | { name: 'notFound'; hash: string };

const seg = (s: string) => encodeURIComponent(s);
const segs = (path: string) => path.split('/').map(encodeURIComponent).join('/');

export function href(r: Route): string {
  switch (r.name) {
    case 'repos':
      return '#/';
    case 'search':
      return `#/search?q=${encodeURIComponent(r.q)}`;
    case 'repo':
      return `#/repo/${seg(r.repo)}${r.q ? `?q=${encodeURIComponent(r.q)}` : ''}`;
    case 'page':
      return `#/repo/${seg(r.repo)}/page/${segs(r.path)}`;
    case 'edit':
      return `#/repo/${seg(r.repo)}/edit/${segs(r.path)}${r.title ? `?title=${encodeURIComponent(r.title)}` : ''}`;
    case 'new': {
      const q = new URLSearchParams();
      if (r.type) q.set('type', r.type);
      if (r.slug) q.set('slug', r.slug);
      const qs = q.toString();
      return `#/repo/${seg(r.repo)}/new${qs ? `?${qs}` : ''}`;
    }
    case 'settings':
      return `#/repo/${seg(r.repo)}/settings`;
    case 'diff': {
      const q = new URLSearchParams();
      if (r.from) q.set('from', r.from);
      if (r.to) q.set('to', r.to);
      const qs = q.toString();
      return `#/repo/${seg(r.repo)}/diff/${segs(r.path)}${qs ? `?${qs}` : ''}`;
    }
    case 'evolution':
      return `#/repo/${seg(r.repo)}/evolution/${segs(r.path)}`;
    case 'team':
      return `#/repo/${seg(r.repo)}/team`;
    case 'activity':
      return `#/repo/${seg(r.repo)}/activity`;
    case 'tokens':
      return '#/tokens';
    case 'billing':
      return '#/billing';
    case 'admin':
      return '#/admin';
    case 'cliLogin':
      return `#/cli-login?${new URLSearchParams({ port: r.port, state: r.state, hostname: r.hostname })}`;
    case 'notFound':
      return r.hash;
  }
}

/**
 * `/cli-login?…` and `/billing` (relative to where the build is served) as the URL of the matching hash route
 * at the build's base, or null for any other address. The app replaces the address with it before it starts,
 * so signing in on the way keeps the reader's place.
 */
export function entryFromPath(pathname: string, search: string): string | null {
  const m = /\/(cli-login|billing)\/?$/.exec(pathname);
  if (!m) return null;
  return `${pathname.slice(0, m.index + 1)}#/${m[1]}${search}`;
}

export function parseRoute(hash: string): Route {
  const raw = hash.replace(/^#/, '');
  const [pathPart = '', queryPart = ''] = raw.split('?', 2);
  const q = new URLSearchParams(queryPart);
  let parts: string[];
  try {
    parts = pathPart.split('/').filter((p) => p !== '').map(decodeURIComponent);
  } catch {
    return { name: 'notFound', hash };
  }
  if (parts.length === 0) return { name: 'repos' };
  if (parts.length === 1) {
    if (parts[0] === 'tokens' || parts[0] === 'billing' || parts[0] === 'admin') return { name: parts[0] };
    if (parts[0] === 'search') return { name: 'search', q: q.get('q') ?? '' };
    if (parts[0] === 'cli-login') {
      return { name: 'cliLogin', port: q.get('port') ?? '', state: q.get('state') ?? '', hostname: q.get('hostname') ?? '' };
    }
  }
  if (parts[0] === 'repo' && parts[1]) {
    const repo = parts[1];
    if (parts.length === 2) return { name: 'repo', repo, q: q.get('q') ?? undefined };
    if (parts.length === 3 && (parts[2] === 'team' || parts[2] === 'activity' || parts[2] === 'settings')) return { name: parts[2], repo };
    if (parts.length === 3 && parts[2] === 'new') return { name: 'new', repo, type: q.get('type') ?? undefined, slug: q.get('slug') ?? undefined };
    const rest = parts.slice(3).join('/');
    if (parts[2] === 'page' && rest) return { name: 'page', repo, path: rest };
    if (parts[2] === 'edit' && rest) return { name: 'edit', repo, path: rest, title: q.get('title') ?? undefined };
    if (parts[2] === 'evolution' && rest) return { name: 'evolution', repo, path: rest };
    if (parts[2] === 'diff' && rest) {
      return { name: 'diff', repo, path: rest, from: q.get('from') ?? undefined, to: q.get('to') ?? undefined };
    }
  }
  return { name: 'notFound', hash };
}
