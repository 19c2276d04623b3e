import {
  applyBlame,
  BLAME_MAX_REVISIONS,
  BlameTimelineBuilder,
  BudgetExhausted,
  diffParsedAsync,
  nextTurn,
  parsePage,
  WorkBudget,
  type BlameIndex,
  type BlameTimeline,
  type ParsedPage,
  type SectionDiff,
} from '../core/differ/index.ts';
import type { IndexedCommit } from '../repo/path-index.ts';
import type { Repo } from '../repo/repos.ts';
import { LruCache } from '../git/lru.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import type { Logger } from '../framework/log.ts';
import { commitJson } from './shape.ts';
import { utf8 } from '../util/bytes.ts';
import type { Commit } from '../../schema/wire/common.ts';

/**
 * The diff and evolution endpoints' logic (docs/api.md "History": the diff and evolution routes), answered
 * from the derived commit/path index and the git object store — never by walking the whole history. The
 * section differ itself is lib/differ; this module decides which two revisions to compare and feeds it.
 *
 * Revision resolution for `GET /diff/<path>?from=&to=`:
 *  - `from`/`to` are 1–40 hex characters resolving to exactly one commit of the branch; anything else
 *    (names, tags, `HEAD~1`, unknown or ambiguous abbreviations) is 400 `unknown sha: <value>`. An empty
 *    value (`?from=`) counts as not given. Both values are checked before anything else.
 *  - A path no commit ever touched → 404 `path not present in repo`.
 *  - `to` defaults to the page's tip: the most recent commit that touched the path (a deletion counts: the
 *    diff then shows everything removed).
 *  - `from` defaults to the commit that touched the path before the one that produced the page as it is
 *    at `to` — not the git parent. With neither given that is the previous commit touching the path; with
 *    only `to` given and `to` touching the path, the previous touch before `to`; with only `to` given and
 *    `to` not touching the path, the touch before the last one at or before `to` (so the diff shows the
 *    page's last change as of `to`, rather than an all-unchanged comparison of equal contents).
 *    No such commit → 400 `no parent commit for this path; pass ?from explicitly`; the path not existing
 *    at or before `to` at all → 404 `path not present at either sha`.
 *  - Only `from` given → compared against the page's tip.
 *  - A side whose commit lacks the path is the empty document; both sides lacking it → 404
 *    `path not present at either sha`. `from_sha`/`to_sha` are the full resolved shas.
 *
 * Blame (`blame=true`): the revisions are the at most {@link BLAME_MAX_REVISIONS} most recent commits
 * touching the path at or before `to`, walked oldest to newest once (lib/differ's BlameTimelineBuilder,
 * one revision read at a time). A revision that deleted the page, or whose blob cannot be read, is skipped.
 * Any failure while gathering them returns the plain diff (logged as a warning). Nothing to attribute (a
 * `parse_fallback` diff, or a `to` side without the page) means no walk at all.
 *
 * Evolution: every commit touching the page, newest first, each diffed against the previous commit
 * touching it (the oldest against the empty document, `from_sha: ""`); a deletion is an entry whose `to`
 * side is empty. With blame each entry is annotated from its own window (the 200 touches up to it), all
 * windows read from ONE walk over the union of the windows (at most limit + 199 touches): blame is
 * computed once per request, not once per entry. When the entries' texts pass {@link EVOLUTION_MAX_CHARS}
 * (multi-megabyte pages), the later ones are left out and the response says `"truncated": true` at the top
 * level (the first entry is always there).
 *
 * Work budget: every request gets one lib/differ WorkBudget (REQUEST_WORK_UNITS), charged by parsing
 * revisions not in the cache, by every diff (an evolution's up to 200 diffs share it) and by the blame
 * walk, in that order. Once it is spent:
 *  - the diff being computed finishes coarsely (line diffs as whole-block replacements, rename detection
 *    skipped) and says `truncated: true`;
 *  - evolution adds no further entries and says `"truncated": true` at the top level;
 *  - blame is abandoned (checked before each revision of the walk): the plain diffs, each saying
 *    `truncated: true`.
 * Long loops give the event loop a turn every YIELD_EVERY_UNITS, so other requests are served meanwhile.
 *
 * Each revision is parsed once: parsed pages are kept in a {@link ParseCache} keyed by (repository, blob
 * id), injected through Deps, with the headings-only outlines blame needs kept longer, so repeated requests
 * and evolution-with-blame reuse parses.
 */

