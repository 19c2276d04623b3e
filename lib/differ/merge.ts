/**
 * Section merge (API.md "Section merge (ours)"): three versions of one file — *base* (the file at the
 * writer's parent commit), *theirs* (the file at head) and *ours* (the pushed text) — merged three ways on the
 * page structure the differ uses (lib/page/parse.ts). Pure and web-standard: the server merges stale pushes
 * with it, and the clients use it to explain what a merge did.
 *
 * Rules, on pages (all three parse with frontmatter; an empty document is an empty page):
 *  - Frontmatter key by key: changed (added, removed, altered) on one side only → that side; the same change on
 *    both sides → taken once; a list of strings on both changed sides merges as a set (base, plus what either
 *    side added, minus what either side removed; theirs' order, then ours' additions in ours' order); any
 *    other key changed differently on both sides → conflict `frontmatter.<key>`.
 *  - The preamble and each `## ` section, paired by heading as the differ pairs them (the n-th occurrence of a
 *    heading with the n-th): changed on one side only → that side; added on one side → added, after the part
 *    that precedes it on that side; deleted on one side and unchanged on the other → deleted; deleted on one
 *    side and changed on the other → conflict; changed on both sides → a line-level three-way merge of its
 *    body (./merge-lines.ts), a conflict when that does not merge; the same text on both sides → that text.
 *    Order: theirs', with ours' additions placed as above.
 *  - A file that does not parse as a page (no frontmatter, or frontmatter that is not a mapping, on any of the
 *    three) merges line by line over the whole text; a conflict there is named `_preamble`, as the differ
 *    names its whole-file entry.
 * Conflicts are named `frontmatter.<key>`, `_preamble` or the heading (`## Decision`; a repeated heading by
 * its own text, once).
 *
 * The merged text keeps the bytes of every part it takes unchanged from a side (its lines and the blank lines
 * after it); only parts merged line by line, or moved next to a part from the other side, are re-joined. When
 * theirs and ours are the same, or one side equals the base, the result is the other side byte for byte.
 */
import { isCollection, parseDocument } from 'yaml';
import { normalizeText, parsePage, type Frontmatter, type ParsedPage } from '../page/parse.ts';
import { canonical } from './frontmatter.ts';
import { mergeLines } from './merge-lines.ts';
import { splitLines } from './line.ts';

/** Name of the preamble (and of the whole text of a file that is not a page) in `conflicting` and `parts`. */
export const MERGE_PREAMBLE = '_preamble';

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
  const b = normalizeText(base);
  const t = normalizeText(theirs);
  const o = normalizeText(ours);
  if (t === o || b === t) return { clean: true, text: ours, parts: sidesOfText(b, o, b === t ? 'ours' : 'both') };
  if (b === o) return { clean: true, text: theirs, parts: sidesOfText(b, t, 'theirs') };
  const pb = parsePage(b);
  const pt = parsePage(t);
  const po = parsePage(o);
  if (pb.frontmatter === null || pt.frontmatter === null || po.frontmatter === null) return mergeWholeText(b, t, o);
  return new PageMerger(pb, pt, po).run();
}

/** The parts changed between `from` and `to`, all from one side (a merge that took one side whole). */
function sidesOfText(from: string, to: string, side: MergeSide): MergedPart[] {
  if (from === to) return [];
  const a = parsePage(from);
  const c = parsePage(to);
  if (a.frontmatter === null || c.frontmatter === null) return [{ name: MERGE_PREAMBLE, change: 'modified', side }];
  const parts: MergedPart[] = [];
  for (const key of unionKeys(c.frontmatter, a.frontmatter)) {
    const change = fieldChange(a.frontmatter, c.frontmatter, key);
    if (change) parts.push({ name: `frontmatter.${key}`, change, side });
  }
  const ca = chunksOf(a);
  const cc = chunksOf(c);
  const before = new Map(ca.map((x) => [x.key, x]));
  const after = new Set(cc.map((x) => x.key));
  for (const x of cc) {
    const old = before.get(x.key);
    if (!old) parts.push({ name: x.name, change: 'added', side });
    else if (old.body !== x.body) parts.push({ name: x.name, change: 'modified', side });
  }
  for (const x of ca) if (!after.has(x.key)) parts.push({ name: x.name, change: 'removed', side });
  return parts;
}

function fieldChange(a: Frontmatter, b: Frontmatter, key: string): MergedPart['change'] | null {
  const inA = Object.hasOwn(a, key);
  const inB = Object.hasOwn(b, key);
  if (!inA) return inB ? 'added' : null;
  if (!inB) return 'removed';
  return canonical(a[key]) === canonical(b[key]) ? null : 'modified';
}

