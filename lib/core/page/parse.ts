/**
 * The page model: frontmatter, preamble and `## ` sections (docs/concepts.md "Pages and paths", "Section-aware diff"),
 * plus the page types and their client-side directory layout.
 *
 * Pure and web-standard (no `node:` imports): the server, the command-line client and the agent tool
 * server all parse pages with this module, on Node and on Workers.
 *
 * `parsePage` never throws. How a text becomes a page, in order:
 *  1. Normalisation: a leading byte-order mark (U+FEFF) is dropped and every line ending (CRLF, or a lone
 *     CR as CommonMark allows) becomes LF. `ParsedPage.text` is that normalised text.
 *  2. A document that is empty or holds only whitespace is a valid empty page: frontmatter `{}`, no
 *     preamble, no sections.
 *  3. Frontmatter: when the first line is `---` (trailing spaces/tabs tolerated), the YAML block runs to the
 *     next line that is `---`; the body starts after that line. No opening line, or no closing line, means
 *     the page has no frontmatter (`frontmatter: null`, the whole text is body); so does YAML that does not
 *     parse to a mapping. An empty block (`---` directly followed by `---`, or only comments) is the empty
 *     mapping `{}`. Later `---` lines (thematic breaks) are ordinary body text.
 *  4. YAML is parsed with the `yaml` package, core schema, with defences: a block over
 *     {@link MAX_FRONTMATTER_BYTES}, nesting deeper than {@link MAX_FRONTMATTER_DEPTH}, more than
 *     {@link MAX_FRONTMATTER_NODES} values once aliases are expanded, more than 100 alias expansions
 *     (`maxAliasCount`), a cycle, or a duplicate key all count as "does not parse". YAML 1.1 explicit tags
 *     (`!!binary`, `!!timestamp`, ...) are not resolved, so values are always JSON data: strings, numbers,
 *     booleans, null, arrays and plain objects.
 *  5. Sections: a heading is a line that starts with `## ` at column 0 (`##` alone, `##x`, ` ## x` and
 *     `### x` are not headings; deeper headings stay inside their parent's body). A `## ` line inside a
 *     fenced code block is not a heading: a fence opens with a line of at least three backticks or tildes
 *     indented by at most three spaces (a backtick fence's info string may not contain a backtick) and closes
 *     with a line of the same character, at least as long, indented by at most three spaces and followed
 *     only by spaces/tabs; an unclosed fence runs to the end of the document. This is CommonMark's rule, so a
 *     page splits into sections exactly where a Markdown renderer shows `<h2>` headings (fences only:
 *     HTML blocks and comments are not interpreted).
 *  6. The preamble is the body text before the first heading. Every section body (and the preamble) has its
 *     trailing blank lines (lines of only spaces/tabs) removed; leading blank lines and trailing spaces on
 *     the last text line are kept, so `from`/`to` are faithful slices of the page.
 */
import { isMap, isPair, isScalar, isSeq, parseDocument } from 'yaml';
import { pagePathProblem } from './path.ts';
import { parseSimpleFrontmatter } from './simple-yaml.ts';

// ---------------------------------------------------------------------------------------------------------
// Page types and layout
// ---------------------------------------------------------------------------------------------------------

export const PAGE_TYPES = ['concept', 'entity', 'analysis', 'source'] as const;
export type PageType = (typeof PAGE_TYPES)[number];

/** Directory of each page type in the client-side layout, and whether its files carry a `.md` suffix. */
const LAYOUT: Record<PageType, { dir: string; ext: string }> = {
  concept: { dir: 'wiki/concepts/', ext: '.md' },
  entity: { dir: 'wiki/entities/', ext: '.md' },
  analysis: { dir: 'wiki/analyses/', ext: '.md' },
  source: { dir: 'raw/sessions/', ext: '' },
};

export const isPageType = (value: unknown): value is PageType =>
  typeof value === 'string' && (PAGE_TYPES as readonly string[]).includes(value);