/**
 * Parsed pages by (repository, blob id), size-bounded, least recently used first out; plus, for blame,
 * their outlines (headings only), which are small enough to keep for many more revisions. Concurrent
 * requests for the same blob share one parse.
 */
export class ParseCache {
  private readonly pages: LruCache<ParsedPage>;
  private readonly outlines: LruCache<ParsedPage>;
  private readonly pending = new Map<string, Promise<ParsedPage>>();
  /** Blame indexes by (repo, path, newest revision's sha): a walk's result never changes. */
  private readonly blames: LruCache<BlameIndex>;
  /** Counters, for tests and diagnostics: pages parsed, and blame walks made (one per request at most). */
  readonly stats = { parses: 0, blameWalks: 0 };

  /**
   * `capacity`: estimated bytes of parsed pages kept (default 32 MiB); `outlineCapacity`: estimated
   * bytes of outlines kept (default 8 MiB); `blameCapacity`: estimated bytes of blame indexes kept
   * (default 4 MiB). The Node build sizes all three from SERVICE_CACHE_MB (lib/framework/config.ts cacheBudget).
   */
  constructor(capacity = 32 * 1024 * 1024, outlineCapacity = 8 * 1024 * 1024, blameCapacity = 4 * 1024 * 1024) {
    this.pages = new LruCache<ParsedPage>(capacity, estimateSize);
    this.outlines = new LruCache<ParsedPage>(outlineCapacity, estimateSize);
    this.blames = new LruCache<BlameIndex>(blameCapacity, (b) => 256 + b.size * 256);
  }

  /**
   * The parsed page of blob `oid` in `repo`; `load` reads the blob's bytes on a miss, and the parse is
   * charged to `budget` (one unit per character).
   */
  async get(repo: string, oid: string, load: () => Promise<Uint8Array>, budget?: WorkBudget): Promise<ParsedPage> {
    const key = cacheKey(repo, oid);
    const hit = this.pages.get(key);
    if (hit) return hit;
    let p = this.pending.get(key);
    if (!p) {
      p = (async () => {
        const text = utf8(await load());
        const page = parsePage(text);
        this.stats.parses++;
        budget?.charge(text.length);
        this.pages.set(key, page);
        this.outlines.set(key, outlineOf(page));
        return page;
      })();
      this.pending.set(key, p);
      const clear = () => this.pending.delete(key);
      p.then(clear, clear);
    }
    return p;
  }

  /**
   * The outline of blob `oid` (parsing it on a miss): what blame needs of a revision. A page parsed only
   * for its outline is not kept whole (blame walks many revisions, diffs need few), and its parse is
   * charged to `budget`.
   */
  async outline(repo: string, oid: string, load: () => Promise<Uint8Array>, budget?: WorkBudget): Promise<ParsedPage> {
    const key = cacheKey(repo, oid);
    const hit = this.outlines.get(key);
    if (hit) return hit;
    const whole = this.pages.get(key) ?? (await this.pending.get(key));
    if (whole) return this.outlines.get(key) ?? outlineOf(whole);
    const text = utf8(await load());
    const outline = outlineOf(parsePage(text));
    this.stats.parses++;
    budget?.charge(text.length);
    this.outlines.set(key, outline);
    return outline;
  }

  /**
   * The blame index of `path` for the walk ending at commit `toSha`, computed by `walk` on a miss. A
   * failed walk is not cached.
   */
  async blame(repo: string, path: string, toSha: string, walk: () => Promise<BlameIndex>): Promise<BlameIndex> {
    const key = `${repo}\u0000${path}\u0000${toSha}`;
    const hit = this.blames.get(key);
    if (hit) return hit;
    const index = await walk();
    this.blames.set(key, index);
    return index;
  }

  /** Estimated bytes held (pages, outlines and blame indexes). */
  get bytes(): number {
    return this.pages.bytes + this.outlines.bytes + this.blames.bytes;
  }
}

const cacheKey = (repo: string, oid: string) => `${repo}\u0000${oid}`;

