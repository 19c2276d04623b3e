/**
 * What a section merge on push did (docs/api.md "Pages", the push route's "Section merge"), for `kr push` and the agent's `kr_push`:
 * which parts of a merged page came from the server (theirs), which from this folder (yours), and which
 * from both; and how the parts a merge or a conflict names read.
 *
 * The client does not keep the text its copy was based on (`.kr/state.json` holds only its commit and
 * hash), and the server has no route that serves a page at an older commit. So the origins come from two
 * section diffs the server computes with the one differ (docs/api.md "History", the diff route): *base → theirs*
 * (the page at the parent this folder sent → the head it was merged with) says what changed on the server,
 * and *theirs → merged* (that head → the commit of the push) what the push added on top. A part in both
 * was changed on both sides and merged line by line; a change made identically on both sides shows as
 * theirs (the server already had it). Names follow the merge's own (`frontmatter.<key>`, `_preamble`, the
 * heading), and renames are reported as the differ pairs them.
 */
import type { SectionDiff } from '../lib/core/differ/index.ts';
import { MERGE_FRONTMATTER, MERGE_PREAMBLE, type MergeSide } from '../lib/core/differ/merge.ts';
import { parsePage } from '../lib/core/page/parse.ts';
import type { Api } from './api.ts';
import { clean } from './output.ts';
import { PREAMBLE_LABEL, WHOLE_FILE_LABEL } from './render.ts';

/** One part of a merged page and where it came from. */
export interface PartOrigin {
  /** `frontmatter.<key>`, `_preamble` or a heading (`## Decision`). */
  name: string;
  side: MergeSide;
  /** What happened to it (a frontmatter key: always `modified`). */
  change: 'added' | 'modified' | 'removed' | 'renamed';
  /** For `renamed`: the heading it had before. */
  from?: string;
}

export interface MergeOrigins {
  /** Frontmatter keys first, then the preamble, then sections in the merged page's order, removed ones last. */
  parts: PartOrigin[];
  /** The page does not parse as frontmatter and sections on some side: `_preamble` is the whole file. */
  wholeFile: boolean;
}

type Change = { change: PartOrigin['change']; from?: string };

/** The parts a section diff reports as changed, by merge name. */
function changedParts(d: SectionDiff): Map<string, Change> {
  const out = new Map<string, Change>();
  for (const f of [...d.frontmatter.changed, ...d.frontmatter.added, ...d.frontmatter.removed]) out.set(`frontmatter.${f.field}`, { change: 'modified' });
  for (const e of [...(d.preamble ? [d.preamble] : []), ...d.sections]) {
    if (e.status === 'unchanged' || out.has(e.heading)) continue;
    out.set(e.heading, e.status === 'renamed' && e.old_heading !== undefined ? { change: 'renamed', from: e.old_heading } : { change: e.status });
  }
  return out;
}

/**
 * Where each changed part of a merged page came from: `parent` is the commit this folder's copy was based
 * on, `mergedWith` the head the server merged with, `sha` the commit of the push, `mergedText` the page it
 * committed. Two requests; throws what the API throws.
 */
export async function mergeOrigins(
  api: Api,
  repo: string,
  path: string,
  shas: { parent: string; mergedWith: string; sha: string },
  mergedText: string,
): Promise<MergeOrigins> {
  const [theirs, ours] = await Promise.all([
    api.diff(repo, path, { from: shas.parent, to: shas.mergedWith }),
    api.diff(repo, path, { from: shas.mergedWith, to: shas.sha }),
  ]);
  const t = changedParts(theirs);
  const o = changedParts(ours);
  const parts: PartOrigin[] = [];
  for (const [name, c] of t) parts.push({ name, side: o.has(name) ? 'both' : 'theirs', ...c });
  for (const [name, c] of o) if (!t.has(name)) parts.push({ name, side: 'ours', ...c });
  // In the order of the merged page.
  const merged = parsePage(mergedText);
  const rank = (p: PartOrigin): number => {
    if (p.name.startsWith('frontmatter.')) return -2;
    if (p.name === MERGE_PREAMBLE) return -1;
    if (p.change === 'removed') return Number.MAX_SAFE_INTEGER;
    const at = merged.sections.findIndex((s) => s.heading === p.name);
    return at < 0 ? Number.MAX_SAFE_INTEGER - 1 : at;
  };
  parts.sort((a, b) => rank(a) - rank(b));
  return { parts, wholeFile: theirs.parse_fallback === true || ours.parse_fallback === true };
}

/**
 * A part's name for a terminal: `## Decision`, `frontmatter tags`, `(preamble)`, or `(whole file)` for a
 * page that does not parse; control characters shown as `?`.
 */
export function partLabel(name: string, wholeFile = false): string {
  if (name === MERGE_PREAMBLE) return wholeFile ? WHOLE_FILE_LABEL : PREAMBLE_LABEL;
  if (name === MERGE_FRONTMATTER) return 'frontmatter (comments, key order or formatting)';
  if (name.startsWith('frontmatter.')) return `frontmatter ${clean(name.slice('frontmatter.'.length))}`;
  return clean(name);
}

const SIDE_WORD: Record<MergeSide, string> = { theirs: 'theirs', ours: 'yours', both: 'both' };

/** `## Decision (theirs)`, `## Risks (yours, added)`, `## Plan (theirs, renamed from ## Plans)`. */
export function originLabel(p: PartOrigin, wholeFile = false): string {
  const what = p.change === 'added' || p.change === 'removed' ? `, ${p.change}` : p.change === 'renamed' && p.from !== undefined ? `, renamed from ${clean(p.from)}` : '';
  return `${partLabel(p.name, wholeFile)} (${SIDE_WORD[p.side]}${what})`;
}

/** Whether any of the texts fails to parse as a page: then a merge's `_preamble` is the whole file. */
export const anyWholeFile = (...texts: Array<string | undefined>): boolean => texts.some((t) => t !== undefined && parsePage(t).frontmatter === null);
