/**
 * Links between pages, resolved against the repository's pages at head (docs/api.md "Pages", the links route):
 * `[[slug]]` finds the slug among the page types of the client layout (a slug under two types
 * is ambiguous), `[[type/slug]]` picks the type (`concept` or its folder `concepts`, …), `[[slug|text]]`
 * shows `text`, and a relative link (`../entities/acme.md`) names a path from the linking page's folder.
 * Pure: no DOM, no requests.
 */
import { PAGE_TYPES, isValidSlug, pagePathFor, pageRefOfPath, type PageType } from '../../lib/core/page/parse.ts';

export type Resolved =
  | { kind: 'page'; path: string }
  | { kind: 'ambiguous'; paths: string[] }
  /** No such page; `type` and `slug` when the target names a page of the layout (it can be created). */
  | { kind: 'missing'; path?: string; type?: PageType; slug?: string };

/** A wiki link's parts: `[[target|text]]`; the text defaults to the target. */
export interface WikiLink {
  target: string;
  text: string;
}

/** `[[...]]` in text: no `[`, `]` or line break inside, at most 300 characters. */
export const WIKI_LINK = /\[\[([^\[\]\n]{1,300})\]\]/g;

export function parseWikiLink(inner: string): WikiLink | null {
  const bar = inner.indexOf('|');
  const target = (bar < 0 ? inner : inner.slice(0, bar)).trim();
  const text = bar < 0 ? target : inner.slice(bar + 1).trim();
  if (target === '') return null;
  return { target, text: text === '' ? target : text };
}

/** The words a `[[type/slug]]` may use for a type: its name, its plural and its folder. */
const TYPE_WORDS: Record<string, PageType> = {
  concept: 'concept',
  concepts: 'concept',
  entity: 'entity',
  entities: 'entity',
  analysis: 'analysis',
  analyses: 'analysis',
  source: 'source',
  sources: 'source',
  sessions: 'source',
};

function layoutPath(type: PageType, slug: string): string | null {
  try {
    return pagePathFor(type, slug);
  } catch {
    return null;
  }
}

/** Where `[[target]]` leads among `pages` (every path at head). */
export function resolveWikiTarget(rawTarget: string, pages: ReadonlySet<string>): Resolved {
  // `[[page#Heading]]` links to the page.
  const target = rawTarget.replace(/#.*$/, '').trim().normalize('NFC');
  const slash = target.indexOf('/');
  if (slash >= 0) {
    const type = TYPE_WORDS[target.slice(0, slash).toLowerCase()];
    const slug = target.slice(slash + 1);
    if (type && isValidSlug(slug)) {
      const path = layoutPath(type, slug);
      if (path && pages.has(path)) return { kind: 'page', path };
      return { kind: 'missing', path: path ?? undefined, type, slug };
    }
    // A path of the repository, with or without its `.md`.
    const path = target.replace(/^\/+/, '');
    if (pages.has(path)) return { kind: 'page', path };
    if (pages.has(`${path}.md`)) return { kind: 'page', path: `${path}.md` };
    const ref = pageRefOfPath(path) ?? pageRefOfPath(`${path}.md`);
    return ref ? { kind: 'missing', path: layoutPath(ref.type, ref.slug) ?? undefined, ...ref } : { kind: 'missing' };
  }
  const slug = target.replace(/\.md$/i, '');
  if (!isValidSlug(slug)) return { kind: 'missing' };
  const hits = PAGE_TYPES.map((t) => layoutPath(t, slug)).filter((p): p is string => p !== null && pages.has(p));
  if (hits.length === 1) return { kind: 'page', path: hits[0]! };
  if (hits.length > 1) return { kind: 'ambiguous', paths: hits };
  return { kind: 'missing', slug };
}

/** Whether an href is relative to the page (no scheme, not `//host`, not `#fragment` or `?query` alone). */
export function isRelativeHref(href: string): boolean {
  const h = href.trim();
  return h !== '' && !/^[a-z][a-z0-9+.-]*:/i.test(h) && !h.startsWith('//') && !h.startsWith('#') && !h.startsWith('?');
}

/**
 * Where a relative href of the page at `fromPath` leads: the path it names from the page's folder (from the
 * repository's root when it starts with `/`), a page when one is there. Null when it is not relative.
 */
export function resolveRelativeHref(href: string, fromPath: string, pages: ReadonlySet<string>): Resolved | null {
  if (!isRelativeHref(href)) return null;
  let raw = href.trim().replace(/[?#].*$/, '');
  try {
    raw = decodeURIComponent(raw);
  } catch {
    return { kind: 'missing' };
  }
  const parts = raw.startsWith('/') ? [] : fromPath.split('/').slice(0, -1);
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return { kind: 'missing' };
      parts.pop();
    } else parts.push(seg);
  }
  const path = parts.join('/').normalize('NFC');
  if (path === '') return { kind: 'missing' };
  if (pages.has(path)) return { kind: 'page', path };
  const ref = pageRefOfPath(path);
  return ref ? { kind: 'missing', path, ...ref } : { kind: 'missing', path };
}
