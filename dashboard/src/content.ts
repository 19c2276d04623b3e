/** Page text to what people read: frontmatter split off, markdown rendered and sanitised, types grouped. */
import DOMPurify from 'dompurify';
import { Marked } from 'marked';
import { parse as parseYaml } from 'yaml';
import { WIKI_LINK, parseWikiLink, resolveRelativeHref, resolveWikiTarget, type Resolved } from './links.ts';
import { href } from './route.ts';

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

/**
 * What page HTML may not carry. Tags: anything that submits, embeds, runs or draws over the app (`dialog`).
 * Attributes: `class`, `id`, `style`, `role`, `tabindex` and ARIA/data attributes, so a page can never dress
 * up as the app's own alerts, buttons or focus order; `name` (DOM clobbering); and the ones that fetch behind
 * the reader's back (`background`, `srcset`, `sizes`), media being handled below; `download` (a link into
 * this dashboard would save its page instead of opening it).
 */
const SANITIZE = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed', 'dialog', 'frame', 'frameset'],
  FORBID_ATTR: [
    'style',
    'class',
    'id',
    'role',
    'name',
    'tabindex',
    'background',
    'srcset',
    'sizes',
    'popover',
    'popovertarget',
    'popovertargetaction',
    'command',
    'commandfor',
    'download',
  ],
  ALLOW_ARIA_ATTR: false,
  ALLOW_DATA_ATTR: false,
  RETURN_DOM: true as const,
};

/** Where the page is: its links resolve against the repository's pages, relative ones from its folder. */
export interface RenderContext {
  repo: string;
  path: string;
  pages: ReadonlySet<string>;
}

/**
 * Markdown to HTML that is safe to insert: page text is untrusted, so the rendered HTML goes through
 * DOMPurify (no scripts, no event handlers, no javascript: or other unsafe URLs, no forms or frames, none of
 * the attributes in SANITIZE), and then, in DOMPurify's inert document where nothing loads:
 *  - links out of the page (`https:`, `//host`) open in a new tab without this window (`noopener noreferrer`);
 *  - `[[slug]]`, `[[type/slug]]`, `[[slug|text]]` and relative links become links to the page in this
 *    dashboard, or are marked unresolved (with a link to create the page when the target names one) or
 *    ambiguous, when `ctx` is given;
 *  - remote images and media do not load: each becomes a button naming its host (`data-kr-media` = its
 *    index), until the reader asks for it (its index in `load`).
 */
export function renderMarkdown(markdown: string, ctx?: RenderContext, load: ReadonlySet<number> = new Set()): string {
  const html = withoutPolicyTriggers(marked.parse(markdown) as string);
  const body = DOMPurify.sanitize(html, SANITIZE) as HTMLElement;
  const doc = body.ownerDocument;
  fixLinks(body, ctx);
  if (ctx) linkWikiText(doc, body, ctx);
  holdMedia(doc, body, load);
  return body.innerHTML;
}

/**
 * The HTML text without what the dashboard's Content-Security-Policy refuses merely to see parsed: `<style>`
 * elements, `<base>` elements, and the `style` and event-handler (`on…`) attributes of every tag. DOMPurify
 * drops them all anyway, but parsing them at all, even into DOMPurify's inert document, counts as applying an
 * inline style, setting a document base or compiling an inline handler: refused, and logged in the console
 * (several times over) for every page that has one. One pass, linear in the text; a tag's attributes are read
 * as the HTML tokenizer reads them (quoted values, `/` between attributes, a value running on to the next
 * whitespace or `>`), so a handler's name inside a quoted value is text and stays.
 */
export function withoutPolicyTriggers(html: string): string {
  const lower = html.toLowerCase();
  let out = '';
  let at = 0;
  for (let i = lower.indexOf('<', at); i >= 0; i = lower.indexOf('<', at)) {
    if (lower.startsWith('<style', i) && !/[a-z0-9-]/.test(lower[i + 6] ?? '')) {
      const close = lower.indexOf('</style', i);
      const end = close < 0 ? -1 : lower.indexOf('>', close);
      out += html.slice(at, i);
      at = end < 0 ? html.length : end + 1;
      continue;
    }
    if (!/[a-z]/.test(lower[i + 1] ?? '')) {
      out += html.slice(at, i + 1);
      at = i + 1;
      continue;
    }
    const tag = startTag(html, lower, i);
    out += html.slice(at, i);
    // A <base> goes whole; any other tag keeps every attribute but the refused ones.
    if (!(tag.name === 'base')) out += tag.text;
    at = tag.end;
  }
  return out + html.slice(at);
}

