/**
 * The section differ (docs/concepts.md "Section-aware diff", docs/api.md "History": the diff route): one pure,
 * web-standard module shared by the diff and evolution endpoints, the command-line client's local diff and
 * the agent tool server.
 *
 * How two pages compare (page parsing rules: lib/core/page/parse.ts):
 *  - Fallback. When either side has no frontmatter, or frontmatter that does not parse to a mapping, the
 *    structure is abandoned: `parse_fallback: true`, empty frontmatter lists, `sections: []`, and the
 *    whole-file diff in `preamble` (heading `_preamble`; `from`/`to` are the whole normalised texts with
 *    trailing blank lines trimmed). An empty (whitespace-only) document is a valid empty page, never a
 *    fallback by itself; in a fallback its side counts as absent, so the entry is `added`/`removed`.
 *  - Frontmatter: see ./frontmatter.ts.
 *  - Preamble: present when either side has text before the first heading; `added`, `removed`,
 *    `unchanged` or `modified`.
 *  - Sections pair by heading, the n-th occurrence of a heading with the n-th: `unchanged` when the trimmed
 *    bodies are equal, else `modified`; unpaired new ones are `added`, unpaired old ones `removed`. Then the
 *    rename pass (./rename.ts) turns a removed + added couple into one `renamed` entry.
 *  - Order: entries in new-page order, then removed ones in old-page order; a renamed entry takes the
 *    place of its removed section (and its added section leaves the new-page part).
 *  - Entry fields, the same for every status: `from` when the section exists on the old side, `to` when it
 *    exists on the new side, `line_diff` always, each omitted when it is the empty string (docs/api.md: optional
 *    keys are omitted when empty). So `unchanged` entries carry their body and an all-`"  "` line diff,
 *    which lets a client print the whole page with changes in context; `added` entries have an all-`"+ "`
 *    diff and `removed` ones an all-`"- "` diff. One exception: a `renamed` entry whose body did
 *    not change carries no `line_diff` — the rename alone is the change.
 *  - Work is bounded (./line.ts, ./rename.ts), per SectionDiff and, when the caller passes one, by the
 *    request's work budget (./budget.ts) shared by every diff of a request; when a bound is hit the
 *    SectionDiff says `truncated: true`. {@link diffParsedAsync} also gives the event loop a turn now and
 *    then; {@link diffParsed} runs the same steps in one go.
 *
 * Nothing here throws: a page that cannot be parsed is a fallback, and an internal failure degrades to a
 * fallback diff with `truncated: true`.
 */
import { parsePage, trimTrailingBlankLines, type ParsedPage } from '../page/parse.ts';
import { diffFrontmatter } from './frontmatter.ts';
import { ENTRY_UNITS, runSteps, runStepsAsync, WorkBudget, type Steps } from './budget.ts';
import { diffLineArrays, newWork, splitLines, type DiffWork } from './line.ts';
import { renameSteps } from './rename.ts';
import type { DiffShas, SectionDiff, SectionEntry, SectionStatus } from './types.ts';

export type { CommitRef, DiffShas, FieldChange, SectionDiff, SectionEntry, SectionStatus } from './types.ts';
export type { ParsedPage, PageSection, PageType, Frontmatter } from '../page/parse.ts';
export { parsePage } from '../page/parse.ts';
export {
  annotateBlame,
  applyBlame,
  blameIndex,
  blameTimeline,
  BLAME_MAX_REVISIONS,
  BlameTimeline,
  BlameTimelineBuilder,
  type BlameIndex,
  type BlameRevision,
} from './blame.ts';
export { lineDiff, LINE_DIFF_WORK_BUDGET } from './line.ts';
export { diffFrontmatter, canonical } from './frontmatter.ts';
export { detectRenames, wordTokens, jaccard, RENAME_MAX_PAIRS, RENAME_WORK_BUDGET } from './rename.ts';
export {
  BudgetExhausted,
  nextTurn,
  REQUEST_WORK_UNITS,
  runSteps,
  runStepsAsync,
  WorkBudget,
  YIELD_EVERY_UNITS,
  type Steps,
} from './budget.ts';