/**
 * A slug is one path segment, and every layout path it makes is a page path the server accepts for a write
 * (lib/core/page/path.ts {@link pagePathProblem}, the server's own rule): `<slug>.md` in the wiki folders and
 * `<slug>` in raw/sessions. So no `/`, `\\`, control character or character Windows forbids; not `.`, `..`,
 * `.git` in any spelling, a Windows device name (`CON`, `nul.txt`); not starting with `-`; not ending with
 * a space or period; Unicode NFC; the path at most 512 bytes. One rule: a slug is valid exactly when the
 * server would take its pages.
 */
export function isValidSlug(slug: unknown): slug is string {
  return (
    typeof slug === 'string' &&
    slug.length > 0 &&
    !slug.includes('/') &&
    pagePathProblem(`${LAYOUT.analysis.dir}${slug}${LAYOUT.analysis.ext}`) === null &&
    pagePathProblem(`${LAYOUT.source.dir}${slug}${LAYOUT.source.ext}`) === null
  );
}

/**
 * Path of a page in the client-side layout: `wiki/concepts/<slug>.md`, `wiki/entities/<slug>.md`,
 * `wiki/analyses/<slug>.md`, `raw/sessions/<slug>`. Throws a RangeError for an unknown type or a slug that
 * is not a single path segment ({@link isValidSlug}).
 */
export function pagePathFor(type: PageType, slug: string): string {
  if (!isPageType(type)) throw new RangeError(`unknown page type: ${String(type)}`);
  if (!isValidSlug(slug)) throw new RangeError(`invalid slug: ${JSON.stringify(slug)}`);
  const { dir, ext } = LAYOUT[type];
  return dir + slug + ext;
}

/** The type and slug of a layout path, or null when the path is not a page of the layout. */
export function pageRefOfPath(path: string): { type: PageType; slug: string } | null {
  if (typeof path !== 'string') return null;
  for (const type of PAGE_TYPES) {
    const { dir, ext } = LAYOUT[type];
    if (!path.startsWith(dir)) continue;
    const rest = path.slice(dir.length);
    if (ext !== '' && !rest.endsWith(ext)) return null;
    const slug = rest.slice(0, rest.length - ext.length);
    return isValidSlug(slug) ? { type, slug } : null;
  }
  return null;
}

/** The page type of a layout path (`wiki/concepts/x.md` → `concept`), or null outside the layout. */
export function typeOfPath(path: string): PageType | null {
  return pageRefOfPath(path)?.type ?? null;
}

// ---------------------------------------------------------------------------------------------------------
// Parsed page
// ---------------------------------------------------------------------------------------------------------

/** Frontmatter mapping: JSON data only (see module comment). */
export type Frontmatter = Record<string, unknown>;

export interface PageSection {
  /** The heading line without trailing blanks, e.g. `"## Decision"`. */
  heading: string;
  /** Lines after the heading up to the next heading, joined with LF, trailing blank lines removed. */
  body: string;
  /** 1-based line number of the heading in `ParsedPage.text`. */
  line: number;
}

/** Why a page has no usable frontmatter. */
export type FrontmatterProblem =
  | 'missing' // the first line is not `---`
  | 'unterminated' // `---` opens a block that no `---` line closes
  | 'invalid' // YAML syntax error, duplicate key, alias cycle or alias bomb
  | 'not-mapping' // valid YAML that is a scalar or a list
  | 'too-large' // block over MAX_FRONTMATTER_BYTES or over MAX_FRONTMATTER_NODES values
  | 'too-deep'; // nesting over MAX_FRONTMATTER_DEPTH

export interface ParsedPage {
  /** The normalised text (BOM dropped, line endings LF). */
  text: string;
  /** The document is empty or whitespace only: a valid empty page. */
  empty: boolean;
  /** The frontmatter mapping; null when the page has none or it is unusable (see `frontmatterProblem`). */
  frontmatter: Frontmatter | null;
  /** Set exactly when `frontmatter` is null. */
  frontmatterProblem?: FrontmatterProblem;
  /** Human-readable detail for `frontmatterProblem`. */
  frontmatterError?: string;
  /** The raw YAML between the two `---` lines; null when there is no closed block. */
  frontmatterRaw: string | null;
  /** Body text before the first heading, trailing blank lines removed (`""` when none). */
  preamble: string;
  sections: PageSection[];
}