const TAG_SPACE = /[\t\n\f\r /]/;

/**
 * The start tag at `i` (`<` followed by a letter) as the HTML tokenizer reads it: its lower-case name, its text
 * without `style` and `on…` attributes, and where it ends (after its `>`, or at the end of the text).
 */
function startTag(html: string, lower: string, i: number): { name: string; text: string; end: number } {
  let j = i + 1;
  while (j < html.length && !TAG_SPACE.test(html[j]!) && html[j] !== '>') j++;
  const name = lower.slice(i + 1, j);
  let text = html.slice(i, j);
  let dropped = false;
  while (j < html.length && html[j] !== '>') {
    const gapStart = j;
    while (j < html.length && TAG_SPACE.test(html[j]!)) j++;
    const gap = html.slice(gapStart, j);
    if (j >= html.length || html[j] === '>') {
      text += gap;
      break;
    }
    // An attribute: its name runs to whitespace, `/`, `>` or `=` (a first `=` belongs to the name).
    const nameStart = j;
    j++;
    while (j < html.length && !TAG_SPACE.test(html[j]!) && html[j] !== '>' && html[j] !== '=') j++;
    const attr = lower.slice(nameStart, j);
    // Its value, if any: `=` (with whitespace around it), then quoted text or text up to whitespace or `>`.
    let k = j;
    while (k < html.length && /[\t\n\f\r ]/.test(html[k]!)) k++;
    if (html[k] === '=') {
      k++;
      while (k < html.length && /[\t\n\f\r ]/.test(html[k]!)) k++;
      const q = html[k];
      if (q === '"' || q === "'") {
        const close = html.indexOf(q, k + 1);
        k = close < 0 ? html.length : close + 1;
      } else {
        while (k < html.length && !/[\t\n\f\r >]/.test(html[k]!)) k++;
      }
      j = k;
    }
    // A dropped attribute takes the space before it along; the next one still gets a separator.
    if (attr === 'style' || attr.startsWith('on')) dropped = true;
    else {
      text += (gap === '' && dropped ? ' ' : gap) + html.slice(nameStart, j);
      dropped = false;
    }
  }
  if (j < html.length) text += '>';
  return { name, text, end: Math.min(j + 1, html.length) };
}

/** A link out of the dashboard: any http(s) address, with or without its `//`, or protocol-relative `//host`. */
const EXTERNAL = /^\s*(https?:|\/\/)/i;

