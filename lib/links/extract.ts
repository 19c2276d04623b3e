/**
 * The links a page's text makes to other pages (docs/api.md "Pages", the links route), found without resolving
 * them: resolution depends on which pages exist at head, so it is done when asked (lib/links/index.ts).
 * Pure and web-standard: the server indexes pages with it, on Node and on Workers.
 *
 * What counts as a link, in the prose of the page (lib/core/page/parse.ts `proseLines`: after the frontmatter,
 * outside fenced code blocks) and outside inline code spans (`` `[[x]]` ``):
 *  - `[[slug]]`, `[[slug|shown text]]`: a page by slug, resolved among the page types as the client resolves
 *    slugs. An anchor (`[[slug#heading]]`, `[[slug^block]]`) and a table's escaped pipe (`[[slug\|text]]`)
 *    are not part of the target.
 *  - `[[type/slug]]` picks a type: the layout folder (`concepts/`, `entities/`, `analyses/`, `sessions/`) or
 *    the type's name (`concept/`, `entity/`, `analysis/`, `source/`, also `sources/`); a whole layout path
 *    (`[[wiki/entities/postgres]]`, with or without `.md`) picks its type too. Any other target with a `/`,
 *    and a slug the server could not store, is a link that never resolves (listed, unresolved).
 *  - `[text](path.md)`, `[text](<path with spaces.md> "title")`: a page by path, when the destination is a
 *    relative path to a `.md` file (compared ignoring case): no scheme (`https:`, `mailto:`), not absolute
 *    (`/x.md`), resolved against the linking page's folder and percent-decoded, and still inside the
 *    repository. `#fragment` and `?query` are not part of it. Images (`![alt](x.md)`) are not links.
 * Each distinct target (as written, without shown text and anchor) counts once, at its first occurrence,
 * in document order; at most {@link MAX_LINKS_PER_PAGE} of them per page.
 */
import { normalizeText, pageRefOfPath, proseLines, isValidSlug, type PageType } from '../core/page/parse.ts';
import { storedPathProblem } from '../core/page/path.ts';

/** The distinct link targets of one page that are kept (the first ones, in document order). */
export const MAX_LINKS_PER_PAGE = 1000;
/** Longest text of a page scanned for links, in characters (the rest of a giant page links nowhere). */
export const MAX_SCANNED_CHARS = 1_000_000;
/** Longest link target, in characters: a longer one could name no page (paths are at most 512 bytes). */
export const MAX_TARGET_CHARS = 512;

/** One link as written: by slug (with the type it picks, if any), by path, or neither (never resolves). */
export interface LinkRef {
  /** The target as written: `postgres`, `entities/postgres`, `../entities/postgres.md`. */
  target: string;
  /** `[[...]]` links: the slug. */
  slug?: string;
  /** `[[type/slug]]`: the type it picks. */
  type?: PageType;
  /** Markdown links: the page path it names. */
  path?: string;
}

/** `[[type/slug]]` prefixes: each type's folder and name. */
const TYPE_PREFIXES: Record<string, PageType> = {
  concepts: 'concept',
  concept: 'concept',
  entities: 'entity',
  entity: 'entity',
  analyses: 'analysis',
  analysis: 'analysis',
  sessions: 'source',
  sources: 'source',
  source: 'source',
};

const WIKI = /\[\[([^[\]\n]+)\]\]/g;
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** The links of a page (its path, its text), distinct targets in document order. */
export function extractLinks(source: string, text: string): LinkRef[] {
  const body = normalizeText(text.length > MAX_SCANNED_CHARS ? text.slice(0, MAX_SCANNED_CHARS) : text);
  const out: LinkRef[] = [];
  const seen = new Set<string>();
  const folder = source.includes('/') ? source.slice(0, source.lastIndexOf('/')) : '';
  for (const raw of proseLines(body)) {
    if (!raw.includes('[')) continue;
    const line = withoutCodeSpans(raw);
    const found: Array<{ at: number; ref: LinkRef }> = [];
    for (const m of line.matchAll(WIKI)) {
      const ref = wikiLink(m[1]!);
      if (ref) found.push({ at: m.index, ref });
    }
    for (let i = line.indexOf(']('); i >= 0; i = line.indexOf('](', i + 2)) {
      const link = markdownLink(line, i, folder);
      if (link) found.push(link);
    }
    found.sort((a, b) => a.at - b.at);
    for (const { ref } of found) {
      if (seen.has(ref.target)) continue;
      seen.add(ref.target);
      out.push(ref);
      if (out.length >= MAX_LINKS_PER_PAGE) return out;
    }
  }
  return out;
}

/**
 * The line with every inline code span blanked out (a run of backticks up to the next run of the same
 * length; an unmatched run is literal text), so that nothing inside one is taken for a link.
 */