/** Frontmatter blocks larger than this (UTF-16 code units) are not parsed. */
export const MAX_FRONTMATTER_BYTES = 256 * 1024;
/** Deepest accepted nesting of frontmatter values (the mapping itself is depth 1). */
export const MAX_FRONTMATTER_DEPTH = 64;
/** Most values accepted in a frontmatter block once aliases are expanded. */
export const MAX_FRONTMATTER_NODES = 100_000;
/** yaml's own alias-expansion guard. */
const MAX_ALIAS_COUNT = 100;

const BLANK = /^[ \t]*$/;
/** An empty document: ASCII whitespace only (NBSP and other Unicode spaces are text). */
const BLANK_DOC = /^[ \t\n\f\v]*$/;

/** CRLF and lone CR → LF; a leading BOM dropped. */
export function normalizeText(text: string): string {
  let t = typeof text === 'string' ? text : text == null ? '' : String(text);
  if (t.charCodeAt(0) === 0xfeff) t = t.slice(1);
  return t.includes('\r') ? t.replace(/\r\n?/g, '\n') : t;
}

/** Whether a normalised text is an empty page: ASCII whitespace only (rule 2 of the module comment). */
export const isEmptyDocument = (text: string): boolean => BLANK_DOC.test(text);

/** Whether a line is blank: only spaces and tabs. */
export const isBlankLine = (line: string): boolean => BLANK.test(line);

/** Lines [start, end) joined with LF after dropping trailing blank lines. */
export function joinTrimmed(lines: readonly string[], start = 0, end = lines.length): string {
  while (end > start && isBlankLine(lines[end - 1]!)) end--;
  if (end <= start) return '';
  if (end - start === 1) return lines[start]!;
  return lines.slice(start, end).join('\n');
}

/** A text's trailing blank lines removed (LF text). */
export function trimTrailingBlankLines(text: string): string {
  return joinTrimmed(text.split('\n'));
}

const isFrontmatterFence = (line: string | undefined): boolean =>
  line !== undefined && line.startsWith('---') && BLANK.test(line.slice(3));

/** Parse a page. Never throws (see the module comment for the rules). */
export function parsePage(input: string): ParsedPage {
  let text = '';
  try {
    text = normalizeText(input);
    return parseNormalized(text);
  } catch (e) {
    // Defensive only: nothing above is expected to throw. Degrade to a page without structure.
    return {
      text,
      empty: false,
      frontmatter: null,
      frontmatterProblem: 'invalid',
      frontmatterError: `unparseable page: ${errorMessage(e)}`,
      frontmatterRaw: null,
      preamble: '',
      sections: [],
    };
  }
}

function parseNormalized(text: string): ParsedPage {
  if (BLANK_DOC.test(text)) {
    return { text, empty: true, frontmatter: {}, frontmatterRaw: null, preamble: '', sections: [] };
  }
  const lines = text.split('\n');
  let bodyStart = 0;
  let frontmatter: Frontmatter | null = null;
  let frontmatterRaw: string | null = null;
  let problem: FrontmatterProblem | undefined;
  let error: string | undefined;

  const block = frontmatterBlock(lines);
  if (block === null) {
    problem = 'missing';
    error = 'no frontmatter: the first line is not ---';
  } else if (block.close < 0) {
    problem = 'unterminated';
    error = 'frontmatter opened by --- is never closed';
  } else {
    frontmatterRaw = block.raw;
    bodyStart = block.close + 1;
    const r = parseFrontmatterYaml(frontmatterRaw);
    if (r.ok) frontmatter = r.value;
    else {
      problem = r.problem;
      error = r.error;
    }
  }

  const { preamble, sections } = splitSections(lines, bodyStart);
  const page: ParsedPage = { text, empty: false, frontmatter, frontmatterRaw, preamble, sections };
  if (problem) {
    page.frontmatterProblem = problem;
    page.frontmatterError = error;
  }
  return page;
}