function fixLinks(body: HTMLElement, ctx: RenderContext | undefined): void {
  for (const a of Array.from(body.querySelectorAll<HTMLElement>('a[href], area[href]'))) {
    const target = a.getAttribute('href') ?? '';
    if (EXTERNAL.test(target)) {
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
      continue;
    }
    a.removeAttribute('target');
    // `#x` and `?x` would change this app's own address (its routes live in the hash).
    if (/^\s*[#?]/.test(target)) {
      a.removeAttribute('href');
      continue;
    }
    if (!ctx) continue;
    const r = resolveRelativeHref(target, ctx.path, ctx.pages);
    if (r) markLink(a, r, ctx, a.textContent ?? target);
  }
}

/** An app-made link element for `r` with `text`, replacing nothing: the caller places it. */
function linkElement(doc: Document, r: Resolved, ctx: RenderContext, text: string): HTMLElement {
  const el = doc.createElement(r.kind === 'page' || (r.kind === 'missing' && r.slug) ? 'a' : 'span');
  el.textContent = text;
  markLink(el, r, ctx, text);
  return el;
}

/** Points `el` at the page `r` names, or marks it unresolved or ambiguous, with words for screen readers. */
function markLink(el: HTMLElement, r: Resolved, ctx: RenderContext, text: string): void {
  el.classList.add('wikilink');
  const note = (words: string) => {
    const s = el.ownerDocument.createElement('span');
    s.className = 'sr-only';
    s.textContent = ` (${words})`;
    el.append(s);
  };
  if (r.kind === 'page') {
    el.setAttribute('href', href({ name: 'page', repo: ctx.repo, path: r.path }));
    return;
  }
  if (r.kind === 'ambiguous') {
    el.classList.add('ambiguous');
    el.removeAttribute('href');
    el.setAttribute('title', `“${text}” is ambiguous: ${r.paths.join(', ')}`);
    note(`ambiguous: ${r.paths.join(' or ')}`);
    return;
  }
  el.classList.add('unresolved');
  if (r.slug && el.tagName === 'A') {
    el.setAttribute('href', href({ name: 'new', repo: ctx.repo, type: r.type, slug: r.slug }));
    el.setAttribute('title', `No page ${r.path ?? r.slug} yet: create it`);
    note('no such page yet: create it');
  } else {
    el.removeAttribute('href');
    el.setAttribute('title', `No page ${r.path ?? ''} in this repository`.replace('  ', ' '));
    note('no such page');
  }
}

/** Text nodes outside links and code, with their `[[...]]` turned into links. */
function linkWikiText(doc: Document, body: HTMLElement, ctx: RenderContext): void {
  const walker = doc.createTreeWalker(body, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) =>
      n.parentElement?.closest('a, code, pre') ? NodeFilter.FILTER_REJECT : n.nodeValue?.includes('[[') ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP,
  });
  const texts: Text[] = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) texts.push(n as Text);
  for (const t of texts) {
    const value = t.nodeValue ?? '';
    const parts: (string | Node)[] = [];
    let last = 0;
    for (const m of value.matchAll(WIKI_LINK)) {
      const link = parseWikiLink(m[1]!);
      if (!link) continue;
      if (m.index! > last) parts.push(value.slice(last, m.index));
      parts.push(linkElement(doc, resolveWikiTarget(link.target, ctx.pages), ctx, link.text));
      last = m.index! + m[0].length;
    }
    if (parts.length === 0) continue;
    if (last < value.length) parts.push(value.slice(last));
    t.replaceWith(...parts);
  }
}

const MEDIA = 'img, video, audio';

/** The addresses an element of MEDIA would fetch. */
function mediaUrls(el: Element): string[] {
  const urls = [el.getAttribute('src'), el.getAttribute('poster')];
  for (const inner of Array.from(el.querySelectorAll('source[src], track[src]'))) urls.push(inner.getAttribute('src'));
  return urls.filter((u): u is string => u !== null && u.trim() !== '');
}

function hostOf(url: string): string | null {
  try {
    const u = new URL(url.trim().startsWith('//') ? `https:${url.trim()}` : url.trim());
    return /^https?:$/.test(u.protocol) ? u.host : null;
  } catch {
    return null;
  }
}

/** Remote images, video and audio become buttons that load them (`load` holds the indices asked for). */
function holdMedia(doc: Document, body: HTMLElement, load: ReadonlySet<number>): void {
  let index = 0;
  for (const el of Array.from(body.querySelectorAll(MEDIA))) {
    if (el.parentElement?.closest('video, audio')) continue;
    const urls = mediaUrls(el);
    const remote = urls.filter((u) => !/^data:/i.test(u.trim()));
    if (remote.length === 0) continue;
    const kind = el.tagName === 'IMG' ? 'image' : el.tagName === 'VIDEO' ? 'video' : 'audio';
    const alt = (el.getAttribute('alt') ?? el.getAttribute('title') ?? '').trim();
    const hosts = remote.map(hostOf);
    const secure = remote.every((u) => /^(https:)?\/\//i.test(u.trim()));
    const n = index++;
    if (secure && load.has(n)) {
      // Asked for: loaded over https even where the dashboard itself is served over http.
      for (const node of [el, ...Array.from(el.querySelectorAll('source, track'))]) {
        for (const attr of ['src', 'poster']) {
          const v = node.getAttribute(attr)?.trim();
          if (v?.startsWith('//')) node.setAttribute(attr, `https:${v}`);
        }
      }
      if (kind !== 'image') el.setAttribute('controls', '');
      continue;
    }
    const what = `${kind}${alt ? ` “${alt}”` : ''}`;
    if (secure) {
      const b = doc.createElement('button');
      b.type = 'button';
      b.className = 'media-blocked';
      b.dataset.krMedia = String(n);
      b.textContent = `Load ${what} from ${[...new Set(hosts)].join(', ')}`;
      el.replaceWith(b);
    } else {
      // Plain http (the policy forbids it) or an address relative to the page: never loaded here.
      const s = doc.createElement('span');
      s.className = 'media-blocked';
      const at = hosts.findIndex((h) => h !== null);
      const host = at >= 0 ? hosts[at] : null;
      s.textContent = host ? `The ${what} from ${host} is not loaded (not a secure address): ` : `The ${what} (${remote[0]}) is not available here.`;
      if (host) {
        const a = doc.createElement('a');
        a.href = remote[at]!.trim();
        a.target = '_blank';
        a.rel = 'noopener noreferrer';
        a.textContent = 'open it in a new tab';
        s.append(a);
      }
      el.replaceWith(s);
    }
  }
  // An image the author gave no text alternative is decorative: a screen reader skips it instead of
  // spelling out its address.
  for (const img of Array.from(body.querySelectorAll('img:not([alt])'))) img.setAttribute('alt', '');
}

/** The title and summary a page gives itself in its frontmatter. */
export function pageMeta(text: string): { title?: string; summary?: string; type?: string } {
  const fm = splitFrontmatter(text).frontmatter ?? {};
  const str = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : typeof v === 'number' ? String(v) : undefined);
  return { title: str(fm.title), summary: str(fm.summary) ?? str(fm.description), type: str(fm.type) };
}