/** A parsed page holds its text plus roughly one more copy in preamble and section bodies (UTF-16). */
function estimateSize(p: ParsedPage): number {
  let headings = 0;
  for (const s of p.sections) headings += s.heading.length;
  return 256 + (p.text.length + p.preamble.length + (p.frontmatterRaw?.length ?? 0)) * 2 + p.sections.length * 96 + headings * 4;
}

/**
 * The part of a page that blame reads (lib/core/differ/blame.ts): its headings, in order, and whether it has a
 * preamble. Texts and bodies are dropped; a non-empty preamble is kept as one character.
 */
function outlineOf(p: ParsedPage): ParsedPage {
  return {
    text: '',
    empty: p.empty,
    frontmatter: p.frontmatter === null ? null : {},
    ...(p.frontmatterProblem ? { frontmatterProblem: p.frontmatterProblem } : {}),
    frontmatterRaw: null,
    preamble: p.preamble === '' ? '' : '\u2026',
    sections: p.sections.map((s) => ({ heading: s.heading, body: '', line: s.line })),
  };
}

export interface DiffDeps {
  parsedPages: ParseCache;
  log?: Logger;
}

export interface DiffQuery {
  from?: string;
  to?: string;
  blame?: boolean;
}

export interface EvolutionEntry {
  commit: Commit;
  diff: SectionDiff;
}

export interface Evolution {
  path: string;
  entries: EvolutionEntry[];
  /**
   * Entries were left out to bound the response ({@link EVOLUTION_MAX_CHARS}) or the work (the request's
   * budget); ask with a lower limit.
   */
  truncated?: true;
}

export const EVOLUTION_DEFAULT_LIMIT = 20;
export const EVOLUTION_MAX_LIMIT = 200;
/**
 * Evolution stops adding entries once their texts (bodies and line diffs) exceed this many characters,
 * and says `truncated: true`; the first entry is always given.
 */
export const EVOLUTION_MAX_CHARS = 32 * 1024 * 1024;

/** One revision of the page: a commit and the blob the path has there (null: absent). */
interface Side {
  commit: IndexedCommit;
  blob: string | null;
}

const LATEST = Number.MAX_SAFE_INTEGER;
const EMPTY_PAGE = (): ParsedPage => parsePage('');

/**
 * `GET /v1/repos/:id/diff/<path>`: the SectionDiff of two revisions of a page (see the module comment).
 * `budget`: the request's work budget.
 */
export async function diffPage(
  deps: DiffDeps,
  repo: Repo,
  path: string,
  q: DiffQuery = {},
  budget: WorkBudget = new WorkBudget(),
): Promise<SectionDiff> {
  const { id, index } = repo;
  await repo.ready();
  const given = (v: string | undefined) => (v === undefined || v === '' ? undefined : v);
  const fromQ = given(q.from);
  const toQ = given(q.to);
  // UnknownShaError → 400 `unknown sha: <value>` (lib/framework/app.ts).
  const from = fromQ !== undefined ? await index.resolve(fromQ) : undefined;
  const to = toQ !== undefined ? await index.resolve(toQ) : undefined;

  const tip = await index.lastTouch(path, LATEST);
  if (!tip) throw refuse(R.path_not_in_repo);

  // The page as it is at `to`: the change that produced it (null: the path did not exist yet).
  const current = to ? await index.lastTouch(path, to.seq) : tip;
  const toSide: Side = to ? { commit: to, blob: current?.blob ?? null } : { commit: tip.commit, blob: tip.blob };

  let fromSide: Side;
  if (from) {
    fromSide = { commit: from, blob: (await index.lastTouch(path, from.seq))?.blob ?? null };
  } else {
    if (!current) throw refuse(R.path_not_at_either_sha);
    const prev = (await index.history(path, 1, current.commit.seq))[0];
    if (!prev) throw refuse(R.no_parent);
    fromSide = { commit: prev, blob: (await index.lastTouch(path, prev.seq))?.blob ?? null };
  }
  if (fromSide.blob === null && toSide.blob === null) throw refuse(R.path_not_at_either_sha);

  const [a, b] = await Promise.all([sidePage(deps, repo, fromSide.blob, budget), sidePage(deps, repo, toSide.blob, budget)]);
  const diff = await diffParsedAsync(a, b, { from_sha: fromSide.commit.sha, to_sha: toSide.commit.sha }, budget);
  if (!q.blame || !worthBlaming(diff, toSide)) return diff;
  try {
    const index = await deps.parsedPages.blame(id, path, toSide.commit.sha, async () => {
      const touches = await touchesOf(repo, path, BLAME_MAX_REVISIONS, toSide.commit.seq + 1);
      const timeline = await walkBlame(deps, repo, touches.reverse(), budget);
      return timeline.window(0, timeline.length - 1);
    });
    budget.charge(diff.sections.length + 1);
    return applyBlame(diff, index);
  } catch (e) {
    return blameFailed(deps, id, path, e, diff);
  }
}