function withoutCodeSpans(line: string): string {
  if (!line.includes('`')) return line;
  let out = '';
  let i = 0;
  while (i < line.length) {
    const open = line.indexOf('`', i);
    if (open < 0) break;
    let n = open;
    while (line[n] === '`') n++;
    const run = n - open;
    let close = -1;
    for (let j = line.indexOf('`', n); j >= 0; j = line.indexOf('`', j)) {
      let k = j;
      while (line[k] === '`') k++;
      if (k - j === run) {
        close = j;
        break;
      }
      j = k;
    }
    if (close < 0) {
      out += line.slice(i, n);
      i = n;
      continue;
    }
    out += line.slice(i, open) + ' '.repeat(close + run - open);
    i = close + run;
  }
  return out + line.slice(i);
}

/** The inside of `[[...]]` as a link, or null when it names nothing (`[[]]`, `[[#heading]]`). */
function wikiLink(inner: string): LinkRef | null {
  let target = inner;
  const bar = target.indexOf('|');
  if (bar >= 0) target = target.slice(0, bar);
  const anchor = target.search(/[#^]/);
  if (anchor >= 0) target = target.slice(0, anchor);
  target = target.replace(/\\$/, '').trim();
  if (target === '' || target.length > MAX_TARGET_CHARS) return null;
  // Slugs are NFC (the server's path rule); the target stays as written.
  const name = target.normalize('NFC');
  if (!name.includes('/')) return isValidSlug(name) ? { target, slug: name } : { target };
  const slash = name.indexOf('/');
  const type = TYPE_PREFIXES[name.slice(0, slash)];
  const rest = name.slice(slash + 1);
  if (type && !rest.includes('/')) return isValidSlug(rest) ? { target, type, slug: rest } : { target };
  const ref = pageRefOfPath(name) ?? pageRefOfPath(`${name}.md`);
  return ref ? { target, type: ref.type, slug: ref.slug } : { target };
}

/**
 * The markdown link whose `](` is at `at` in `line`, when it names a relative `.md` page: its position (the
 * `[` that opens its text) and the page path, resolved against `folder`. Null otherwise.
 */
function markdownLink(line: string, at: number, folder: string): { at: number; ref: LinkRef } | null {
  // The `[` that opens the link text: brackets balance inside it.
  let depth = 0;
  let open = -1;
  for (let i = at; i >= 0 && at - i <= 2 * MAX_TARGET_CHARS; i--) {
    const ch = line[i];
    if (ch === ']') depth++;
    else if (ch === '[' && --depth === 0) {
      open = i;
      break;
    }
  }
  if (open < 0 || line[open - 1] === '!') return null;
  const dest = destination(line, at + 2);
  if (dest === null) return null;
  const target = dest.replace(/[#?].*$/, '');
  if (target === '' || target.length > MAX_TARGET_CHARS || SCHEME.test(target) || target.startsWith('/')) return null;
  if (!target.toLowerCase().endsWith('.md')) return null;
  const path = resolveRelative(folder, decode(target));
  return path === null ? null : { at: open, ref: { target, path } };
}

/** A link destination from `start` (after `(`): `<...>`, or up to a space or the unbalanced `)`. Null if malformed. */
function destination(line: string, start: number): string | null {
  let i = start;
  while (line[i] === ' ' || line[i] === '\t') i++;
  if (line[i] === '<') {
    const close = line.indexOf('>', i + 1);
    if (close < 0) return null;
    const dest = line.slice(i + 1, close);
    return dest.includes('<') ? null : dest;
  }
  let depth = 0;
  let j = i;
  for (; j < line.length && j - i <= MAX_TARGET_CHARS; j++) {
    const ch = line[j]!;
    if (ch === ' ' || ch === '\t') break;
    if (ch === '(') depth++;
    else if (ch === ')') {
      if (depth === 0) break;
      depth--;
    }
  }
  const dest = line.slice(i, j);
  let k = j;
  while (line[k] === ' ' || line[k] === '\t') k++;
  // A title may follow the destination; then the link closes.
  return line[k] === ')' || line[k] === '"' || line[k] === "'" || line[k] === '(' ? dest : null;
}

const decode = (s: string): string => {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
};

/** `rel` (a relative path) against `folder`, `.` and `..` applied; null when it leaves the repository or names no page. */
export function resolveRelative(folder: string, rel: string): string | null {
  const parts = folder === '' ? [] : folder.split('/');
  for (const seg of rel.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (parts.length === 0) return null;
      parts.pop();
    } else parts.push(seg);
  }
  const path = parts.join('/').normalize('NFC');
  return storedPathProblem(path) === null ? path : null;
}
