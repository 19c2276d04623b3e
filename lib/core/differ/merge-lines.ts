/**
 * Three-way merge of line arrays (docs/api.md "Pages", the push route's "Section merge": a part changed on
 * both sides merges line by line; hunks that neither overlap nor touch apply, others conflict). Pure and web-standard.
 *
 * Each side is diffed against the base (Myers, the `diff` package, as ./line.ts does) into hunks: a base range
 * [start, end) and the lines that replace it (an insertion is an empty range). The hunks of both sides are
 * then walked in base order and grouped: two hunks whose ranges overlap or touch (`a.start <= b.end && b.start
 * <= a.end`, so adjacent changes and two insertions at one point group too) fall into one region. A region
 * changed by one side only takes that side; a region both sides changed takes their common text when they made
 * the same change, and is a conflict otherwise.
 *
 * Work is bounded, so that no input can make a merge slow: the common prefix and suffix are stripped first
 * (linear), and Myers on what is left costs about {@link MYERS_D2_WEIGHT}·D² + D·(N+M) units for N and M lines
 * and D edits (its D² part allocates, and dominates when most lines changed). One diff may spend
 * {@link MERGE_DIFF_UNITS} (a few tens of milliseconds at most), and all the diffs of one merge together
 * {@link MERGE_WORK_UNITS}; a side whose edit distance does not fit is not merged (a conflict, never a wrong
 * result). Everything else is linear in the lines, and written as steps (./budget.ts `Steps`) that pause every
 * so often, so a caller on a server can hand the event loop a turn between them.
 */
import { diffArrays } from 'diff';
import { runSteps, type Steps } from './budget.ts';

/** Largest Myers edit distance one side may have against the base, whatever the budget (a conflict beyond it). */
export const MERGE_MAX_EDIT = 2_000;
/** Myers units one diff may spend (≈ 10 ns each: some 30 ms). */
export const MERGE_DIFF_UNITS = 3_000_000;
/** Myers units all the diffs of one merge may spend together. */
export const MERGE_WORK_UNITS = 40_000_000;
/** Weight of D² in a diff's cost (see the module comment; measured on Node 20). */
export const MYERS_D2_WEIGHT = 16;

/**
 * When a long merge pauses: every {@link PACE_UNITS} units of work (about a line, or 32 characters, each), or
 * once {@link PACE_MS} have passed on a clock that moves (workerd's does not while code runs).
 */
export const PACE_UNITS = 100_000;
export const PACE_MS = 8;

/** Counts a merge's work and says when to pause; and what is left of its Myers budget. */
export class MergePace {
  private units = 0;
  private sinceClock = 0;
  private started = performance.now();
  /** Myers units left to the merge. */
  myersLeft: number;

  constructor(myers: number = MERGE_WORK_UNITS) {
    this.myersLeft = myers;
  }

  /** Counts `units` of work; true when the caller should pause (yield) now. */
  tick(units = 1): boolean {
    this.units += units;
    this.sinceClock += units;
    if (this.units < PACE_UNITS) {
      if (this.sinceClock < 1024) return false;
      this.sinceClock = 0;
      if (performance.now() - this.started < PACE_MS) return false;
    }
    this.units = 0;
    this.sinceClock = 0;
    this.started = performance.now();
    return true;
  }
}

interface Hunk {
  start: number;
  end: number;
  lines: string[];
}

export type LineMerge = { clean: true; lines: string[] } | { clean: false };

/** The largest D whose Myers cost (see the module comment) on `size` lines fits `units`. */
function maxEditFor(size: number, units: number): number {
  if (units <= 0) return 0;
  const w = MYERS_D2_WEIGHT;
  const d = Math.floor((-size + Math.sqrt(size * size + 4 * w * units)) / (2 * w));
  return Math.max(0, Math.min(MERGE_MAX_EDIT, d));
}

/** `out` with `items` appended, one by one (a spread call would overflow the stack on a long array). */
function append(out: string[], items: readonly string[]): void {
  for (let i = 0; i < items.length; i++) out.push(items[i]!);
}