/** Heading of the preamble entry (and of the whole-file entry of a fallback). */
export const PREAMBLE_HEADING = '_preamble';

/** Diff two page texts. `from_sha`/`to_sha` default to `""` (the empty document of evolution's first entry). */
export function diffPages(fromText: string, toText: string, shas: DiffShas = {}): SectionDiff {
  return diffParsed(parsePage(fromText), parsePage(toText), shas);
}

/**
 * Diff two parsed pages, so callers that compare many revisions parse each one once. `budget`: the
 * request's work budget, charged and obeyed (default: unlimited, only the per-diff caps apply).
 */
export function diffParsed(from: ParsedPage, to: ParsedPage, shas: DiffShas = {}, budget?: WorkBudget): SectionDiff {
  const [fromSha, toSha] = shasOf(shas);
  try {
    return runSteps(diffSteps(from, to, fromSha, toSha, budget ?? WorkBudget.unlimited()));
  } catch {
    return emergencyDiff(from, to, fromSha, toSha);
  }
}

/** {@link diffParsed} that gives the event loop a turn every so often (see ./budget.ts). */
export async function diffParsedAsync(from: ParsedPage, to: ParsedPage, shas: DiffShas, budget: WorkBudget): Promise<SectionDiff> {
  const [fromSha, toSha] = shasOf(shas);
  try {
    return await runStepsAsync(diffSteps(from, to, fromSha, toSha, budget));
  } catch {
    return emergencyDiff(from, to, fromSha, toSha);
  }
}

const shasOf = (shas: DiffShas | undefined): [string, string] => [
  typeof shas?.from_sha === 'string' ? shas.from_sha : '',
  typeof shas?.to_sha === 'string' ? shas.to_sha : '',
];

function* diffSteps(from: ParsedPage, to: ParsedPage, fromSha: string, toSha: string, request: WorkBudget): Steps<SectionDiff> {
  const work = newWork(request);
  if (from.frontmatter === null || to.frontmatter === null) {
    const preamble = wholeFileEntry(from, to, work);
    return finish({ from_sha: fromSha, to_sha: toSha, frontmatter: emptyFrontmatter(), preamble, sections: [], parse_fallback: true }, work);
  }

  const frontmatter = diffFrontmatter(from.frontmatter, to.frontmatter);
  let preamble: SectionEntry | undefined;
  if (from.preamble !== '' || to.preamble !== '') {
    preamble = entry(PREAMBLE_HEADING, from.preamble !== '' ? from.preamble : undefined, to.preamble !== '' ? to.preamble : undefined, work);
  }
  request.charge(from.sections.length + to.sections.length); // pairing by heading

  // Pair by heading, n-th occurrence with n-th.
  const fromIndex = new Map<string, number[]>();
  from.sections.forEach((s, i) => {
    const list = fromIndex.get(s.heading);
    if (list) list.push(i);
    else fromIndex.set(s.heading, [i]);
  });
  const seen = new Map<string, number>();
  const matched = new Uint8Array(from.sections.length);
  const toPart: Array<{ ti: number; fi: number }> = []; // fi = -1: added
  const added: number[] = [];
  to.sections.forEach((s, ti) => {
    const n = seen.get(s.heading) ?? 0;
    seen.set(s.heading, n + 1);
    const fi = fromIndex.get(s.heading)?.[n];
    if (fi !== undefined) {
      matched[fi] = 1;
      toPart.push({ ti, fi });
    } else {
      toPart.push({ ti, fi: -1 });
      added.push(ti);
    }
  });
  const removed: number[] = [];
  for (let i = 0; i < from.sections.length; i++) if (!matched[i]) removed.push(i);

  const renames = yield* renameSteps(
    removed.map((i) => from.sections[i]!.body),
    added.map((i) => to.sections[i]!.body),
    request,
  );
  if (renames.truncated) work.truncated = true;
  const renamedFrom = new Map<number, number>(); // from index → to index
  const renamedTo = new Set<number>();
  for (const [r, a] of renames.pairs) {
    renamedFrom.set(removed[r]!, added[a]!);
    renamedTo.add(added[a]!);
  }

  const sections: SectionEntry[] = [];
  for (const { ti, fi } of toPart) {
    const t = to.sections[ti]!;
    if (fi < 0) {
      if (!renamedTo.has(ti)) sections.push(entry(t.heading, undefined, t.body, work));
    } else {
      sections.push(entry(t.heading, from.sections[fi]!.body, t.body, work));
    }
    if (request.turnDue()) yield;
  }
  for (const fi of removed) {
    const f = from.sections[fi]!;
    const ti = renamedFrom.get(fi);
    if (ti === undefined) sections.push(entry(f.heading, f.body, undefined, work));
    else sections.push(entry(to.sections[ti]!.heading, f.body, to.sections[ti]!.body, work, f.heading));
    if (request.turnDue()) yield;
  }
  // Built in wire order: from_sha, to_sha, frontmatter, preamble?, sections.
  const out: SectionDiff = preamble
    ? { from_sha: fromSha, to_sha: toSha, frontmatter, preamble, sections }
    : { from_sha: fromSha, to_sha: toSha, frontmatter, sections };
  return finish(out, work);
}

