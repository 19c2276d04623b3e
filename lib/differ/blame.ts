/**
 * Blame (SPEC.md Diff rule 6): `introduced_by` on diff entries = the first commit, walking the revisions
 * oldest to newest, in which that heading appeared. It attributes the heading, not the body.
 *
 *  - Repeated headings are attributed per occurrence, like pairing: the n-th `## Notes` of the page is
 *    attributed to the first revision that had at least n `## Notes` headings. (For a renamed entry whose new
 *    heading also occurs elsewhere in the new page, its occurrence number is taken to be after the other
 *    occurrences: the diff does not record where the renamed section sits among them.)
 *  - `removed` entries are never annotated.
 *  - A `renamed` entry takes the old heading's attribution when the old heading appears in the walk, else
 *    the new heading's.
 *  - The `_preamble` entry (not removed) is attributed to the first revision that had a preamble.
 *  - A `parse_fallback` diff has no structure to attribute and is returned unchanged.
 *  - A heading absent from every revision (e.g. older than the walk) gets no `introduced_by`.
 *  - At most {@link BLAME_MAX_REVISIONS} revisions are used (the newest ones, if more are passed); a
 *    revision whose page is null (unreadable) is skipped.
 * Pure: returns a new SectionDiff and never throws; on any failure the plain diff is returned, as the rule
 * asks of the endpoint.
 */
import type { ParsedPage } from '../page/parse.ts';
import type { CommitRef, SectionDiff, SectionEntry } from './types.ts';

export const BLAME_MAX_REVISIONS = 200;

const key = (heading: string, occurrence: number) => `${occurrence}\u0000${heading}`;

const commitCopy = (c: CommitRef): CommitRef => ({
  sha: c.sha,
  author: c.author,
  email: c.email,
  time: c.time,
  message: c.message,
});

/**
 * What blame learns from a walk: for each heading occurrence, the first revision that had it, and the
 * first revision with a preamble. It depends only on the revisions, so callers may cache it per (page,
 * newest revision) and apply it to any diff ending there.
 */
export interface BlameIndex {
  first: ReadonlyMap<string, CommitRef>;
  firstPreamble?: CommitRef;
}

/** Walks the revisions oldest to newest (the newest {@link BLAME_MAX_REVISIONS}; null pages skipped). */
export function blameIndex(revisionsOldestFirst: ReadonlyArray<{ commit: CommitRef; page: ParsedPage | null }>): BlameIndex {
  const revisions = Array.isArray(revisionsOldestFirst) ? revisionsOldestFirst.slice(-BLAME_MAX_REVISIONS) : [];
  const first = new Map<string, CommitRef>();
  let firstPreamble: CommitRef | undefined;
  for (const rev of revisions) {
    const page = rev?.page;
    if (!page || !rev.commit || !Array.isArray(page.sections)) continue;
    const counts = new Map<string, number>();
    for (const s of page.sections) {
      const n = counts.get(s.heading) ?? 0;
      counts.set(s.heading, n + 1);
      const k = key(s.heading, n);
      if (!first.has(k)) first.set(k, rev.commit);
    }
    if (!firstPreamble && typeof page.preamble === 'string' && page.preamble !== '') firstPreamble = rev.commit;
  }
  return firstPreamble ? { first, firstPreamble } : { first };
}

export function annotateBlame(
  diff: SectionDiff,
  revisionsOldestFirst: ReadonlyArray<{ commit: CommitRef; page: ParsedPage | null }>,
): SectionDiff {
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
    const { first, firstPreamble } = index;

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

    const out: SectionDiff = { ...diff, sections };
    if (diff.preamble && diff.preamble.status !== 'removed' && firstPreamble) {
      out.preamble = { ...diff.preamble, introduced_by: commitCopy(firstPreamble) };
    }
    return out;
  } catch {
    return diff;
  }
}