/** The hunks that turn `base` into `side`, in base order; null when the edit distance does not fit the budget. */
function* hunksOf(base: readonly string[], side: readonly string[], pace: MergePace): Steps<Hunk[] | null> {
  // The common prefix and suffix first (linear), so Myers only sees the changed middle.
  let p = 0;
  const max = Math.min(base.length, side.length);
  while (p < max && base[p] === side[p]) {
    p++;
    if (pace.tick()) yield;
  }
  let s = 0;
  while (s < max - p && base[base.length - 1 - s] === side[side.length - 1 - s]) {
    s++;
    if (pace.tick()) yield;
  }
  const bMid = base.slice(p, base.length - s);
  const sMid = side.slice(p, side.length - s);
  if (pace.tick(bMid.length + sMid.length)) yield;
  if (bMid.length === 0 && sMid.length === 0) return [];
  if (bMid.length === 0 || sMid.length === 0) return [{ start: p, end: p + bMid.length, lines: sMid }];
  const size = bMid.length + sMid.length;
  const maxEdit = maxEditFor(size, Math.min(MERGE_DIFF_UNITS, pace.myersLeft));
  // A replaced middle needs at least this many edits: no use trying with less.
  if (maxEdit < Math.abs(bMid.length - sMid.length) || maxEdit === 0) {
    pace.myersLeft -= size;
    return null;
  }
  const changes = diffArrays(bMid, sMid, { maxEditLength: maxEdit });
  if (changes === undefined) {
    const cost = MYERS_D2_WEIGHT * maxEdit * maxEdit + maxEdit * size;
    pace.myersLeft -= cost;
    if (pace.tick(cost)) yield;
    return null;
  }
  let d = 0;
  for (const c of changes) if (c.added || c.removed) d += c.value.length;
  const cost = MYERS_D2_WEIGHT * d * d + d * size;
  pace.myersLeft -= cost;
  if (pace.tick(cost)) yield;
  const hunks: Hunk[] = [];
  let at = p;
  let open: Hunk | null = null;
  for (const c of changes) {
    if (c.removed) {
      open ??= { start: at, end: at, lines: [] };
      at += c.value.length;
      open.end = at;
    } else if (c.added) {
      open ??= { start: at, end: at, lines: [] };
      append(open.lines, c.value);
    } else {
      if (open) hunks.push(open);
      open = null;
      at += c.value.length;
    }
    if (pace.tick(c.value.length)) yield;
  }
  if (open) hunks.push(open);
  return hunks;
}

/** `out` with the lines of `side` over base[from, to), given its hunks that lie inside that range. */
function* sideText(out: string[], base: readonly string[], from: number, to: number, hunks: readonly Hunk[], pace: MergePace): Steps<void> {
  let at = from;
  for (const h of hunks) {
    for (; at < h.start; at++) {
      out.push(base[at]!);
      if (pace.tick()) yield;
    }
    append(out, h.lines);
    if (pace.tick(h.lines.length)) yield;
    at = h.end;
  }
  for (; at < to; at++) {
    out.push(base[at]!);
    if (pace.tick()) yield;
  }
}

function* sameLines(a: readonly string[], b: readonly string[], pace: MergePace): Steps<boolean> {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i]) return false;
    if (pace.tick()) yield;
  }
  return true;
}

/** Three-way merge of `theirs` and `ours` against `base`; see the module comment. */
export function mergeLines(base: readonly string[], theirs: readonly string[], ours: readonly string[]): LineMerge {
  return runSteps(mergeLineSteps(base, theirs, ours, new MergePace()));
}

/** {@link mergeLines} as steps, its work counted by `pace` (shared by the merge it is part of). */
export function* mergeLineSteps(base: readonly string[], theirs: readonly string[], ours: readonly string[], pace: MergePace): Steps<LineMerge> {
  if (yield* sameLines(theirs, ours, pace)) return { clean: true, lines: ours.slice() };
  if (yield* sameLines(base, theirs, pace)) return { clean: true, lines: ours.slice() };
  if (yield* sameLines(base, ours, pace)) return { clean: true, lines: theirs.slice() };
  const t = yield* hunksOf(base, theirs, pace);
  if (t === null) return { clean: false };
  const o = yield* hunksOf(base, ours, pace);
  if (o === null) return { clean: false };

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
    for (; at < start; at++) {
      out.push(base[at]!);
      if (pace.tick()) yield;
    }
    const theirHunks = t.slice(ti, i);
    const ourHunks = o.slice(oj, j);
    if (ourHunks.length === 0) yield* sideText(out, base, start, end, theirHunks, pace);
    else if (theirHunks.length === 0) yield* sideText(out, base, start, end, ourHunks, pace);
    else {
      const a: string[] = [];
      const b: string[] = [];
      yield* sideText(a, base, start, end, theirHunks, pace);
      yield* sideText(b, base, start, end, ourHunks, pace);
      if (!(yield* sameLines(a, b, pace))) return { clean: false };
      append(out, a);
    }
    at = end;
  }
  for (; at < base.length; at++) {
    out.push(base[at]!);
    if (pace.tick()) yield;
  }
  return { clean: true, lines: out };
}