/**
 * Where a page's frontmatter block is: null when the first line is not `---`; else the index of the closing
 * `---` line (-1 when none closes it) and the raw YAML between the two (`""` when none closes it). The body
 * starts at `close + 1`. Linear in the block's lines.
 */
export function frontmatterBlock(lines: readonly string[]): { close: number; raw: string } | null {
  if (!isFrontmatterFence(lines[0])) return null;
  for (let i = 1; i < lines.length; i++) {
    if (isFrontmatterFence(lines[i])) return { close: i, raw: lines.slice(1, i).join('\n') };
  }
  return { close: -1, raw: '' };
}

/**
 * The `## ` heading rule of {@link splitSections}, one body line at a time: `heading(line)` says whether the
 * line opens a section, keeping track of the fenced code blocks it has seen (a `## ` line inside one is text).
 */
export class HeadingScanner {
  private fenceChar = ''; // '`' or '~' while inside a fence
  private fenceLen = 0;

  heading(line: string): boolean {
    if (this.fenceChar) {
      if (isClosingFence(line, this.fenceChar, this.fenceLen)) this.fenceChar = '';
      return false;
    }
    if (line.startsWith('## ')) return true;
    const open = openingFence(line);
    if (open) {
      this.fenceChar = open.char;
      this.fenceLen = open.len;
    }
    return false;
  }
}

/**
 * Split body lines (from `start`) into the preamble and `## ` sections, skipping fenced code blocks.
 */
export function splitSections(
  lines: readonly string[],
  start = 0,
): { preamble: string; sections: PageSection[] } {
  const sections: PageSection[] = [];
  let preamble = '';
  const scanner = new HeadingScanner();
  let current: { heading: string; line: number; from: number } | null = null;

  const close = (end: number) => {
    if (current) sections.push({ heading: current.heading, body: joinTrimmed(lines, current.from, end), line: current.line });
    else preamble = joinTrimmed(lines, start, end);
  };

  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!;
    if (scanner.heading(line)) {
      close(i);
      current = { heading: trimEndBlanks(line), line: i + 1, from: i + 1 };
    }
  }
  close(lines.length);
  return { preamble, sections };
}

/**
 * The lines of a normalised text (see {@link normalizeText}) that a Markdown renderer shows as prose: the
 * body after a closed frontmatter block, without fenced code blocks (their opening and closing lines
 * included), by the same fence rule as {@link splitSections}. For scanners of page text (lib/links/).
 */
export function proseLines(text: string): string[] {
  const lines = text.split('\n');
  let start = 0;
  if (isFrontmatterFence(lines[0])) {
    for (let i = 1; i < lines.length; i++) {
      if (isFrontmatterFence(lines[i])) {
        start = i + 1;
        break;
      }
    }
  }
  const out: string[] = [];
  let fenceChar = '';
  let fenceLen = 0;
  for (let i = start; i < lines.length; i++) {
    const line = lines[i]!;
    if (fenceChar) {
      if (isClosingFence(line, fenceChar, fenceLen)) fenceChar = '';
      continue;
    }
    const open = openingFence(line);
    if (open) {
      fenceChar = open.char;
      fenceLen = open.len;
      continue;
    }
    out.push(line);
  }
  return out;
}

/** A line without its trailing spaces/tabs (a loop: `/[ \t]+$/` is quadratic on long inner runs). */
export function trimEndBlanks(line: string): string {
  let end = line.length;
  while (end > 0) {
    const c = line.charCodeAt(end - 1);
    if (c !== 32 && c !== 9) break;
    end--;
  }
  return end === line.length ? line : line.slice(0, end);
}

