/**
 * Blame (docs/api.md "History", the diff route's `blame=true`): `introduced_by` on diff entries = the first commit, walking the revisions
 * oldest to newest, in which that heading appeared. It attributes the heading, not the body.
 *
 *  - Repeated headings are attributed per occurrence, like pairing: the n-th `## Notes` of the page is
 *    attributed to the first revision that had at least n `## Notes` headings. (For a renamed entry whose new
 *    heading also occurs elsewhere in the new page, its occurrence number is taken to be after the other
 *    occurrences: the diff does not record where the renamed section sits among them.)
 *  - `removed` entries are never annotated.
 *  - A `renamed` entry takes the old heading's attribution when the old heading appears in the walk, else
 *    the new heading's.
 *  - The `_preamble` entry is never annotated: blame attributes headings, and the preamble has none.
 *  - A `parse_fallback` diff has no structure to attribute and is returned unchanged.
 *  - A heading absent from every revision (e.g. older than the walk) gets no `introduced_by`.
 *  - At most {@link BLAME_MAX_REVISIONS} revisions are used (the newest ones, if more are passed); a
 *    revision whose page is null (unreadable) is skipped.
 *  - One walk serves many windows: {@link BlameTimeline} records, per heading occurrence, the runs of
 *    revisions that have it, so the blame of every window of a sequence (evolution: each entry's own 200
 *    revisions) is read from a single walk, with the same answers as walking each window.
 * Pure: returns a new SectionDiff and never throws; on any failure the plain diff is returned, as the rule
 * asks of the endpoint.
 */
import type { ParsedPage } from '../page/parse.ts';
import { BLAME_UNITS_PER_HEADING, WorkBudget } from './budget.ts';
import type { CommitRef, SectionDiff, SectionEntry } from './types.ts';

export const BLAME_MAX_REVISIONS = 200;

/**
 * The key of the n-th occurrence (0-based) of a heading: the heading itself for the first, `n\0heading`
 * after. (A heading starts with `## `, so the two forms never collide.)
 */
const key = (heading: string, occurrence: number) => (occurrence === 0 ? heading : `${occurrence}\u0000${heading}`);

const commitCopy = (c: CommitRef): CommitRef => ({
  sha: c.sha,
  author: c.author,
  email: c.email,
  time: c.time,
  message: c.message,
});

/** One revision of a blame walk: a commit and its page (null: deleted or unreadable, skipped). */
export interface BlameRevision {
  commit: CommitRef;
  page: ParsedPage | null;
}

/**
 * What blame learns from a walk: for each heading occurrence, the first revision that had it. It depends
 * only on the revisions, so callers may cache it per (page, newest revision) and apply it to any diff
 * ending there.
 */
export interface BlameIndex {
  /** The first revision of the walk with this heading occurrence (key: see `key` above). */
  first: { get(key: string): CommitRef | undefined };
  /** Heading occurrences seen by the walk (to size caches). */
  size: number;
}

/**
 * One walk over a sequence of revisions (oldest first) that answers blame for any window of it: for each
 * heading occurrence, the runs of consecutive revisions that have it. The first revision of a window
 * [start, end] with a heading is then the start of the first run reaching into the window (or the window's
 * start, inside a run). Evolution walks its revisions once and reads every entry's 200-revision window
 * from it, instead of walking each window.
 *
 * A skipped revision (null page) breaks every run, so a window starting on it never reports it.
 */
export class BlameTimeline {
  constructor(
    private readonly commits: ReadonlyArray<CommitRef>,
    /** Per heading, its first occurrence's runs: bounds [start0, end0, start1, end1, …], inclusive. */
    private readonly headings: ReadonlyMap<string, Track>,
    /** Per key of a later occurrence (`n\0heading`), its runs. */
    private readonly more: ReadonlyMap<string, number[]>,
  ) {}

  /** Revisions in the walk. */
  get length(): number {
    return this.commits.length;
  }

  /** Heading occurrences seen. */
  get size(): number {
    return this.headings.size + this.more.size;
  }

  private runsOf(k: string): number[] | undefined {
    return this.headings.get(k)?.runs ?? this.more.get(k);
  }

  /** The blame index of revisions [start, end] (inclusive indexes, oldest first). */
  window(start: number, end: number): BlameIndex {
    const at = (runs: number[] | undefined): CommitRef | undefined => {
      const i = firstIn(runs, start, end);
      return i === undefined ? undefined : this.commits[i];
    };
    return { first: { get: (k: string) => at(this.runsOf(k)) }, size: this.size };
  }
}

/** The first revision index in [start, end] covered by one of `runs`. */
function firstIn(runs: number[] | undefined, start: number, end: number): number | undefined {
  if (!runs || runs.length === 0) return undefined;
  // Binary search for the first run whose end is ≥ start.
  let lo = 0;
  let hi = runs.length / 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (runs[2 * mid + 1]! < start) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= runs.length / 2) return undefined;
  const first = Math.max(runs[2 * lo]!, start);
  return first <= end ? first : undefined;
}