/**
 * `GET /v1/repos/:id/pages/<path>?at=<sha>`: the page as it was at a commit (`at`, full or abbreviated:
 * UnknownShaError when it does not resolve), and the last commit at or before it that touched the page;
 * null when the page did not exist there. A client reads the text its copy is based on with it.
 */
export async function pageAt(repo: Repo, path: string, at: string): Promise<{ content: Uint8Array; sha: string } | null> {
  await repo.ready();
  const commit = await repo.index.resolve(at);
  const touch = await repo.index.lastTouch(path, commit.seq);
  if (!touch || touch.blob === null) return null;
  return { content: await repo.readBlob(touch.blob), sha: touch.commit.sha };
}

/**
 * `GET /v1/repos/:id/evolution/<path>`: the page's commits newest first, each with its diff. `budget`: the
 * request's work budget, shared by every diff and the blame walk.
 */
export async function pageEvolution(
  deps: DiffDeps,
  repo: Repo,
  path: string,
  opts: { limit?: number; blame?: boolean } = {},
  budget: WorkBudget = new WorkBudget(),
): Promise<Evolution> {
  const { id } = repo;
  await repo.ready();
  const limit = clampLimit(opts.limit);
  // One extra touch for the oldest entry's `from`; with blame, enough for every entry's window.
  const want = opts.blame ? limit + BLAME_MAX_REVISIONS - 1 : limit + 1;
  const touches = await touchesOf(repo, path, want);
  if (touches.length === 0) throw refuse(R.path_not_in_repo);

  // Entries newest first; each revision is parsed (or fetched from the cache) once, and the older side of
  // one entry is the newer side of the next.
  const entries: EvolutionEntry[] = [];
  let truncated = false;
  let chars = 0;
  let newer = await sidePage(deps, repo, touches[0]!.blob, budget);
  for (let i = 0; i < Math.min(limit, touches.length); i++) {
    if (entries.length > 0 && budget.exhausted) {
      truncated = true;
      break;
    }
    const t = touches[i]!;
    const prev = touches[i + 1];
    const older = prev ? await sidePage(deps, repo, prev.blob, budget) : EMPTY_PAGE();
    const diff = await diffParsedAsync(older, newer, { from_sha: prev?.commit.sha ?? '', to_sha: t.commit.sha }, budget);
    const size = textSize(diff);
    if (entries.length > 0 && chars + size > EVOLUTION_MAX_CHARS) {
      truncated = true;
      break;
    }
    chars += size;
    entries.push({ commit: commitJson(t.commit), diff });
    newer = older;
    await budget.pause();
  }

  if (opts.blame && entries.some((entry, i) => worthBlaming(entry.diff, touches[i]!))) {
    // Entry i (newest first) is blamed over touches i … i+199: one walk over the union of those windows,
    // oldest first; entry i's window is then revisions [n-i-200, n-i-1] of the walk.
    const walked = touches.slice(0, entries.length + BLAME_MAX_REVISIONS - 1).reverse();
    let timeline: BlameTimeline | null = null;
    try {
      timeline = await walkBlame(deps, repo, walked, budget);
    } catch (e) {
      entries.forEach((entry, i) => {
        if (worthBlaming(entry.diff, touches[i]!)) entry.diff = blameFailed(deps, id, path, e, entry.diff, i > 0);
      });
    }
    if (timeline) {
      const n = walked.length;
      entries.forEach((entry, i) => {
        if (!worthBlaming(entry.diff, touches[i]!)) return;
        const end = n - 1 - i;
        entry.diff = applyBlame(entry.diff, timeline.window(Math.max(0, end - BLAME_MAX_REVISIONS + 1), end));
        budget.charge(entry.diff.sections.length + 1);
      });
    }
  }
  return truncated ? { path, entries, truncated: true } : { path, entries };
}

