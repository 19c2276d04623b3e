/**
 * Three-way merge of line arrays (API.md "Section merge": "a line-level three-way merge of its body (hunks
 * that neither overlap nor touch apply; others → conflict)"). Pure and web-standard.
 *
 * Each side is diffed against the base (Myers, the `diff` package, as ./line.ts does) into hunks: a base range
 * [start, end) and the lines that replace it (an insertion is an empty range). The hunks of both sides are
 * then walked in base order and grouped: two hunks whose ranges overlap or touch (`a.start <= b.end && b.start
 * <= a.end`, so adjacent changes and two insertions at one point group too) fall into one region. A region
 * changed by one side only takes that side; a region both sides changed takes their common text when they made
 * the same change, and is a conflict otherwise.
 *
 * Work is bounded: the Myers edit distance of each side is capped ({@link MERGE_MAX_EDIT}); a side whose edit
 * distance is over it is not merged (a conflict, never a wrong result).
 */
import { diffArrays } from 'diff';

/** Largest Myers edit distance one side may have against the base (a conflict beyond it). */
export const MERGE_MAX_EDIT = 2_000;

interface Hunk {
  start: number;
  end: number;
  lines: readonly string[];
}

export type LineMerge = { clean: true; lines: string[] } | { clean: false };

/** The hunks that turn `base` into `side`, in base order; null when the edit distance is over the cap. */
function hunksOf(base: readonly string[], side: readonly string[]): Hunk[] | null {
  // The common prefix and suffix first (linear), so Myers only sees the changed middle.
  let p = 0;
  const max = Math.min(base.length, side.length);
  while (p < max && base[p] === side[p]) p++;
  let s = 0;
  while (s < max - p && base[base.length - 1 - s] === side[side.length - 1 - s]) s++;
  const bMid = base.slice(p, base.length - s);
  const sMid = side.slice(p, side.length - s);
  if (bMid.length === 0 && sMid.length === 0) return [];
  if (bMid.length === 0 || sMid.length === 0) return [{ start: p, end: p + bMid.length, lines: sMid }];
  const changes = diffArrays(bMid, sMid, { maxEditLength: MERGE_MAX_EDIT });
  if (changes === undefined) return null;
  const hunks: Hunk[] = [];
  let at = p;
  let open: { start: number; end: number; lines: string[] } | null = null;
  for (const c of changes) {
    if (c.removed) {
      open ??= { start: at, end: at, lines: [] };
      at += c.value.length;
      open.end = at;
    } else if (c.added) {
      open ??= { start: at, end: at, lines: [] };
      open.lines.push(...c.value);
    } else {
      if (open) hunks.push(open);
      open = null;
      at += c.value.length;
    }
  }
  if (open) hunks.push(open);
  return hunks;
}

/** The lines of `side` over base[from, to), given its hunks that lie inside that range. */
function sideText(base: readonly string[], from: number, to: number, hunks: readonly Hunk[]): string[] {
  const out: string[] = [];
  let at = from;
  for (const h of hunks) {
    for (; at < h.start; at++) out.push(base[at]!);
    out.push(...h.lines);
    at = h.end;
  }
  for (; at < to; at++) out.push(base[at]!);
  return out;
}

const sameLines = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((l, i) => l === b[i]);

/** Three-way merge of `theirs` and `ours` against `base`; see the module comment. */
export function mergeLines(base: readonly string[], theirs: readonly string[], ours: readonly string[]): LineMerge {
  if (sameLines(theirs, ours)) return { clean: true, lines: [...ours] };
  if (sameLines(base, theirs)) return { clean: true, lines: [...ours] };
  if (sameLines(base, ours)) return { clean: true, lines: [...theirs] };
  const t = hunksOf(base, theirs);
  const o = hunksOf(base, ours);
  if (t === null || o === null) return { clean: false };

  const out: string[] = [];
  let at = 0; // base lines before `at` are written
  let i = 0;
  let j = 0;
  while (i < t.length || j < o.length) {
    // Start a region at the earliest hunk, then pull in every hunk of either side that overlaps or touches it.
    const first = j >= o.length || (i < t.length && t[i]!.start <= o[j]!.start) ? t[i]! : o[j]!;
    let start = first.start;
    let end = first.end;
    const ti = i;
    const oj = j;
    for (;;) {
      if (i < t.length && t[i]!.start <= end && start <= t[i]!.end) {
        start = Math.min(start, t[i]!.start);
        end = Math.max(end, t[i]!.end);
        i++;
      } else if (j < o.length && o[j]!.start <= end && start <= o[j]!.end) {
        start = Math.min(start, o[j]!.start);
        end = Math.max(end, o[j]!.end);
        j++;
      } else break;
    }
    for (; at < start; at++) out.push(base[at]!);
    const theirHunks = t.slice(ti, i);
    const ourHunks = o.slice(oj, j);
    if (ourHunks.length === 0) out.push(...sideText(base, start, end, theirHunks));
    else if (theirHunks.length === 0) out.push(...sideText(base, start, end, ourHunks));
    else {
      const a = sideText(base, start, end, theirHunks);
      const b = sideText(base, start, end, ourHunks);
      if (!sameLines(a, b)) return { clean: false };
      out.push(...a);
    }
    at = end;
  }
  for (; at < base.length; at++) out.push(base[at]!);
  return { clean: true, lines: out };
}
