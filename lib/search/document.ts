/**
 * A page as the full-text index holds it: the frontmatter fields people search (title, tags, summary), its
 * type, the headings and the body, made from the page's bytes with lib/core/page/parse.ts. Pure and cheap (one
 * parse, no regular expression over the whole text but the normalisation).
 */
import { parsePage, typeOfPath } from '../core/page/parse.ts';

export interface SearchDocument {
  /** Frontmatter `title` (a string), or null. */
  title: string | null;
  /** Frontmatter `type` (a string), else the type of the layout path (`wiki/concepts/…` → `concept`), else null. */
  type: string | null;
  /** Frontmatter `tags`: a list (or one value) of strings and numbers, as strings, without duplicates. */
  tags: string[];
  /** Frontmatter `summary` (or `description`), or ''. */
  summary: string;
  /** The `## ` headings (without the marks) and `# ` lines of the preamble, one per line. */
  headings: string;
  /** The rest of the text: preamble and section bodies. */
  body: string;
}

/** Longest text indexed per page, in characters: the rest of a giant page is not searchable. */
export const MAX_INDEXED_CHARS = 1_000_000;

const decoder = new TextDecoder();

/**
 * Control characters become spaces: the snippet markers (lib/search/results.ts) are control characters, so
 * none may come from the page itself.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;
const clean = (s: string) => s.normalize('NFC').replace(CONTROL, ' ');

const scalar = (v: unknown): string | null =>
  typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : null;

export function searchDocument(path: string, content: Uint8Array): SearchDocument {
  let text = decoder.decode(content);
  if (text.length > MAX_INDEXED_CHARS) text = text.slice(0, MAX_INDEXED_CHARS);
  const page = parsePage(text);
  const fm = page.frontmatter ?? {};
  const title = typeof fm.title === 'string' ? clean(fm.title).trim() || null : null;
  const fmType = typeof fm.type === 'string' ? normalizeField(fm.type) : '';
  const type = fmType !== '' ? fmType : typeOfPath(path);
  const tagList = Array.isArray(fm.tags) ? fm.tags : fm.tags === undefined || fm.tags === null ? [] : [fm.tags];
  const tags = [...new Set(tagList.map(scalar).filter((t): t is string => t !== null).map((t) => clean(t).trim()).filter((t) => t !== ''))];
  const summaryValue = scalar(fm.summary) ?? scalar(fm.description) ?? '';

  const headings: string[] = [];
  const body: string[] = [];
  // `# Title` lines of the preamble are headings too (outside code fences, roughly: a fence toggles).
  let fenced = false;
  const preambleKept: string[] = [];
  for (const line of page.preamble.split('\n')) {
    if (/^ {0,3}(```|~~~)/.test(line)) fenced = !fenced;
    if (!fenced && line.startsWith('# ')) headings.push(line.slice(2).trim());
    else preambleKept.push(line);
  }
  body.push(preambleKept.join('\n'));
  for (const s of page.sections) {
    headings.push(s.heading.slice(3).trim());
    body.push(s.body);
  }
  return {
    title,
    type,
    tags,
    summary: clean(summaryValue),
    headings: clean(headings.join('\n')),
    body: clean(body.join('\n')),
  };
}

/** `tag_key` of search_docs: every tag between U+001F marks, so `instr(tag_key, '\x1f' || tag || '\x1f')` is exact. */
export const tagKey = (tags: string[]): string | null => (tags.length === 0 ? null : `\u001f${tags.join('\u001f')}\u001f`);
export const tagNeedle = (tag: string): string => `\u001f${normalizeField(tag)}\u001f`;

/** A `type` or `tag` filter as the index keeps the values: NFC, control characters as spaces, trimmed. */
export const normalizeField = (value: string): string => clean(value).trim();
