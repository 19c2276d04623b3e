/** Page text to what people read: frontmatter split off, markdown rendered and sanitised, types grouped. */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { parse as parseYaml } from 'yaml';

export interface ParsedPage {
  /** The frontmatter as parsed, or null when there is none. */
  frontmatter: Record<string, unknown> | null;
  /** Why the frontmatter could not be read, when it could not. */
  frontmatterError?: string;
  body: string;
}

export function splitFrontmatter(text: string): ParsedPage {
  const m = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!m) return { frontmatter: null, body: text };
  const body = text.slice(m[0].length);
  try {
    const data = parseYaml(m[1]!) as unknown;
    if (data === null || data === undefined) return { frontmatter: {}, body };
    if (typeof data !== 'object' || Array.isArray(data)) {
      return { frontmatter: null, frontmatterError: 'the frontmatter is not a mapping', body };
    }
    return { frontmatter: data as Record<string, unknown>, body };
  } catch (e) {
    return { frontmatter: null, frontmatterError: (e as Error).message.split('\n')[0], body };
  }
}

/** A frontmatter value as one line of text. */
export function showValue(v: unknown): string {
  if (Array.isArray(v)) return v.map(showValue).join(', ');
  if (v instanceof Date) return v.toISOString().slice(0, 10);
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

const marked = new Marked({ gfm: true, breaks: false, async: false });

let hooked = false;
function purifier(): typeof DOMPurify {
  if (!hooked) {
    hooked = true;
    // Links out of the page open in a new tab without handing it this window.
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A' && node.hasAttribute('href')) {
        const href = node.getAttribute('href') ?? '';
        if (/^https?:/i.test(href)) {
          node.setAttribute('target', '_blank');
          node.setAttribute('rel', 'noopener noreferrer');
        }
      }
      // An image the author gave no text alternative is treated as decorative: a screen reader skips it
      // instead of spelling out its address.
      if (node.tagName === 'IMG' && !node.hasAttribute('alt')) node.setAttribute('alt', '');
    });
  }
  return DOMPurify;
}

/**
 * Markdown to HTML that is safe to insert: page text is untrusted, so the rendered HTML goes through
 * DOMPurify (no scripts, no event handlers, no javascript: or other unsafe URLs, no forms or frames).
 */
export function renderMarkdown(markdown: string): string {
  const html = marked.parse(markdown) as string;
  return purifier().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style'],
  });
}

/** A search snippet as parts: matches sit between « and »; everything is text, never HTML. */
export function snippetParts(snippet: string): { text: string; match: boolean }[] {
  const parts: { text: string; match: boolean }[] = [];
  const re = /«([^»]*)»/g;
  let last = 0;
  for (let m = re.exec(snippet); m; m = re.exec(snippet)) {
    if (m.index > last) parts.push({ text: snippet.slice(last, m.index), match: false });
    parts.push({ text: m[1]!, match: true });
    last = m.index + m[0].length;
  }
  if (last < snippet.length) parts.push({ text: snippet.slice(last), match: false });
  return parts;
}

export const GROUPS = [
  { type: 'concept', label: 'Concepts', prefix: 'wiki/concepts/' },
  { type: 'entity', label: 'Entities', prefix: 'wiki/entities/' },
  { type: 'analysis', label: 'Analyses', prefix: 'wiki/analyses/' },
  { type: 'source', label: 'Sources', prefix: 'raw/sessions/' },
] as const;

export type PageType = (typeof GROUPS)[number]['type'] | 'other';

export function pageType(path: string): PageType {
  return GROUPS.find((g) => path.startsWith(g.prefix))?.type ?? 'other';
}

/** Pages grouped by type in a fixed order (concepts, entities, analyses, sources, other); empty groups left out. */
export function groupPages<T extends { path: string }>(pages: T[]): { type: PageType; label: string; pages: T[] }[] {
  const all = [...GROUPS.map((g) => ({ type: g.type as PageType, label: g.label })), { type: 'other' as PageType, label: 'Other' }];
  return all
    .map((g) => ({ ...g, pages: pages.filter((p) => pageType(p.path) === g.type) }))
    .filter((g) => g.pages.length > 0);
}

/** "2026-11-23T02:46:50Z" → "2026-11-23 02:46 UTC". */
export function showTime(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The page's file name without .md, for lists. */
export function pageName(path: string): string {
  return (path.split('/').pop() ?? path).replace(/\.md$/i, '');
}