const unionKeys = (first: Frontmatter, second: Frontmatter): string[] => {
  const keys = Object.keys(first);
  for (const k of Object.keys(second)) if (!Object.hasOwn(first, k)) keys.push(k);
  return keys;
};

// ---------------------------------------------------------------------------------------------------------
// Whole-text merge (files that are not pages)
// ---------------------------------------------------------------------------------------------------------

function mergeWholeText(b: string, t: string, o: string): PageMerge {
  const r = mergeLines(splitLines(b), splitLines(t), splitLines(o));
  if (!r.clean) return { clean: false, conflicting: [MERGE_PREAMBLE] };
  // The final newline: theirs' unless only ours changed it.
  const nl = (s: string) => s.endsWith('\n');
  const finalNewline = nl(t) === nl(b) ? nl(o) : nl(t);
  const text = r.lines.length === 0 ? '' : r.lines.join('\n') + (finalNewline ? '\n' : '');
  return { clean: true, text, parts: [{ name: MERGE_PREAMBLE, change: 'modified', side: 'both' }] };
}

// ---------------------------------------------------------------------------------------------------------
// Pages: the parts of a page as raw lines
// ---------------------------------------------------------------------------------------------------------

/** One part of a page's body: the preamble or a section, with the raw lines it was made from. */
interface Chunk {
  /** Pairing key: `_preamble`, or the heading and its occurrence (`## A\u00001`). */
  key: string;
  /** Name in reports: `_preamble` or the heading. */
  name: string;
  /** The heading line as written (sections), null for the preamble. */
  heading: string | null;
  /** The body as the parser gives it (trailing blank lines removed): what is compared. */
  body: string;
  /** Raw lines of the part without its trailing blank lines (heading included). */
  lines: string[];
  /** The blank lines after it. */
  trail: string[];
  /** Last part of its page. */
  last: boolean;
  /** Its page ends with a line break. */
  finalNewline: boolean;
}

interface PageLayout {
  /** The frontmatter block's lines, `---` fences included (none for an empty document). */
  front: string[];
  chunks: Chunk[];
  finalNewline: boolean;
}

const isBlank = (line: string) => /^[ \t]*$/.test(line);

function layoutOf(p: ParsedPage): PageLayout {
  if (p.empty) return { front: [], chunks: [], finalNewline: false };
  const finalNewline = p.text.endsWith('\n');
  const lines = p.text.split('\n');
  if (finalNewline) lines.pop();
  const frontLen = p.frontmatterRaw === null ? 0 : p.frontmatterRaw.split('\n').length + 2;
  const starts = p.sections.map((s) => s.line - 1);
  const chunks: Chunk[] = [];
  const cut = (from: number, to: number): { lines: string[]; trail: string[] } => {
    let end = to;
    while (end > from && isBlank(lines[end - 1]!)) end--;
    return { lines: lines.slice(from, end), trail: lines.slice(end, to) };
  };
  const preEnd = starts[0] ?? lines.length;
  if (p.preamble !== '') {
    chunks.push({ key: MERGE_PREAMBLE, name: MERGE_PREAMBLE, heading: null, body: p.preamble, ...cut(frontLen, preEnd), last: false, finalNewline });
  }
  const seen = new Map<string, number>();
  p.sections.forEach((s, i) => {
    const n = seen.get(s.heading) ?? 0;
    seen.set(s.heading, n + 1);
    const from = starts[i]!;
    const to = starts[i + 1] ?? lines.length;
    chunks.push({ key: `${s.heading}\u0000${n}`, name: s.heading, heading: lines[from]!, body: s.body, ...cut(from, to), last: false, finalNewline });
  });
  if (chunks.length > 0) chunks[chunks.length - 1]!.last = true;
  // Blank lines between the frontmatter and an empty preamble's first section belong to the front.
  const front = lines.slice(0, p.preamble === '' ? preEnd : frontLen);
  return { front, chunks, finalNewline };
}

function chunksOf(p: ParsedPage): Chunk[] {
  return layoutOf(p).chunks;
}

/** A part of the merged page: its lines, and the blank lines to put after it when something follows. */
interface OutChunk {
  chunk: Chunk;
  lines: string[];
  trail: string[];
}

class PageMerger {
  private readonly conflicts: string[] = [];
  private readonly parts: MergedPart[] = [];
  private readonly lb: PageLayout;
  private readonly lt: PageLayout;
  private readonly lo: PageLayout;

  constructor(
    private readonly pb: ParsedPage,
    private readonly pt: ParsedPage,
    private readonly po: ParsedPage,
  ) {
    this.lb = layoutOf(pb);
    this.lt = layoutOf(pt);
    this.lo = layoutOf(po);
  }