/** `[text](target)` in a snippet (not an image's `![…](…)`): one line, no brackets in the text, no spaces in the target. */
const MARKDOWN_LINK = /(?<!!)\[([^\[\]\n]{1,300})\]\(([^()\s]{1,2000})\)/g;

const escapeHtml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * A search snippet as HTML that is safe to insert: the page's text stays text (a `<tag>` in it shows as
 * written), its matches (between « and ») are `<mark>`, and its links are links as in the page view:
 * `[[slug]]`, `[[type/slug]]`, `[[slug|text]]` and `[text](relative.md)` resolve against the repository's
 * pages at head in `ctx` (unresolved and ambiguous ones marked the same way), `[text](https://…)` opens in a
 * new tab; through the same sanitiser and the same link code as renderMarkdown. A link the snippet cut in
 * half stays text. A link with a match inside is marked as a whole. Without `ctx` (the pages not known yet),
 * `[[…]]` stays as written.
 */
export function renderSnippet(snippet: string, ctx?: RenderContext): string {
  // The text without the match marks, and which of its characters are matched.
  let text = '';
  const matched: boolean[] = [];
  for (const p of snippetParts(snippet)) {
    text += p.text;
    for (let i = 0; i < p.text.length; i++) matched.push(p.match);
  }
  const marked = (from: number, to: number) => matched.slice(from, to).some(Boolean);
  // The links, in order, never overlapping: a wiki link first where both start (`[[a]](b)` is a wiki link).
  const links: { from: number; to: number; html: string }[] = [];
  for (const m of text.matchAll(WIKI_LINK)) {
    if (parseWikiLink(m[1]!)) links.push({ from: m.index!, to: m.index! + m[0].length, html: escapeHtml(m[0]) });
  }
  for (const m of text.matchAll(MARKDOWN_LINK)) {
    const from = m.index!;
    const to = from + m[0].length;
    if (links.some((l) => from < l.to && l.from < to)) continue;
    links.push({ from, to, html: `<a href="${escapeHtml(m[2]!)}">${escapeHtml(m[1]!)}</a>` });
  }
  links.sort((a, b) => a.from - b.from);
  let html = '';
  const plain = (from: number, to: number) => {
    // Runs of matched and unmatched characters.
    let i = from;
    while (i < to) {
      let j = i;
      while (j < to && matched[j] === matched[i]) j++;
      const part = escapeHtml(text.slice(i, j));
      html += matched[i] ? `<mark>${part}</mark>` : part;
      i = j;
    }
  };
  let at = 0;
  for (const l of links) {
    plain(at, l.from);
    html += marked(l.from, l.to) ? `<mark>${l.html}</mark>` : l.html;
    at = l.to;
  }
  plain(at, text.length);
  const body = DOMPurify.sanitize(html, SANITIZE) as HTMLElement;
  fixLinks(body, ctx);
  if (ctx) linkWikiText(body.ownerDocument, body, ctx);
  return body.innerHTML;
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

/** The strings of a list held in untrusted JSON (an activity event's `paths` or `merged`); anything else is left out. */
export function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((p): p is string => typeof p === 'string') : [];
}