/** An opening code fence: ≤ 3 spaces, then ≥ 3 backticks or tildes (backtick info strings have no backtick). */
function openingFence(line: string): { char: string; len: number } | null {
  let i = 0;
  while (i < 3 && line.charCodeAt(i) === 32) i++;
  const ch = line[i];
  if (ch !== '`' && ch !== '~') return null;
  let j = i;
  while (line[j] === ch) j++;
  const len = j - i;
  if (len < 3) return null;
  if (ch === '`' && line.indexOf('`', j) >= 0) return null;
  return { char: ch, len };
}

function isClosingFence(line: string, ch: string, minLen: number): boolean {
  let i = 0;
  while (i < 3 && line.charCodeAt(i) === 32) i++;
  let j = i;
  while (line[j] === ch) j++;
  return j - i >= minLen && BLANK.test(line.slice(j));
}

// ---------------------------------------------------------------------------------------------------------
// YAML
// ---------------------------------------------------------------------------------------------------------

type YamlResult = { ok: true; value: Frontmatter } | { ok: false; problem: FrontmatterProblem; error: string };

/** Parse a frontmatter block into a mapping of JSON data, with the defences listed in the module comment. */
export function parseFrontmatterYaml(raw: string): YamlResult {
  if (raw.length > MAX_FRONTMATTER_BYTES) {
    return { ok: false, problem: 'too-large', error: `frontmatter larger than ${MAX_FRONTMATTER_BYTES} characters` };
  }
  if (BLANK_DOC.test(raw)) return { ok: true, value: {} };
  // The common simple shape, without the YAML parser (same answer; lib/core/page/simple-yaml.ts).
  const simple = parseSimpleFrontmatter(raw, MAX_FRONTMATTER_NODES);
  if (simple !== null) return { ok: true, value: simple };
  if (prescanDepth(raw) > MAX_FRONTMATTER_DEPTH) {
    return { ok: false, problem: 'too-deep', error: `frontmatter nested deeper than ${MAX_FRONTMATTER_DEPTH}` };
  }
  return parseWithYaml(raw);
}

/** parseFrontmatterYaml through the YAML library: every YAML document (exported for the fast path's tests). */
export function parseWithYaml(raw: string): YamlResult {
  let js: unknown;
  try {
    const doc = parseDocument(raw, {
      prettyErrors: false,
      logLevel: 'silent',
      // yaml's duplicate-key check is quadratic in the number of keys; duplicates are found below instead.
      uniqueKeys: false,
      resolveKnownTags: false,
    });
    if (doc.errors.length > 0) {
      return { ok: false, problem: 'invalid', error: `invalid YAML: ${firstLine(doc.errors[0]!.message)}` };
    }
    const dup = findDuplicateKey(doc.contents);
    if (dup !== null) return { ok: false, problem: 'invalid', error: `invalid YAML: duplicate key ${JSON.stringify(dup)}` };
    js = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    // Alias bombs ("Excessive alias count"), stack exhaustion on pathological input, anything else.
    return { ok: false, problem: 'invalid', error: `invalid YAML: ${firstLine(errorMessage(e))}` };
  }
  if (js === null || js === undefined) return { ok: true, value: {} }; // only comments / directives
  if (typeof js !== 'object' || Array.isArray(js)) {
    return { ok: false, problem: 'not-mapping', error: 'frontmatter is not a mapping' };
  }
  const budget = { nodes: MAX_FRONTMATTER_NODES };
  const copy = toPlainData(js, 1, budget);
  if (copy === TOO_DEEP) return { ok: false, problem: 'too-deep', error: `frontmatter nested deeper than ${MAX_FRONTMATTER_DEPTH}` };
  if (copy === TOO_MANY) return { ok: false, problem: 'too-large', error: `frontmatter has more than ${MAX_FRONTMATTER_NODES} values` };
  return { ok: true, value: copy as Frontmatter };
}