  run(): PageMerge {
    const front = this.mergeFrontmatter();
    const body = this.mergeBody();
    if (this.conflicts.length > 0) return { clean: false, conflicting: this.conflictOrder() };
    return { clean: true, text: this.assemble(front!, body), parts: this.parts };
  }

  /**
   * The conflicts in an order that does not depend on which side is which: frontmatter keys (sorted), then the
   * preamble, then headings in base order, then headings the base lacks (sorted).
   */
  private conflictOrder(): string[] {
    const names = [...new Set(this.conflicts)];
    const rank = (n: string): [number, number, string] => {
      if (n.startsWith('frontmatter.')) return [0, 0, n];
      if (n === MERGE_PREAMBLE) return [1, 0, n];
      const at = this.lb.chunks.findIndex((c) => c.name === n);
      return at >= 0 ? [2, at, n] : [3, 0, n];
    };
    return names.sort((a, c) => {
      const [x1, y1, z1] = rank(a);
      const [x2, y2, z2] = rank(c);
      return x1 - x2 || y1 - y2 || (z1 < z2 ? -1 : z1 > z2 ? 1 : 0);
    });
  }

  // -- frontmatter ------------------------------------------------------------------------------------------

  /** The merged frontmatter block's lines, or null on a conflict (recorded). */
  private mergeFrontmatter(): string[] | null {
    const fb = this.pb.frontmatter!;
    const ft = this.pt.frontmatter!;
    const fo = this.po.frontmatter!;
    const result: Frontmatter = {};
    const keys = unionKeys(ft, fo);
    for (const k of Object.keys(fb)) if (!keys.includes(k)) keys.push(k);
    let conflicted = false;
    for (const key of keys) {
      const vb = Object.hasOwn(fb, key) ? { v: fb[key] } : undefined;
      const vt = Object.hasOwn(ft, key) ? { v: ft[key] } : undefined;
      const vo = Object.hasOwn(fo, key) ? { v: fo[key] } : undefined;
      const eq = (x?: { v: unknown }, y?: { v: unknown }) => (x === undefined ? y === undefined : y !== undefined && canonical(x.v) === canonical(y.v));
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
      if (take) result[key] = take.v;
      const change = fieldChange(fb, result, key);
      if (change) this.parts.push({ name: `frontmatter.${key}`, change, side });
    }
    if (conflicted) return null;
    // Prefer a side's block as written: theirs, else ours; else theirs edited key by key (its comments and
    // layout kept), ours' new keys added after its own.
    if (sameMapping(result, ft)) return this.lt.front;
    if (sameMapping(result, fo)) return this.lo.front;
    return this.editedFront(result);
  }

  private editedFront(result: Frontmatter): string[] {
    const ft = this.pt.frontmatter!;
    const doc = parseDocument(this.pt.frontmatterRaw ?? '', { uniqueKeys: false, resolveKnownTags: false });
    for (const key of Object.keys(ft)) if (!Object.hasOwn(result, key)) doc.delete(key);
    for (const [key, value] of Object.entries(result)) {
      if (Object.hasOwn(ft, key) && canonical(ft[key]) === canonical(value)) continue;
      // A list or mapping written inline (`[a, b]`) stays inline.
      const node = doc.createNode(value);
      const before = doc.get(key, true);
      if (isCollection(before) && before.flow && isCollection(node)) node.flow = true;
      doc.set(key, node);
    }
    const yaml = doc.contents === null || Object.keys(result).length === 0 ? '' : doc.toString({ lineWidth: 0, flowCollectionPadding: false }).replace(/\n$/, '');
    // Blank lines after theirs' block (before the body) are kept.
    const rest = this.lt.front.slice(this.pt.frontmatterRaw === null ? 0 : this.pt.frontmatterRaw.split('\n').length + 2);
    return ['---', ...(yaml === '' ? [] : yaml.split('\n')), '---', ...rest];
  }

  // -- body ---------------------------------------------------------------------------------------------------