/**
 * One entry. `from`/`to` undefined = the section does not exist on that side. Status: `renamed` when an
 * old heading is given, else from the presence and equality of the bodies.
 */
function entry(heading: string, from: string | undefined, to: string | undefined, work: DiffWork, oldHeading?: string): SectionEntry {
  const status: SectionStatus =
    oldHeading !== undefined ? 'renamed' : from === undefined ? 'added' : to === undefined ? 'removed' : from === to ? 'unchanged' : 'modified';
  const e: SectionEntry = { heading, status };
  if (oldHeading !== undefined) e.old_heading = oldHeading;
  if (from) e.from = from;
  if (to) e.to = to;
  work.request.charge(ENTRY_UNITS + (from?.length ?? 0) + (to?.length ?? 0));
  // A rename with the same body: the heading is the whole change, no line diff to show.
  if (oldHeading !== undefined && (from ?? '') === (to ?? '')) return e;
  const lines = diffLineArrays(splitLines(from ?? ''), splitLines(to ?? ''), work);
  if (lines) e.line_diff = lines;
  return e;
}

/** The whole-file entry of a fallback: an empty document is an absent side. */
function wholeFileEntry(from: ParsedPage, to: ParsedPage, work: DiffWork): SectionEntry {
  const a = from.empty ? undefined : trimTrailingBlankLines(from.text);
  const b = to.empty ? undefined : trimTrailingBlankLines(to.text);
  return entry(PREAMBLE_HEADING, a, b, work);
}

const emptyFrontmatter = (): SectionDiff['frontmatter'] => ({ changed: [], added: [], removed: [] });

function finish(d: SectionDiff, work: DiffWork): SectionDiff {
  if (work.truncated) d.truncated = true;
  return d;
}

/** Last resort after an internal failure: a coarse whole-file fallback, or without a line diff at all. */
function emergencyDiff(from: ParsedPage, to: ParsedPage, fromSha: string, toSha: string): SectionDiff {
  const base: SectionDiff = { from_sha: fromSha, to_sha: toSha, frontmatter: emptyFrontmatter(), sections: [], parse_fallback: true, truncated: true };
  let a = '';
  let b = '';
  try {
    a = typeof from?.text === 'string' && !from.empty ? from.text : '';
    b = typeof to?.text === 'string' && !to.empty ? to.text : '';
    base.preamble = entry(PREAMBLE_HEADING, a === '' ? undefined : a, b === '' ? undefined : b, newWork(WorkBudget.unlimited(), 0));
  } catch {
    base.preamble = { heading: PREAMBLE_HEADING, status: a === b ? 'unchanged' : a === '' ? 'added' : b === '' ? 'removed' : 'modified' };
  }
  return base;
}