/**
 * A cheap upper-bound-ish estimate of YAML nesting, so pathological input never reaches the (recursive)
 * YAML composer: flow brackets open at once, plus the longest run of compact block indicators (`- - - x`)
 * on one line. Block nesting by indentation needs quadratic text and is bounded by the size cap; the
 * real depth is checked again on the parsed value.
 */
function prescanDepth(raw: string): number {
  let flow = 0;
  let maxFlow = 0;
  let maxCompact = 0;
  let lineStart = true;
  let compact = 0;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i);
    if (c === 10) {
      lineStart = true;
      compact = 0;
      continue;
    }
    if (lineStart) {
      if (c === 32 || c === 9) continue;
      if ((c === 45 /* - */ || c === 63 /* ? */ || c === 58) /* : */ && (raw.charCodeAt(i + 1) === 32 || raw.charCodeAt(i + 1) === 9)) {
        compact++;
        if (compact > maxCompact) maxCompact = compact;
        i++;
        continue;
      }
      lineStart = false;
    }
    if (c === 91 /* [ */ || c === 123 /* { */) {
      flow++;
      if (flow > maxFlow) maxFlow = flow;
    } else if ((c === 93 /* ] */ || c === 125) /* } */ && flow > 0) flow--;
  }
  return Math.max(maxFlow, maxCompact);
}

/** The first duplicate scalar key of any mapping, or null (linear; iterative, aliases not followed). */
function findDuplicateKey(root: unknown): string | null {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const id = scalarKeyId(pair.key);
        if (id !== null) {
          if (seen.has(id)) return id;
          seen.add(id);
        }
        stack.push(pair.key, pair.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) stack.push(item);
    } else if (isPair(node)) {
      stack.push(node.key, node.value);
    }
  }
  return null;
}

/**
 * The property name a scalar key becomes in the parsed mapping (`1`, `1.0` and `"1"` all become "1"; `~`,
 * `null` and an empty key all become ""), so keys that would silently overwrite each other count as
 * duplicates; null for collection keys.
 */
function scalarKeyId(key: unknown): string | null {
  const v = isScalar(key) ? key.value : key;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return null;
  return String(v);
}

const TOO_DEEP = Symbol('too deep');
const TOO_MANY = Symbol('too many');

/**
 * Deep copy into JSON data (plain objects, arrays, strings, finite-or-not numbers, booleans, null). The
 * copy expands shared alias references, so the node budget bounds the size of the response that will
 * carry these values; cycles exceed the depth cap. Keys are copied with defineProperty, so a `__proto__`
 * key stays an ordinary own property.
 */
function toPlainData(v: unknown, depth: number, budget: { nodes: number }): unknown {
  if (--budget.nodes < 0) return TOO_MANY;
  if (v === null || v === undefined) return null;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return v;
    case 'bigint':
      return Number(v);
    case 'object':
      break;
    default:
      return String(v);
  }
  if (depth > MAX_FRONTMATTER_DEPTH) return TOO_DEEP;
  if (Array.isArray(v)) {
    const out: unknown[] = [];
    for (const item of v) {
      const c = toPlainData(item, depth + 1, budget);
      if (c === TOO_DEEP || c === TOO_MANY) return c;
      out.push(c);
    }
    return out;
  }
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? String(v) : v.toISOString();
  if (v instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, item] of v) {
      const c = toPlainData(item, depth + 1, budget);
      if (c === TOO_DEEP || c === TOO_MANY) return c;
      Object.defineProperty(out, String(k), { value: c, enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  if (v instanceof Set) return toPlainData([...v], depth, budget);
  if (ArrayBuffer.isView(v)) return String(v);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const c = toPlainData((v as Record<string, unknown>)[k], depth + 1, budget);
    if (c === TOO_DEEP || c === TOO_MANY) return c;
    Object.defineProperty(out, k, { value: c, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

const firstLine = (s: string): string => s.split('\n')[0]!.slice(0, 200);

function errorMessage(e: unknown): string {
  try {
    return e instanceof Error ? e.message : String(e);
  } catch {
    return 'unknown error';
  }
}
