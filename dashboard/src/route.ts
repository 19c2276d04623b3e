/** Hash routes, so the build needs nothing from the static host: #/, #/repo/<id>, #/repo/<id>/page/<path>, #/repo/<id>/diff/<path>?from=&to= */

export type Route =
  | { name: 'repos' }
  | { name: 'repo'; repo: string; q?: string }
  | { name: 'page'; repo: string; path: string }
  | { name: 'diff'; repo: string; path: string; from?: string; to?: string }
  | { name: 'notFound'; hash: string };

const seg = (s: string) => encodeURIComponent(s);
const segs = (path: string) => path.split('/').map(encodeURIComponent).join('/');

export function href(r: Route): string {
  switch (r.name) {
    case 'repos':
      return '#/';
    case 'repo':
      return `#/repo/${seg(r.repo)}${r.q ? `?q=${encodeURIComponent(r.q)}` : ''}`;
    case 'page':
      return `#/repo/${seg(r.repo)}/page/${segs(r.path)}`;
    case 'diff': {
      const q = new URLSearchParams();
      if (r.from) q.set('from', r.from);
      if (r.to) q.set('to', r.to);
      const qs = q.toString();
      return `#/repo/${seg(r.repo)}/diff/${segs(r.path)}${qs ? `?${qs}` : ''}`;
    }
    case 'notFound':
      return r.hash;
  }
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
  if (parts[0] === 'repo' && parts[1]) {
    const repo = parts[1];
    if (parts.length === 2) return { name: 'repo', repo, q: q.get('q') ?? undefined };
    const rest = parts.slice(3).join('/');
    if (parts[2] === 'page' && rest) return { name: 'page', repo, path: rest };
    if (parts[2] === 'diff' && rest) {
      return { name: 'diff', repo, path: rest, from: q.get('from') ?? undefined, to: q.get('to') ?? undefined };
    }
  }
  return { name: 'notFound', hash };
}
