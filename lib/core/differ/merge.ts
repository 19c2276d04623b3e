/**
 * Section merge (docs/api.md "Pages", the push route's "Section merge"): three versions of one file — *base* (the file at the
 * writer's parent commit), *theirs* (the file at head) and *ours* (the pushed text) — merged three ways on the
 * page structure the differ uses (lib/core/page/parse.ts). Pure and web-standard: the server merges stale pushes
 * with it, and the clients use it to explain what a merge did.
 *
 * Rules, on pages (all three parse with frontmatter; an empty document is an empty page):
 *  - Frontmatter key by key: changed (added, removed, altered) on one side only → that side; the same change on
 *    both sides → taken once; a list of strings on both changed sides merges as a set (base, plus what either
 *    side added, minus what either side removed; theirs' order, then ours' additions in ours' order); any
 *    other key changed differently on both sides → conflict `frontmatter.<key>`. Every key is kept as text,
 *    whatever its name (`__proto__`, `constructor`: keys live in Maps, never as object properties).
 *  - The frontmatter block as text: a side that did not change it takes the other side's block as written;
 *    when both changed it (differently), the merged block is theirs with ours' key changes written into it
 *    (ours' new keys after the key that precedes them in ours). That represents a side's change only when the
 *    change is one of keys' values: a side that also changed comments, key order or formatting (its block is
 *    not what writing its key changes into the base's block gives) while the other side changed the block too
 *    → conflict `frontmatter`; so is a block over {@link MERGE_YAML_CHARS} that both sides changed.
 *  - The preamble and each `## ` section, paired by heading as the differ pairs them (the n-th occurrence of a
 *    heading with the n-th): changed on one side only → that side; added on one side → added, after the part
 *    that precedes it on that side; deleted on one side and unchanged on the other → deleted; deleted on one
 *    side and changed on the other → conflict; changed on both sides → a line-level three-way merge of its
 *    body (./merge-lines.ts), a conflict when that does not merge; the same text on both sides → that text.
 *    Order: theirs', with ours' additions placed as above.
 *  - A file that does not parse as a page (no frontmatter, or frontmatter that is not a mapping, on any of the
 *    three) merges line by line over the whole text; a conflict there is named `_preamble`, as the differ
 *    names its whole-file entry.
 * Conflicts are named `frontmatter`, `frontmatter.<key>`, `_preamble` or the heading (`## Decision`; a
 * repeated heading by its own text, once).
 *
 * The merged text keeps the bytes of every part it takes unchanged from a side (its lines and the blank lines
 * after it); only parts merged line by line, or moved next to a part from the other side, are re-joined. When
 * theirs and ours are the same, or one side equals the base, the result is the other side byte for byte.
 *
 * Cost: linear in the three texts (maps from a part's key to where it is, never a search inside a loop), plus
 * the line merges' Myers work, which ./merge-lines.ts bounds per diff and per merge. The work is written as
 * steps that pause every few milliseconds: {@link mergePages} runs them at once (the clients), and
 * {@link mergePagesAsync} hands the event loop a turn at each pause (the server: no merge holds other requests
 * for long, on Node as in a Durable Object).
 */
import { isCollection, isMap, isNode, isScalar, parseDocument, type Document, type Pair, type YAMLMap } from 'yaml';
import {
  frontmatterBlock,
  HeadingScanner,
  isBlankLine,
  isEmptyDocument,
  normalizeText,
  parseFrontmatterYaml,
  trimEndBlanks,
} from '../page/parse.ts';
import { canonical } from './frontmatter.ts';
import { MergePace, mergeLineSteps } from './merge-lines.ts';
import { runSteps, runStepsAsync, type Steps } from './budget.ts';

/** Name of the preamble (and of the whole text of a file that is not a page) in `conflicting` and `parts`. */
export const MERGE_PREAMBLE = '_preamble';
/** Name in `conflicting` of a frontmatter block both sides changed where a side's change is not only keys' values. */
export const MERGE_FRONTMATTER = 'frontmatter';
/**
 * Largest frontmatter block (characters) merged key by key when both sides changed it: the YAML library reads
 * and writes one at some 2 µs a character, and a merge pauses only between such steps. A larger block both
 * sides changed is a conflict on `frontmatter`.
 */
export const MERGE_YAML_CHARS = 16 * 1024;

