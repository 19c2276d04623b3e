/**
 * Rename detection (docs/concepts.md "Section-aware diff"): a post-pass over the sections left unmatched by
 * heading pairing. An unmatched removed section and an unmatched added section collapse into one `renamed`
 * entry when the Jaccard similarity of their bodies' word-token sets is at least 0.7.
 *
 *  - Tokens: the body is split on Unicode whitespace, each piece lowercased and trimmed of leading and
 *    trailing punctuation and symbols (Unicode `P` and `S` categories, which covers Markdown syntax such as
 *    `*`, `_`, `` ` ``, `>`, `|`, `#`); pieces that become empty are dropped. Headings are not tokens.
 *  - Similarity = |A ∩ B| / |A ∪ B|, compared exactly in integers (10·|A∩B| ≥ 7·|A∪B|). Two bodies without
 *    tokens score 0: an empty section says nothing about where it came from.
 *  - Greedy, best first: candidate pairs sorted by score (highest first), ties by the removed section's
 *    position in the old page, then the added section's position in the new page; a pair is taken when
 *    neither side is taken yet.
 *  - Cost cap: more than {@link RENAME_MAX_PAIRS} candidate pairs, or more than {@link RENAME_WORK_BUDGET}
 *    token comparisons, or the request's work budget spent (./budget.ts), abandon the pass (no renames) and
 *    report the diff as truncated.
 */
import { runSteps, WorkBudget, type Steps } from './budget.ts';

/** Rename threshold as an exact fraction. */
const THRESHOLD_NUM = 7;
const THRESHOLD_DEN = 10;
export const RENAME_MAX_PAIRS = 1_000_000;
export const RENAME_WORK_BUDGET = 4_000_000;

const PUNCT = /^[\p{P}\p{S}]$/u;

/**
 * A token without leading and trailing punctuation/symbols, by code point. (A loop, not
 * `/[\p{P}\p{S}]+$/`, which is quadratic on long inner runs of punctuation.)
 */
function trimPunct(t: string): string {
  let start = 0;
  let end = t.length;
  while (start < end) {
    const cp = t.codePointAt(start)!;
    const len = cp > 0xffff ? 2 : 1;
    if (!PUNCT.test(t.slice(start, start + len))) break;
    start += len;
  }
  while (end > start) {
    const lo = t.charCodeAt(end - 1);
    const len = lo >= 0xdc00 && lo <= 0xdfff && end - 2 >= start && (t.charCodeAt(end - 2) & 0xfc00) === 0xd800 ? 2 : 1;
    if (!PUNCT.test(t.slice(end - len, end))) break;
    end -= len;
  }
  return start === 0 && end === t.length ? t : t.slice(start, end);
}

/** The word-token set of a section body. */
export function wordTokens(body: string): Set<string> {
  const set = new Set<string>();
  for (const piece of body.split(/\s+/u)) {
    if (piece === '') continue;
    const t = trimPunct(piece.toLowerCase());
    if (t !== '') set.add(t);
  }
  return set;
}

/** Jaccard similarity of two token sets (0 when both are empty). */
export function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const inter = intersectionSize(a, b);
  const union = a.size + b.size - inter;
  return union === 0 ? 0 : inter / union;
}

function intersectionSize(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  const [small, large] = a.size <= b.size ? [a, b] : [b, a];
  let n = 0;
  for (const t of small) if (large.has(t)) n++;
  return n;
}

export interface RenameResult {
  /** removed index (into `removedBodies`) → added index (into `addedBodies`). */
  pairs: Map<number, number>;
  /** The pass was abandoned for cost. */
  truncated: boolean;
}

/**
 * Match removed and added bodies (each list in its page order) by the rule above, synchronously; `budget`
 * is the request's work budget (unlimited by default).
 */
export function detectRenames(
  removedBodies: readonly string[],
  addedBodies: readonly string[],
  budget: WorkBudget = WorkBudget.unlimited(),
): RenameResult {
  return runSteps(renameSteps(removedBodies, addedBodies, budget));
}

/**
 * {@link detectRenames} in steps (./budget.ts): tokenizing and comparing are charged to `budget`, the pass
 * pauses when a turn is due, and it is abandoned (no renames, truncated) once the budget is spent.
 */
export function* renameSteps(removedBodies: readonly string[], addedBodies: readonly string[], budget: WorkBudget): Steps<RenameResult> {
  const pairs = new Map<number, number>();
  const abandoned = (): RenameResult => ({ pairs: new Map(), truncated: true });
  if (removedBodies.length === 0 || addedBodies.length === 0) return { pairs, truncated: false };
  if (removedBodies.length * addedBodies.length > RENAME_MAX_PAIRS) return abandoned();
  if (budget.exhausted) return abandoned();

  const tokens = (bodies: readonly string[]): Set<string>[] => {
    const out: Set<string>[] = [];
    for (const b of bodies) {
      out.push(wordTokens(b));
      budget.charge(b.length + 1);
    }
    return out;
  };
  const rTok = tokens(removedBodies);
  const aTok = tokens(addedBodies);
  if (budget.exhausted) return abandoned();
  const candidates: Array<{ r: number; a: number; inter: number; union: number }> = [];
  let work = 0;
  for (let r = 0; r < rTok.length; r++) {
    const rs = rTok[r]!;
    const before = work;
    if (rs.size !== 0) {
      for (let a = 0; a < aTok.length; a++) {
        const as = aTok[a]!;
        if (as.size === 0) continue;
        const small = Math.min(rs.size, as.size);
        const large = Math.max(rs.size, as.size);
        // |A∩B| ≤ small and |A∪B| ≥ large, so a size ratio under the threshold can never reach it.
        if (THRESHOLD_DEN * small < THRESHOLD_NUM * large) continue;
        work += small;
        if (work > RENAME_WORK_BUDGET) return abandoned();
        const inter = intersectionSize(rs, as);
        const union = rs.size + as.size - inter;
        if (THRESHOLD_DEN * inter >= THRESHOLD_NUM * union) candidates.push({ r, a, inter, union });
      }
    }
    // One unit per pair looked at, plus the comparisons made.
    budget.charge(aTok.length + (work - before));
    if (budget.exhausted) return abandoned();
    if (budget.turnDue()) yield;
  }
  candidates.sort(bestFirst);
  const usedAdded = new Set<number>();
  for (const c of candidates) {
    if (pairs.has(c.r) || usedAdded.has(c.a)) continue;
    pairs.set(c.r, c.a);
    usedAdded.add(c.a);
  }
  return { pairs, truncated: false };
}

/** Higher similarity first (exact: x.inter/x.union vs y.inter/y.union), then old position, then new. */
function bestFirst(x: { r: number; a: number; inter: number; union: number }, y: { r: number; a: number; inter: number; union: number }): number {
  return y.inter * x.union - x.inter * y.union || x.r - y.r || x.a - y.a;
}