/**
 * Builds a {@link BlameTimeline} one revision at a time, oldest first, so a caller reading revisions from
 * storage holds only the one at hand. Each heading added is charged to `budget`
 * ({@link BLAME_UNITS_PER_HEADING}); stopping when it is spent is the caller's decision.
 */
export class BlameTimelineBuilder {
  private readonly commits: CommitRef[] = [];
  private readonly headings = new Map<string, Track>();
  private readonly more = new Map<string, number[]>();

  constructor(private readonly budget: WorkBudget = WorkBudget.unlimited()) {}

  /** Adds the next revision; a null (or malformed) page is skipped, breaking every run. */
  add(commit: CommitRef, page: ParsedPage | null): void {
    const j = this.commits.length;
    this.commits.push(commit);
    if (!page || !commit || !Array.isArray(page.sections)) return;
    // One map lookup per heading: the track of a heading also counts its occurrences in this revision.
    for (const s of page.sections) {
      const h = s.heading;
      const t = this.headings.get(h);
      if (!t) {
        this.headings.set(h, { rev: j, n: 0, runs: [j, j] });
      } else if (t.rev !== j) {
        t.rev = j;
        t.n = 0;
        mark(t.runs, j);
      } else {
        const k = key(h, ++t.n);
        const list = this.more.get(k);
        if (list) mark(list, j);
        else this.more.set(k, [j, j]);
      }
    }
    this.budget.charge(BLAME_UNITS_PER_HEADING * (page.sections.length + 1));
  }

  finish(): BlameTimeline {
    return new BlameTimeline(this.commits, this.headings, this.more);
  }
}

/** A heading's first-occurrence runs, and its occurrence count in the revision being added. */
interface Track {
  rev: number;
  n: number;
  runs: number[];
}

/** Revision `j` has the key: extends the run ending at j - 1, or starts a new one. */
function mark(list: number[], j: number): void {
  const n = list.length;
  if (n > 0 && list[n - 1] === j - 1) list[n - 1] = j;
  else list.push(j, j);
}

/** The timeline of `revisionsOldestFirst`, in one go (see {@link BlameTimelineBuilder}). */
export function blameTimeline(revisionsOldestFirst: ReadonlyArray<BlameRevision>, budget?: WorkBudget): BlameTimeline {
  const builder = new BlameTimelineBuilder(budget);
  for (const rev of Array.isArray(revisionsOldestFirst) ? revisionsOldestFirst : []) builder.add(rev?.commit, rev?.page ?? null);
  return builder.finish();
}

/** Walks the revisions oldest to newest (the newest {@link BLAME_MAX_REVISIONS}; null pages skipped). */
export function blameIndex(revisionsOldestFirst: ReadonlyArray<BlameRevision>): BlameIndex {
  const revisions = Array.isArray(revisionsOldestFirst) ? revisionsOldestFirst.slice(-BLAME_MAX_REVISIONS) : [];
  return blameTimeline(revisions).window(0, revisions.length - 1);
}

/** Annotates a diff from its walk: {@link blameIndex} then {@link applyBlame}. */
export function annotateBlame(diff: SectionDiff, revisionsOldestFirst: ReadonlyArray<BlameRevision>): SectionDiff {
  try {
    if (diff.parse_fallback || !Array.isArray(revisionsOldestFirst)) return diff;
    return applyBlame(diff, blameIndex(revisionsOldestFirst));
  } catch {
    return diff;
  }
}

/** Annotates a diff from a blame index (pure; on any failure the plain diff). */
export function applyBlame(diff: SectionDiff, index: BlameIndex): SectionDiff {
  try {
    if (diff.parse_fallback) return diff;
    const { first } = index;

    // Occurrence numbers: `toSeen` counts headings on the new side (entries in new-page order, renamed ones
    // last); `fromSeen` on the old side (matched entries first, then the removed/renamed tail in old order).
    const toSeen = new Map<string, number>();
    const fromSeen = new Map<string, number>();
    const bump = (m: Map<string, number>, h: string): number => {
      const n = m.get(h) ?? 0;
      m.set(h, n + 1);
      return n;
    };
    const sections = diff.sections.map((e): SectionEntry => {
      let by: CommitRef | undefined;
      switch (e.status) {
        case 'removed':
          bump(fromSeen, e.heading);
          return e;
        case 'added':
          by = first.get(key(e.heading, bump(toSeen, e.heading)));
          break;
        case 'modified':
        case 'unchanged':
          bump(fromSeen, e.heading);
          by = first.get(key(e.heading, bump(toSeen, e.heading)));
          break;
        case 'renamed': {
          const newKey = key(e.heading, bump(toSeen, e.heading));
          const oldKey = e.old_heading !== undefined ? key(e.old_heading, bump(fromSeen, e.old_heading)) : undefined;
          by = (oldKey !== undefined ? first.get(oldKey) : undefined) ?? first.get(newKey);
          break;
        }
        default:
          return e;
      }
      return by ? { ...e, introduced_by: commitCopy(by) } : e;
    });

    // The preamble is left as it is: blame attributes headings, and the preamble has none.
    return { ...diff, sections };
  } catch {
    return diff;
  }
}