/**
 * The evolution response as a JSON byte stream, byte for byte what `JSON.stringify(evolution)` gives, one
 * entry at a time with an event-loop turn between entries: serialising a response of tens of megabytes in
 * one go would hold the event loop for as long. Pull-based, so a slow reader holds back the writing.
 */
export function evolutionJsonStream(evolution: Evolution): ReadableStream<Uint8Array> {
  const enc = new TextEncoder();
  const { path, entries, truncated } = evolution;
  let next = -1; // -1: the opening; entries.length: the closing
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (next === -1) {
        controller.enqueue(enc.encode(`{"path":${JSON.stringify(path)},"entries":[`));
      } else if (next < entries.length) {
        if (next > 0) await nextTurn();
        controller.enqueue(enc.encode((next > 0 ? ',' : '') + JSON.stringify(entries[next])));
      } else {
        controller.enqueue(enc.encode(truncated ? '],"truncated":true}' : ']}'));
        controller.close();
      }
      next++;
    },
  });
}

function clampLimit(limit: number | undefined): number {
  if (limit === undefined || !Number.isSafeInteger(limit) || limit <= 0) return EVOLUTION_DEFAULT_LIMIT;
  return Math.min(limit, EVOLUTION_MAX_LIMIT);
}

/** Blame has something to attribute: a structured diff whose new side has the page. */
const worthBlaming = (diff: SectionDiff, to: Side): boolean => !diff.parse_fallback && to.blob !== null;

/** Characters of text a SectionDiff carries (bodies and line diffs), to bound evolution responses. */
function textSize(d: SectionDiff): number {
  let n = 256;
  for (const e of d.preamble ? [d.preamble, ...d.sections] : d.sections) {
    n += 64 + e.heading.length + (e.from?.length ?? 0) + (e.to?.length ?? 0) + (e.line_diff?.length ?? 0);
  }
  return n;
}

/** The commits touching the path (newest first, before `beforeSeq`), each with the blob it left. */
function touchesOf(repo: Repo, path: string, limit: number, beforeSeq?: number): Promise<Side[]> {
  return repo.index.touches(path, limit, beforeSeq);
}

/** The parsed page of one side; a missing path is the empty document. */
function sidePage(deps: DiffDeps, repo: Repo, blob: string | null, budget: WorkBudget): Promise<ParsedPage> {
  if (blob === null) return Promise.resolve(EMPTY_PAGE());
  return deps.parsedPages.get(repo.id, blob, () => repo.readBlob(blob), budget);
}

/**
 * The blame walk: the revisions given (oldest first) read as outlines one at a time and added to one
 * timeline, so a long history of a large page never holds more than one parse. A deletion or an unreadable
 * blob is a skipped revision. BudgetExhausted when the budget is spent before the walk's last revision.
 */
async function walkBlame(deps: DiffDeps, repo: Repo, sides: Side[], budget: WorkBudget): Promise<BlameTimeline> {
  deps.parsedPages.stats.blameWalks++;
  const builder = new BlameTimelineBuilder(budget);
  for (const s of sides) {
    if (budget.exhausted) throw new BudgetExhausted('blame walk');
    let page: ParsedPage | null = null;
    if (s.blob !== null) {
      const blob = s.blob;
      try {
        page = await deps.parsedPages.outline(repo.id, blob, () => repo.readBlob(blob), budget);
      } catch {
        page = null;
      }
    }
    builder.add(commitJson(s.commit), page);
    await budget.pause();
  }
  return builder.finish();
}

/**
 * Blame failed: the plain diff. When the walk was cut for its cost the diff says `truncated: true`; any
 * other failure is logged (once per request).
 */
function blameFailed(deps: DiffDeps, id: string, path: string, e: unknown, diff: SectionDiff, quiet = false): SectionDiff {
  if (e instanceof BudgetExhausted) return diff.parse_fallback ? diff : { ...diff, truncated: true };
  if (!quiet) {
    deps.log?.warn('blame failed; answering the plain diff', {
      repo: id,
      path,
      error: e instanceof Error ? `${e.name}: ${e.message}` : String(e),
    });
  }
  return diff;
}