/** Which side a merged part came from: `theirs`, `ours`, or `both` (merged line by line, or the same change). */
export type MergeSide = 'theirs' | 'ours' | 'both';

export interface MergedPart {
  /** `frontmatter.<key>`, `_preamble` or a heading. */
  name: string;
  /** What happened to it against the base. */
  change: 'added' | 'modified' | 'removed';
  side: MergeSide;
}

export type PageMerge =
  | {
      clean: true;
      text: string;
      /** The parts that changed against the base, in the order of the merged page (removed ones last). */
      parts: MergedPart[];
    }
  | { clean: false; conflicting: string[] };

/** Merges `ours` into `theirs` over their common `base` (see the module comment). Never throws on any input. */
export function mergePages(base: string, theirs: string, ours: string): PageMerge {
  return runSteps(mergeSteps(base, theirs, ours));
}

/**
 * {@link mergePages}, handing the event loop a turn every few milliseconds of work (./merge-lines.ts
 * `MergePace`): for a server, where a merge of a large page must not hold other requests meanwhile.
 */
export function mergePagesAsync(base: string, theirs: string, ours: string): Promise<PageMerge> {
  return runStepsAsync(mergeSteps(base, theirs, ours));
}

/** The merge as steps (./budget.ts): yields where it may pause. Never throws. */
export function* mergeSteps(base: string, theirs: string, ours: string): Steps<PageMerge> {
  try {
    return yield* merge(base, theirs, ours, new MergePace());
  } catch {
    // Defensive only: nothing above is expected to throw. What could not be merged is the whole file.
    return { clean: false, conflicting: [MERGE_PREAMBLE] };
  }
}

function* merge(base: string, theirs: string, ours: string, pace: MergePace): Steps<PageMerge> {
  const b = normalizeText(base);
  const t = normalizeText(theirs);
  const o = normalizeText(ours);
  if (t === o || b === t) return { clean: true, text: ours, parts: yield* sidesOfText(b, o, b === t ? 'ours' : 'both', pace) };
  if (b === o) return { clean: true, text: theirs, parts: yield* sidesOfText(b, t, 'theirs', pace) };
  const lb = yield* layoutOf(b, pace);
  const lt = lb && (yield* layoutOf(t, pace));
  const lo = lt && (yield* layoutOf(o, pace));
  if (!lb || !lt || !lo) return yield* mergeWholeText(b, t, o, pace);
  return yield* new PageMerger(lb, lt, lo, pace).run();
}

/** The parts changed between `from` and `to`, all from one side (a merge that took one side whole). */
function* sidesOfText(from: string, to: string, side: MergeSide, pace: MergePace): Steps<MergedPart[]> {
  if (from === to) return [];
  const a = yield* layoutOf(from, pace);
  const c = a && (yield* layoutOf(to, pace));
  if (!a || !c) return [{ name: MERGE_PREAMBLE, change: 'modified', side }];
  const parts: MergedPart[] = [];
  for (const key of unionKeys(c.fm, a.fm)) {
    const change = fieldChange(a.fm, c.fm, key);
    if (change) parts.push({ name: `frontmatter.${key}`, change, side });
  }
  const before = new Map(a.chunks.map((x) => [x.key, x]));
  const after = new Set(c.chunks.map((x) => x.key));
  for (const x of c.chunks) {
    const old = before.get(x.key);
    if (!old) parts.push({ name: x.name, change: 'added', side });
    else if (!sameBody(old, x)) parts.push({ name: x.name, change: 'modified', side });
    if (pace.tick(1 + x.end - x.from)) yield;
  }
  for (const x of a.chunks) if (!after.has(x.key)) parts.push({ name: x.name, change: 'removed', side });
  return parts;
}

/** A frontmatter mapping with its keys in a Map: no key name can collide with an object's own machinery. */
type Mapping = ReadonlyMap<string, unknown>;

function fieldChange(a: Mapping, b: Mapping, key: string): MergedPart['change'] | null {
  if (!a.has(key)) return b.has(key) ? 'added' : null;
  if (!b.has(key)) return 'removed';
  return canonical(a.get(key)) === canonical(b.get(key)) ? null : 'modified';
}

const unionKeys = (first: Mapping, second: Mapping): string[] => {
  const keys = [...first.keys()];
  for (const k of second.keys()) if (!first.has(k)) keys.push(k);
  return keys;
};

