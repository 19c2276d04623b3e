/**
 * Line diffs in the wire format (docs/api.md "History", the diff route): every line, prefixed `"  "` (same), `"- "` (removed) or `"+ "` (added),
 * joined with `\n`. Computed with the `diff` package (Myers, `diffArrays`) under a work budget.
 *
 * Cost control. Myers costs about D·(D + N) for N lines and D edits. The common prefix and suffix are
 * stripped first (linear), then the middle is diffed with `maxEditLength` set to the largest D whose cost
 * fits what is left of the budget; the budget is shared by every line diff of one SectionDiff, so a page
 * with many sections cannot multiply it. When the edit distance would exceed it, the middle is reported
 * coarsely — all its old lines as `"- "`, then all its new lines as `"+ "` — between the exact common
 * prefix and suffix, and the result is marked truncated. A coarse diff is still a correct diff (applying it
 * yields the new text), just not a minimal one. The budget is a count, not a clock, so results are
 * deterministic.
 *
 * Myers work is also charged to the request's budget (./budget.ts), shared with every other diff of the
 * request: once that is spent, every later line diff whose sides differ in their middle is coarse.
 */
import { diffArrays } from 'diff';
import { WorkBudget } from './budget.ts';

/** Work units (≈ D·(D+N)) one SectionDiff may spend on Myers; roughly 50–150 ms in the worst case. */
export const LINE_DIFF_WORK_BUDGET = 4_000_000;

/** The work of one SectionDiff: its own Myers allowance, and the request's budget it also charges. */
export interface DiffWork {
  /** Myers units this SectionDiff may still spend. */
  myers: number;
  /** The request's budget (unlimited for local, synchronous uses). */
  request: WorkBudget;
  /** Set once any part of this SectionDiff was reported coarsely or skipped. */
  truncated: boolean;
}

export const newWork = (request: WorkBudget = WorkBudget.unlimited(), myers: number = LINE_DIFF_WORK_BUDGET): DiffWork => ({
  myers,
  request,
  truncated: false,
});

/** Lines of an LF text; `""` has none and one final `\n` terminates the last line rather than adding one. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Line diff of two line arrays; Myers work is charged to `work` (the caller charges the linear part). */
export function diffLineArrays(a: readonly string[], b: readonly string[], work: DiffWork): string {
  const out: string[] = [];
  let p = 0;
  const maxPrefix = Math.min(a.length, b.length);
  while (p < maxPrefix && a[p] === b[p]) p++;
  let s = 0;
  const maxSuffix = maxPrefix - p;
  while (s < maxSuffix && a[a.length - 1 - s] === b[b.length - 1 - s]) s++;

  for (let i = 0; i < p; i++) out.push('  ' + a[i]);
  const aEnd = a.length - s;
  const bEnd = b.length - s;
  const n = aEnd - p;
  const m = bEnd - p;

  if (n === 0 || m === 0 || !shareALine(a, p, aEnd, b, p, bEnd)) {
    // Nothing in common in the middle: deleting it all and inserting it all is the minimal diff.
    for (let i = p; i < aEnd; i++) out.push('- ' + a[i]);
    for (let i = p; i < bEnd; i++) out.push('+ ' + b[i]);
  } else {
    const total = n + m;
    const remaining = Math.max(0, Math.min(work.myers, work.request.remaining));
    // Largest D with D·(D + total) ≤ remaining, and never more than the worst case `total`.
    const maxD = Math.min(total, Math.floor((-total + Math.sqrt(total * total + 4 * remaining)) / 2));
    const changes =
      maxD >= Math.max(1, Math.abs(n - m))
        ? diffArrays(a.slice(p, aEnd), b.slice(p, bEnd), { maxEditLength: maxD })
        : undefined;
    if (changes === undefined) {
      charge(work, maxD > 0 ? maxD * (maxD + total) : total);
      work.truncated = true;
      for (let i = p; i < aEnd; i++) out.push('- ' + a[i]);
      for (let i = p; i < bEnd; i++) out.push('+ ' + b[i]);
    } else {
      // Between two common runs, removals are listed before additions (as git does), whatever the order
      // of the edit path.
      let d = 0;
      let added: string[] = [];
      for (const c of changes) {
        if (c.removed) {
          for (const line of c.value) out.push('- ' + line);
        } else if (c.added) {
          added = added.length === 0 ? c.value : added.concat(c.value);
        } else {
          for (const line of added) out.push('+ ' + line);
          added = [];
          for (const line of c.value) out.push('  ' + line);
        }
        if (c.added || c.removed) d += c.value.length;
      }
      for (const line of added) out.push('+ ' + line);
      charge(work, Math.max(1, d) * (d + total));
    }
  }
  for (let i = aEnd; i < a.length; i++) out.push('  ' + a[i]);
  return out.join('\n');
}

function charge(work: DiffWork, units: number): void {
  work.myers -= units;
  work.request.charge(units);
}

/** Whether a[aFrom..aTo) and b[bFrom..bTo) have a line in common. */
function shareALine(a: readonly string[], aFrom: number, aTo: number, b: readonly string[], bFrom: number, bTo: number): boolean {
  if (aTo - aFrom === 1 && bTo - bFrom === 1) return a[aFrom] === b[bFrom];
  const set = new Set<string>();
  for (let i = aFrom; i < aTo; i++) set.add(a[i]!);
  for (let i = bFrom; i < bTo; i++) if (set.has(b[i]!)) return true;
  return false;
}

/**
 * Line diff of two texts in the wire format. CRLF and lone CR count as LF. Uses a fresh budget of
 * {@link LINE_DIFF_WORK_BUDGET}; `truncated` says the diff was reported coarsely (see the module comment).
 */
export function lineDiff(a: string, b: string): { text: string; truncated: boolean } {
  const work = newWork();
  const norm = (t: string) => {
    const s = typeof t === 'string' ? t : t == null ? '' : String(t);
    return s.includes('\r') ? s.replace(/\r\n?/g, '\n') : s;
  };
  try {
    const text = diffLineArrays(splitLines(norm(a)), splitLines(norm(b)), work);
    return { text, truncated: work.truncated };
  } catch {
    // Only reachable when the output would exceed the engine's string limit.
    return { text: '', truncated: true };
  }
}