  private mergeBody(): OutChunk[] {
    const bMap = new Map(this.lb.chunks.map((c) => [c.key, c]));
    const tMap = new Map(this.lt.chunks.map((c) => [c.key, c]));
    const oMap = new Map(this.lo.chunks.map((c) => [c.key, c]));
    const out: OutChunk[] = [];
    const removed: MergedPart[] = [];
    const keep = (chunk: Chunk, side: MergeSide, change: MergedPart['change'] | null): OutChunk => {
      if (change) this.parts.push({ name: chunk.name, change, side });
      return { chunk, lines: chunk.lines, trail: chunk.trail };
    };
    // Theirs' parts, in theirs' order.
    for (const tc of this.lt.chunks) {
      const bc = bMap.get(tc.key);
      const oc = oMap.get(tc.key);
      if (!bc) {
        if (!oc) out.push(keep(tc, 'theirs', 'added'));
        else if (oc.body === tc.body) out.push(keep(tc, 'both', 'added'));
        else {
          const merged = this.mergeChunk(undefined, tc, oc);
          if (merged) out.push(merged);
        }
        continue;
      }
      if (!oc) {
        // Ours deleted it: deleted if theirs left it as it was, else a conflict.
        if (tc.body === bc.body) removed.push({ name: tc.name, change: 'removed', side: 'ours' });
        else this.conflicts.push(tc.name);
        continue;
      }
      if (tc.body === oc.body) out.push(keep(tc, 'both', tc.body === bc.body ? null : 'modified'));
      else if (bc.body === tc.body) out.push(keep(oc, 'ours', 'modified'));
      else if (bc.body === oc.body) out.push(keep(tc, 'theirs', 'modified'));
      else {
        const merged = this.mergeChunk(bc, tc, oc);
        if (merged) out.push(merged);
      }
    }
    // Parts of the base that theirs deleted: deleted if ours left them as they were, else a conflict.
    for (const bc of this.lb.chunks) {
      if (tMap.has(bc.key)) continue;
      const oc = oMap.get(bc.key);
      if (!oc) removed.push({ name: bc.name, change: 'removed', side: 'both' });
      else if (oc.body === bc.body) removed.push({ name: bc.name, change: 'removed', side: 'theirs' });
      else this.conflicts.push(bc.name);
    }
    // Ours' additions, each after the part that precedes it in ours (the nearest one still in the result).
    let insertAt = -1;
    for (const oc of this.lo.chunks) {
      const at = out.findIndex((x) => x.chunk.key === oc.key);
      if (at >= 0) {
        insertAt = at;
        continue;
      }
      if (bMap.has(oc.key) || tMap.has(oc.key)) continue; // deleted by theirs (or a conflict, recorded)
      // A preamble always opens the page; a section never goes before theirs' preamble.
      let pos = oc.key === MERGE_PREAMBLE ? 0 : insertAt + 1;
      if (pos === 0 && out[0]?.chunk.key === MERGE_PREAMBLE && oc.key !== MERGE_PREAMBLE) pos = 1;
      this.parts.push({ name: oc.name, change: 'added', side: 'ours' });
      out.splice(pos, 0, { chunk: oc, lines: oc.lines, trail: oc.trail });
      insertAt = pos;
    }
    // Report in merged order, removals last.
    const order = new Map(out.map((x, i) => [x.chunk.name, i]));
    const front = this.parts.filter((p) => p.name.startsWith('frontmatter.'));
    const body = this.parts.filter((p) => !p.name.startsWith('frontmatter.')).sort((a, c) => (order.get(a.name) ?? 0) - (order.get(c.name) ?? 0));
    this.parts.length = 0;
    this.parts.push(...front, ...body, ...removed);
    return out;
  }

  /** A part both sides changed (or both added), merged line by line; null on a conflict (recorded). */
  private mergeChunk(bc: Chunk | undefined, tc: Chunk, oc: Chunk): OutChunk | null {
    const split = (c: Chunk | undefined) => (c ? (c.heading === null ? c.lines : c.lines.slice(1)) : []);
    const r = mergeLines(split(bc), split(tc), split(oc));
    if (!r.clean) {
      this.conflicts.push(tc.name);
      return null;
    }
    this.parts.push({ name: tc.name, change: bc ? 'modified' : 'added', side: 'both' });
    const lines = tc.heading === null ? r.lines : [tc.heading, ...r.lines];
    while (lines.length > 1 && isBlank(lines[lines.length - 1]!)) lines.pop();
    return { chunk: tc, lines, trail: tc.trail };
  }

  // -- text ---------------------------------------------------------------------------------------------------

  private assemble(front: string[], body: OutChunk[]): string {
    const lines = [...front];
    body.forEach((x, i) => {
      lines.push(...x.lines);
      const lastHere = i === body.length - 1;
      if (!lastHere) {
        // A part that ended its page gets one blank line before what now follows it.
        lines.push(...(x.chunk.last && x.trail.length === 0 ? [''] : x.trail));
      } else if (x.chunk.last) lines.push(...x.trail);
    });
    if (lines.length === 0) return '';
    // The final newline of the page that supplied the last part as its own last part; theirs' otherwise.
    const tail = body[body.length - 1]?.chunk;
    const finalNewline = tail?.last ? tail.finalNewline : this.lt.front.length > 0 || this.lt.chunks.length > 0 ? this.lt.finalNewline : this.lo.finalNewline;
    return lines.join('\n') + (finalNewline ? '\n' : '');
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

function sameMapping(a: Frontmatter, b: Frontmatter): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && canonical(a[k]) === canonical(b[k]));
}