// ---------------------------------------------------------------------------------------------------------
// Lines, in steps
// ---------------------------------------------------------------------------------------------------------

/** `text.split('\n')`, pausing as it goes. */
function* linesOf(text: string, pace: MergePace): Steps<string[]> {
  const out: string[] = [];
  let at = 0;
  for (;;) {
    const nl = text.indexOf('\n', at);
    if (nl < 0) {
      out.push(text.slice(at));
      return out;
    }
    out.push(text.slice(at, nl));
    const units = 1 + ((nl - at) >> 5);
    at = nl + 1;
    if (pace.tick(units)) yield;
  }
}

/** The lines of an LF text as ./line.ts `splitLines` gives them ('' has none; a final line break adds none). */
function* splitLinesOf(text: string, pace: MergePace): Steps<string[]> {
  if (text === '') return [];
  const lines = yield* linesOf(text, pace);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** `lines` joined with LF, in pieces (a join of pieces of a few thousand lines, then of the pieces). */
function* joinLines(lines: readonly string[], pace: MergePace): Steps<string> {
  if (lines.length <= 4096) return lines.join('\n');
  const pieces: string[] = [];
  for (let i = 0; i < lines.length; i += 4096) {
    pieces.push(lines.slice(i, i + 4096).join('\n'));
    if (pace.tick(4096)) yield;
  }
  return pieces.join('\n');
}

// ---------------------------------------------------------------------------------------------------------
// Whole-text merge (files that are not pages)
// ---------------------------------------------------------------------------------------------------------

function* mergeWholeText(b: string, t: string, o: string, pace: MergePace): Steps<PageMerge> {
  const r = yield* mergeLineSteps(yield* splitLinesOf(b, pace), yield* splitLinesOf(t, pace), yield* splitLinesOf(o, pace), pace);
  if (!r.clean) return { clean: false, conflicting: [MERGE_PREAMBLE] };
  // The final newline: theirs' unless only ours changed it.
  const nl = (s: string) => s.endsWith('\n');
  const finalNewline = nl(t) === nl(b) ? nl(o) : nl(t);
  const text = r.lines.length === 0 ? '' : (yield* joinLines(r.lines, pace)) + (finalNewline ? '\n' : '');
  return { clean: true, text, parts: [{ name: MERGE_PREAMBLE, change: 'modified', side: 'both' }] };
}

// ---------------------------------------------------------------------------------------------------------
// Pages: the parts of a page as raw lines
// ---------------------------------------------------------------------------------------------------------

/**
 * One part of a page's body: the preamble or a section, as a range of its page's lines (no copy): its own
 * lines [from, end) (the heading first, for a section) without the blank lines that end it, which are
 * [end, to).
 */
interface Chunk {
  /**
   * Pairing key: `_preamble`, or the heading for its first occurrence and `<n>\u0000<heading>` for the n-th
   * after it (a heading starts with `## `, so no key of one kind can be one of another).
   */
  key: string;
  /** Name in reports: `_preamble` or the heading. */
  name: string;
  /** A section (its first line is the heading), not the preamble. */
  section: boolean;
  /** Its page's lines. */
  src: readonly string[];
  from: number;
  end: number;
  to: number;
  /** Last part of its page. */
  last: boolean;
  /** Its page ends with a line break. */
  finalNewline: boolean;
}

/** Whether two parts have the same body (the parser's body: the lines after the heading, trailing blank lines removed). */
function sameBody(a: Chunk, b: Chunk): boolean {
  const af = a.section ? a.from + 1 : a.from;
  const bf = b.section ? b.from + 1 : b.from;
  const n = a.end - af;
  if (n !== b.end - bf) return false;
  for (let i = 0; i < n; i++) if (a.src[af + i] !== b.src[bf + i]) return false;
  return true;
}

/** A part's body lines (a copy). */
const bodyLines = (c: Chunk | undefined): string[] => (c ? c.src.slice(c.section ? c.from + 1 : c.from, c.end) : []);

interface PageLayout {
  /** The frontmatter, keys in the block's order. */
  fm: Mapping;
  /** The YAML between the fences as written; null for an empty document (no block). */
  raw: string | null;
  /** The frontmatter block's lines, `---` fences included, and the blank lines after it when no preamble follows. */
  front: string[];
  /** How many of `front`'s lines are the block itself (fences included). */
  blockLines: number;
  chunks: Chunk[];
  finalNewline: boolean;
}

/**
 * A page's layout, by the rules of lib/core/page/parse.ts (the same frontmatter block and YAML, the same heading
 * and fence rule); null when the text is not a page (no frontmatter block, or YAML that is not a mapping).
 */
function* layoutOf(text: string, pace: MergePace): Steps<PageLayout | null> {
  if (isEmptyDocument(text)) return { fm: new Map(), raw: null, front: [], blockLines: 0, chunks: [], finalNewline: false };
  const finalNewline = text.endsWith('\n');
  const lines = yield* linesOf(text, pace);
  // The final line break's empty line is no line of the page (never a fence, never text of a part).
  if (finalNewline) lines.pop();
  const block = frontmatterBlock(lines);
  if (block === null || block.close < 0) return null;
  const parsed = parseFrontmatterYaml(block.raw);
  if (!parsed.ok) return null;
  if (pace.tick(block.close + (block.raw.length >> 5))) yield;
  const fm = new Map<string, unknown>();
  for (const k of Object.keys(parsed.value)) fm.set(k, parsed.value[k]);
  const bodyStart = block.close + 1;

  const scanner = new HeadingScanner();
  const starts: number[] = [];
  for (let i = bodyStart; i < lines.length; i++) {
    const line = lines[i]!;
    if (scanner.heading(line)) starts.push(i);
    if (pace.tick(1 + (line.length >> 5))) yield;
  }
  const chunks: Chunk[] = [];
  const trimmedEnd = (from: number, to: number) => {
    let end = to;
    while (end > from && isBlankLine(lines[end - 1]!)) end--;
    return end;
  };
  const preEnd = starts[0] ?? lines.length;
  const preText = trimmedEnd(bodyStart, preEnd);
  if (preText > bodyStart) {
    chunks.push({ key: MERGE_PREAMBLE, name: MERGE_PREAMBLE, section: false, src: lines, from: bodyStart, end: preText, to: preEnd, last: false, finalNewline });
  }
  const seen = new Map<string, number>();
  for (let i = 0; i < starts.length; i++) {
    const from = starts[i]!;
    const to = starts[i + 1] ?? lines.length;
    const end = trimmedEnd(from + 1, to);
    const heading = trimEndBlanks(lines[from]!);
    const n = seen.get(heading) ?? 0;
    seen.set(heading, n + 1);
    const key = n === 0 ? heading : `${n}\u0000${heading}`;
    chunks.push({ key, name: heading, section: true, src: lines, from, end, to, last: false, finalNewline });
    if (pace.tick(1 + end - from)) yield;
  }
  if (chunks.length > 0) chunks[chunks.length - 1]!.last = true;
  // Blank lines between the frontmatter and an empty preamble's first section belong to the front.
  const front = lines.slice(0, preText > bodyStart ? bodyStart : preEnd);
  return { fm, raw: block.raw, front, blockLines: bodyStart, chunks, finalNewline };
}

/** A part of the merged page: a part of a side as it is, or with the lines a line merge gave it. */
interface OutChunk {
  chunk: Chunk;
  /** Its lines when merged line by line (the heading first); else the chunk's own. */
  lines?: string[];
}

class PageMerger {
  private readonly conflicts: string[] = [];
  private readonly parts: MergedPart[] = [];
  /** The body's changed parts by key, while the body is merged. */
  private changed = new Map<string, MergedPart>();

  constructor(
    private readonly lb: PageLayout,
    private readonly lt: PageLayout,
    private readonly lo: PageLayout,
    private readonly pace: MergePace,
  ) {}

  *run(): Steps<PageMerge> {
    const front = yield* this.mergeFrontmatter();
    const body = yield* this.mergeBody();
    if (this.conflicts.length > 0) return { clean: false, conflicting: this.conflictOrder() };
    return { clean: true, text: yield* this.assemble(front!, body), parts: this.parts };
  }

  /**
   * The conflicts in an order that does not depend on which side is which: the frontmatter block, its keys
   * (sorted), then the preamble, then headings in base order, then headings the base lacks (sorted).
   */
  private conflictOrder(): string[] {
    const names = [...new Set(this.conflicts)];
    const baseAt = new Map<string, number>();
    this.lb.chunks.forEach((c, i) => {
      if (!baseAt.has(c.name)) baseAt.set(c.name, i);
    });
    const rank = new Map<string, [number, number]>();
    for (const n of names) {
      if (n === MERGE_FRONTMATTER) rank.set(n, [0, -1]);
      else if (n.startsWith('frontmatter.')) rank.set(n, [0, 0]);
      else if (n === MERGE_PREAMBLE) rank.set(n, [1, 0]);
      else {
        const at = baseAt.get(n);
        rank.set(n, at === undefined ? [3, 0] : [2, at]);
      }
    }
    return names.sort((a, c) => {
      const [x1, y1] = rank.get(a)!;
      const [x2, y2] = rank.get(c)!;
      return x1 - x2 || y1 - y2 || (a < c ? -1 : a > c ? 1 : 0);
    });
  }

  // -- frontmatter ------------------------------------------------------------------------------------------

  /** The merged frontmatter block's lines, or null on a conflict (recorded). */
  private *mergeFrontmatter(): Steps<string[] | null> {
    const fb = this.lb.fm;
    const ft = this.lt.fm;
    const fo = this.lo.fm;
    const result = new Map<string, unknown>();
    const keys = unionKeys(ft, fo);
    for (const k of fb.keys()) if (!ft.has(k) && !fo.has(k)) keys.push(k);
    let conflicted = false;
    const value = (m: Mapping, key: string) => (m.has(key) ? { v: m.get(key) } : undefined);
    const eq = (x?: { v: unknown }, y?: { v: unknown }) => (x === undefined ? y === undefined : y !== undefined && canonical(x.v) === canonical(y.v));
    for (const key of keys) {
      const vb = value(fb, key);
      const vt = value(ft, key);
      const vo = value(fo, key);
      let take: { v: unknown } | undefined;
      let side: MergeSide;
      if (eq(vt, vo)) {
        take = vt;
        side = 'both';
      } else if (eq(vb, vt)) {
        take = vo;
        side = 'ours';
      } else if (eq(vb, vo)) {
        take = vt;
        side = 'theirs';
      } else if (vt && vo && isStringList(vt.v) && isStringList(vo.v) && (vb === undefined || isStringList(vb.v))) {
        take = { v: mergeStringSets((vb?.v as string[] | undefined) ?? [], vt.v, vo.v) };
        side = 'both';
      } else {
        this.conflicts.push(`frontmatter.${key}`);
        conflicted = true;
        continue;
      }
      if (take) result.set(key, take.v);
      const change = fieldChange(fb, result, key);
      if (change) this.parts.push({ name: `frontmatter.${key}`, change, side });
      if (this.pace.tick(8)) yield;
    }
    // The block as text. A side that left it as it was takes the other's as written.
    const { raw: rb } = this.lb;
    const { raw: rt } = this.lt;
    const { raw: ro } = this.lo;
    if (rt !== rb && ro !== rb && rt !== ro) {
      // Both changed it: each change must be one the key-by-key merge can carry (checked through the YAML
      // library, some tens of milliseconds per block at the size cap: a pause after each).
      let fits = Math.max((rb ?? '').length, (rt ?? '').length, (ro ?? '').length) <= MERGE_YAML_CHARS;
      if (fits) {
        fits = representable(rb, fb, rt, ft);
        yield;
      }
      if (fits) {
        fits = representable(rb, fb, ro, fo);
        yield;
      }
      if (!fits) {
        this.conflicts.push(MERGE_FRONTMATTER);
        conflicted = true;
      }
    }
    if (conflicted) return null;
    if (ro === rb || rt === ro) return this.lt.front;
    if (rt === rb) return this.lo.front;
    // Prefer a side's block as written: theirs, else ours; else theirs edited key by key (its comments and
    // layout kept), ours' new keys placed after the key that precedes them in ours.
    if (sameMapping(result, ft)) return this.lt.front;
    if (sameMapping(result, fo)) return this.lo.front;
    const yaml = editBlock(rt ?? '', ft, result, fo.keys());
    yield;
    if (yaml === null) {
      this.conflicts.push(MERGE_FRONTMATTER);
      return null;
    }
    // Blank lines after theirs' block (before the body) are kept.
    const rest = this.lt.front.slice(this.lt.blockLines);
    const out = ['---'];
    if (yaml !== '') for (const line of yaml.split('\n')) out.push(line);
    out.push('---');
    for (const line of rest) out.push(line);
    return out;
  }

  // -- body ---------------------------------------------------------------------------------------------------

  /** Each part of a page by its key. */
  private *byKey(chunks: readonly Chunk[]): Steps<Map<string, Chunk>> {
    const map = new Map<string, Chunk>();
    for (const c of chunks) {
      map.set(c.key, c);
      if (this.pace.tick(4)) yield;
    }
    return map;
  }

  private *mergeBody(): Steps<OutChunk[]> {
    const bMap = yield* this.byKey(this.lb.chunks);
    const tMap = yield* this.byKey(this.lt.chunks);
    const oMap = yield* this.byKey(this.lo.chunks);
    /** Theirs' parts as they stay, in theirs' order, and where each key is among them. */
    const out: OutChunk[] = [];
    const outAt = new Map<string, number>();
    /** What happened to each part of the result that changed against the base, by key. */
    const changed = new Map<string, MergedPart>();
    this.changed = changed;
    const removed: MergedPart[] = [];
    const keep = (chunk: Chunk, side: MergeSide, change: MergedPart['change'] | null): void => {
      if (change) changed.set(chunk.key, { name: chunk.name, change, side });
      put({ chunk });
    };
    const put = (x: OutChunk) => {
      outAt.set(x.chunk.key, out.length);
      out.push(x);
    };
    for (const tc of this.lt.chunks) {
      if (this.pace.tick(1 + tc.end - tc.from)) yield;
      const bc = bMap.get(tc.key);
      const oc = oMap.get(tc.key);
      if (!bc) {
        if (!oc) keep(tc, 'theirs', 'added');
        else if (sameBody(oc, tc)) keep(tc, 'both', 'added');
        else {
          const merged = yield* this.mergeChunk(undefined, tc, oc);
          if (merged) put(merged);
        }
        continue;
      }
      if (!oc) {
        // Ours deleted it: deleted if theirs left it as it was, else a conflict.
        if (sameBody(tc, bc)) removed.push({ name: tc.name, change: 'removed', side: 'ours' });
        else this.conflicts.push(tc.name);
        continue;
      }
      if (sameBody(tc, oc)) keep(tc, 'both', sameBody(tc, bc) ? null : 'modified');
      else if (sameBody(bc, tc)) keep(oc, 'ours', 'modified');
      else if (sameBody(bc, oc)) keep(tc, 'theirs', 'modified');
      else {
        const merged = yield* this.mergeChunk(bc, tc, oc);
        if (merged) put(merged);
      }
    }
    // Parts of the base that theirs deleted: deleted if ours left them as they were, else a conflict.
    for (const bc of this.lb.chunks) {
      if (tMap.has(bc.key)) continue;
      const oc = oMap.get(bc.key);
      if (!oc) removed.push({ name: bc.name, change: 'removed', side: 'both' });
      else if (sameBody(oc, bc)) removed.push({ name: bc.name, change: 'removed', side: 'theirs' });
      else this.conflicts.push(bc.name);
      if (this.pace.tick()) yield;
    }
    // Ours' additions, each after the part that precedes it in ours (the nearest one still in the result): the
    // additions that follow one part of theirs (index -1: the start of the page), in ours' order.
    const after = new Map<number, OutChunk[]>();
    let anchor = -1;
    for (const oc of this.lo.chunks) {
      if (this.pace.tick()) yield;
      const at = outAt.get(oc.key);
      if (at !== undefined) {
        anchor = at;
        continue;
      }
      if (bMap.has(oc.key) || tMap.has(oc.key)) continue; // deleted by theirs (or a conflict, recorded)
      // A preamble always opens the page; a section never goes before theirs' preamble.
      let place = oc.key === MERGE_PREAMBLE ? -1 : anchor;
      if (place === -1 && oc.key !== MERGE_PREAMBLE && out[0]?.chunk.key === MERGE_PREAMBLE) place = 0;
      changed.set(oc.key, { name: oc.name, change: 'added', side: 'ours' });
      const list = after.get(place);
      const x: OutChunk = { chunk: oc };
      if (list) list.push(x);
      else after.set(place, [x]);
      anchor = place;
    }
    let merged = out;
    if (after.size > 0) {
      merged = [];
      for (const x of after.get(-1) ?? []) merged.push(x);
      for (let i = 0; i < out.length; i++) {
        merged.push(out[i]!);
        for (const x of after.get(i) ?? []) merged.push(x);
        if (this.pace.tick()) yield;
      }
    }
    // Report in merged order (after the frontmatter's keys), removals last.
    for (const x of merged) {
      const part = changed.get(x.chunk.key);
      if (part) this.parts.push(part);
      if (this.pace.tick()) yield;
    }
    for (const part of removed) this.parts.push(part);
    return merged;
  }

  /** A part both sides changed (or both added), merged line by line; null on a conflict (recorded). */
  private *mergeChunk(bc: Chunk | undefined, tc: Chunk, oc: Chunk): Steps<OutChunk | null> {
    const r = yield* mergeLineSteps(bodyLines(bc), bodyLines(tc), bodyLines(oc), this.pace);
    if (!r.clean) {
      this.conflicts.push(tc.name);
      return null;
    }
    this.changed.set(tc.key, { name: tc.name, change: bc ? 'modified' : 'added', side: 'both' });
    const lines = r.lines;
    if (tc.section) lines.unshift(tc.src[tc.from]!);
    while (lines.length > 1 && isBlankLine(lines[lines.length - 1]!)) lines.pop();
    return { chunk: tc, lines };
  }

  // -- text ---------------------------------------------------------------------------------------------------

  private *assemble(front: string[], body: OutChunk[]): Steps<string> {
    // The page's lines: the front's, each part's, and the blank lines between parts.
    const out: string[] = [];
    for (const line of front) out.push(line);
    for (let i = 0; i < body.length; i++) {
      const { chunk: c, lines } = body[i]!;
      if (lines) for (const line of lines) out.push(line);
      else for (let j = c.from; j < c.end; j++) out.push(c.src[j]!);
      // A part that ended its page gets one blank line before what now follows it.
      if (i < body.length - 1 && c.last && c.to === c.end) out.push('');
      else if (i < body.length - 1 || c.last) for (let j = c.end; j < c.to; j++) out.push(c.src[j]!);
      if (this.pace.tick(1 + c.to - c.from)) yield;
    }
    if (out.length === 0) return '';
    // The final newline of the page that supplied the last part as its own last part; theirs' otherwise.
    const tail = body[body.length - 1]?.chunk;
    const finalNewline = tail?.last ? tail.finalNewline : this.lt.front.length > 0 || this.lt.chunks.length > 0 ? this.lt.finalNewline : this.lo.finalNewline;
    return (yield* joinLines(out, this.pace)) + (finalNewline ? '\n' : '');
  }
}

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** Base, plus what either side added, minus what either side removed: theirs' order, then ours' additions. */
function mergeStringSets(base: readonly string[], theirs: readonly string[], ours: readonly string[]): string[] {
  const inBase = new Set(base);
  const inOurs = new Set(ours);
  const removedByOurs = new Set(base.filter((x) => !inOurs.has(x)));
  const out: string[] = [];
  const have = new Set<string>();
  for (const x of theirs) {
    if (removedByOurs.has(x) || have.has(x)) continue;
    out.push(x);
    have.add(x);
  }
  for (const x of ours) {
    if (inBase.has(x) || have.has(x)) continue;
    out.push(x);
    have.add(x);
  }
  return out;
}

function sameMapping(a: Mapping, b: Mapping): boolean {
  if (a.size !== b.size) return false;
  const kb = b.keys();
  for (const [k, v] of a) {
    const next = kb.next();
    if (next.done || next.value !== k || canonical(v) !== canonical(b.get(k))) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Frontmatter blocks as YAML text
// ---------------------------------------------------------------------------------------------------------

const YAML_IN = { uniqueKeys: false, resolveKnownTags: false } as const;
const YAML_OUT = { lineWidth: 0, flowCollectionPadding: false } as const;

/** The YAML text of a document (no final line break); '' for one without keys. */
function yamlText(doc: Document): string {
  const c = doc.contents;
  if (c === null || (isMap(c) && c.items.length === 0)) return '';
  return doc.toString(YAML_OUT).replace(/\n$/, '');
}

/**
 * The key a YAML key node becomes in the parsed mapping, as lib/core/page/parse.ts names it (`1`, `1.0` and `"1"`
 * all "1"; `~`, `null` and an empty key all ""); null for a collection key.
 */
function keyId(key: unknown): string | null {
  const v = isScalar(key) ? key.value : key;
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return null;
  return String(v);
}

/**
 * `raw` (a frontmatter block whose mapping is `from`) with the changes that make it `to` written into it: a
 * changed key's value replaced where it is (its comments, and the style of a string or a flow collection,
 * kept), a removed key's entry taken out, an added key placed after the key that precedes it in `order` (the
 * key order of the side that added it; first when nothing precedes it). Every other line keeps its comments;
 * the whole block is written by the YAML library. Null when that cannot be done (a key not found as written).
 */
function editBlock(raw: string, from: Mapping, to: Mapping, order: Iterable<string>): string | null {
  try {
    const doc: Document = parseDocument(raw, YAML_IN);
    if (doc.errors.length > 0) return null;
    if (doc.contents === null) {
      if (to.size === 0) return '';
      doc.contents = doc.createNode({});
    }
    if (!isMap(doc.contents)) return null;
    const map = doc.contents as YAMLMap<unknown, unknown>;
    const at = new Map<string, number>();
    map.items.forEach((pair, i) => {
      const id = keyId(pair.key);
      if (id !== null && !at.has(id)) at.set(id, i);
    });
    const dropped = new Set<number>();
    for (const key of from.keys()) {
      if (to.has(key)) continue;
      const i = at.get(key);
      if (i === undefined) return null;
      dropped.add(i);
    }
    for (const [key, value] of to) {
      if (!from.has(key) || canonical(from.get(key)) === canonical(value)) continue;
      const i = at.get(key);
      if (i === undefined) return null;
      const pair = map.items[i]!;
      pair.value = replacement(doc, pair.value, value);
    }
    // Added keys: after item i (-1: before the first).
    const added = new Map<number, Pair<unknown, unknown>[]>();
    let anchor = -1;
    const placed = new Set<string>();
    const add = (key: string) => {
      const pair = doc.createPair(key, to.get(key));
      const list = added.get(anchor);
      if (list) list.push(pair);
      else added.set(anchor, [pair]);
      placed.add(key);
    };
    for (const key of order) {
      if (!to.has(key)) continue;
      if (from.has(key)) {
        const i = at.get(key);
        if (i !== undefined) anchor = i;
      } else if (!placed.has(key)) add(key);
    }
    anchor = map.items.length - 1;
    for (const key of to.keys()) if (!from.has(key) && !placed.has(key)) add(key);
    if (dropped.size > 0 || added.size > 0) {
      const items: Pair<unknown, unknown>[] = [];
      for (const p of added.get(-1) ?? []) items.push(p);
      map.items.forEach((p, i) => {
        if (!dropped.has(i)) items.push(p);
        for (const q of added.get(i) ?? []) items.push(q);
      });
      map.items = items;
    }
    return yamlText(doc);
  } catch {
    return null;
  }
}

/** A new value node for `value` in place of `before`: its comments, and the style of a string or a flow collection, kept. */
function replacement(doc: Document, before: unknown, value: unknown): unknown {
  const node = doc.createNode(value);
  if (isScalar(before) && isScalar(node) && typeof before.value === 'string' && typeof value === 'string' && before.type) node.type = before.type;
  if (isCollection(before) && isCollection(node) && before.flow) node.flow = true;
  if (isNode(before)) {
    if (before.comment) node.comment = before.comment;
    if (before.commentBefore) node.commentBefore = before.commentBefore;
    if (before.spaceBefore) node.spaceBefore = before.spaceBefore;
  }
  return node;
}

/** How the YAML library writes a block as it is: what {@link editBlock}'s output is compared with. */
function asWritten(raw: string): string | null {
  const doc = parseDocument(raw, YAML_IN);
  if (doc.errors.length > 0) return null;
  const c = doc.contents;
  // A block without keys is compared as written: its comments are all it has.
  if (c === null || (isMap(c) && c.items.length === 0)) return raw.trim() === '' ? '' : `\u0000${raw}`;
  return yamlText(doc);
}

/**
 * Whether one side's change of the frontmatter block is only a change of keys' values (added, removed,
 * changed keys): the side's block is what writing those changes into the base's block gives, up to how the
 * YAML library writes a block. A change of comments, key order or formatting is not.
 */
function representable(rawBase: string | null, base: Mapping, rawSide: string | null, side: Mapping): boolean {
  try {
    const edited = editBlock(rawBase ?? '', base, side, side.keys());
    return edited !== null && edited === asWritten(rawSide ?? '');
  } catch {
    return false;
  }
}
