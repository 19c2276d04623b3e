/**
 * `kr log`, `kr timeline`, `kr pages`, `kr show`, `kr history`, `kr diff`, `kr evolution`.
 *
 * Read commands need no local checkout: outside a project folder, or with `--repo` naming
 * another repository than the folder's, they take page paths (`wiki/concepts/x.md`); slugs are looked up
 * in the local folder only.
 */
import { diffPages } from '../../lib/core/differ/index.ts';
import type { SectionDiff } from '../../schema/wire/diff.ts';
import type { ActivityResponse } from '../../schema/wire/repos.ts';
import { ApiError, type Api } from '../../client/api.ts';
import { connect, repoOf } from '../../client/config.ts';
import { refused, usageError } from '../../client/errors.ts';
import { findProject, parseType, resolvePage, type Project } from '../../client/project.ts';
import { clean, out, pageForTerminal, paint, printJson, shortSha, table, utc } from '../../client/output.ts';
import { firstCommitDiff, NO_PARENT } from '../../client/history.ts';
import { hasFieldAddsOrRemoves, listFieldsOf, renderDiff, summaryLines } from '../../client/render.ts';

interface Common {
  repo?: string;
  json?: boolean;
}

/** `--limit` / `--offset` values: positive (or non-negative) integers, else bad usage. */
export function intOption(name: string, raw: string | undefined, min = 1): number | undefined {
  if (raw === undefined) return undefined;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || !Number.isSafeInteger(Number(raw))) {
    throw usageError(`--${name} must be an integer${min === 1 ? ' greater than zero' : ' of at least 0'}, not ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/**
 * The project folder that belongs to the repository a read command works on: the one around the working
 * directory, unless `--repo` names another repository than the one it is linked to (its slugs and files
 * would be another repository's).
 */
function checkoutFor(project: Project | null, flag: string | undefined): Project | null {
  if (!project) return null;
  if (flag !== undefined && project.state.repo !== undefined && project.state.repo !== flag) return null;
  return project;
}

/** The page an argument names (a slug of the local folder, or a page path) and the repository to ask. */
export async function pageTarget(arg: string, opts: Common & { type?: string }) {
  const type = parseType(opts.type);
  const found = await findProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo, found);
  const project = checkoutFor(found, opts.repo);
  const path = await resolvePage(project, arg, type, 'read');
  return { project, path, session, repo };
}

/** The frontmatter fields that are lists in the page's current version (to render list items as such). */
async function listFieldsAtHead(api: Api, repo: string, path: string): Promise<Set<string>> {
  try {
    const page = await api.page(repo, path);
    return page ? listFieldsOf(page.content) : new Set();
  } catch {
    return new Set();
  }
}

/** Pages a merged push names at most in `kr log`'s detail (the feed keeps up to 50). */
const LOG_MERGED_NAMED = 3;

/**
 * What `kr log` says of an event beside its actor, action and time: a push's commit and message, with the
 * pages the server merged on the way (`merged: a.md, b.md`); an import's commits and pages; the client a
 * pull named.
 */
export function activityDetail(e: ActivityResponse['events'][number]): string {
  const d = e.detail ?? {};
  if (e.action === 'push') {
    const message = typeof d.message === 'string' ? d.message : '';
    const merged = Array.isArray(d.merged) ? d.merged.filter((x): x is string => typeof x === 'string') : [];
    const named = merged.slice(0, LOG_MERGED_NAMED).join(', ') + (merged.length > LOG_MERGED_NAMED ? ` and ${merged.length - LOG_MERGED_NAMED} more` : '');
    return [e.sha ? shortSha(e.sha) : '', message, merged.length ? `(merged: ${named})` : ''].filter((x) => x !== '').join('  ');
  }
  if (e.action === 'import') return typeof d.commits === 'number' && typeof d.pages === 'number' ? `${d.commits} commit(s), ${d.pages} page(s)` : '';
  return typeof d.client === 'string' ? d.client : '';
}

/**
 * Activity: actor email, action, UTC timestamp (docs/api.md "Activity"; the original client's three columns), and each event's detail
 * ({@link activityDetail}); `pulls: false` leaves pulls out (the server filters: `?actions=push,import`).
 */
export async function log(opts: Common & { limit?: string; offset?: string; pulls?: boolean; detail?: boolean }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const offset = intOption('offset', opts.offset, 0);
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const res = await session.api.activity(repo, { limit, offset, ...(opts.pulls === false ? { actions: 'push,import' } : {}) });
  if (opts.json) return printJson(res);
  if (res.events.length === 0) return out('No activity yet.');
  // The three columns are the contract (actor email, action, UTC time); --detail adds what each event did.
  if (!opts.detail) return out(table(res.events.map((e) => [e.email, e.action, utc(e.created_at)]), ['ACTOR', 'ACTION', 'TIME (UTC)']));
  out(table(res.events.map((e) => [e.email, e.action, utc(e.created_at), activityDetail(e)]), ['ACTOR', 'ACTION', 'TIME (UTC)', 'DETAIL']));
}

export async function timeline(opts: Common & { limit?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const res = await session.api.timeline(repo, limit);
  if (opts.json) return printJson(res);
  if (res.commits.length === 0) return out('No commits yet.');
  const p = paint();
  for (const c of res.commits) {
    out(`${p.yellow(shortSha(c.sha))}  ${clean(c.time)}  ${clean(c.email)}  ${clean(c.message)}`);
    for (const path of c.paths) out(`    ${clean(path)}`);
  }
}

/** `kr pages`: every page on the server with its last commit. */
export async function pages(opts: Common): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const res = await session.api.pages(repo);
  if (opts.json) return printJson({ repo, ...res });
  if (res.pages.length === 0) return out(`No pages in ${repo} yet.`);
  out(table(res.pages.map((pg) => [pg.path, shortSha(pg.sha), pg.time, pg.email]), ['PATH', 'SHA', 'TIME (UTC)', 'LAST CHANGED BY']));
}

/**
 * `kr show <page>`: the page as the server has it now: its exact text into a pipe or a file, and on a
 * terminal without the control characters that would act on it (client/output.ts pageForTerminal).
 */
export async function show(arg: string, opts: Common & { type?: string }): Promise<void> {
  const { path, session, repo } = await pageTarget(arg, opts);
  const page = await session.api.page(repo, path);
  if (!page) throw refused(`no page ${path} in ${repo}`, 'not_found');
  if (opts.json) return printJson({ path, sha: page.sha, content: page.content });
  const text = page.content.endsWith('\n') || page.content === '' ? page.content : page.content + '\n';
  process.stdout.write(process.stdout.isTTY ? pageForTerminal(text) : text);
}

export async function history(arg: string, opts: Common & { type?: string; limit?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const { path, session, repo } = await pageTarget(arg, opts);
  const res = await session.api.history(repo, path, limit);
  if (opts.json) return printJson({ path, ...res });
  if (res.commits.length === 0) return out(`${path}: no commits on the server yet.`);
  out(table(res.commits.map((c) => [shortSha(c.sha), c.time, c.email, c.message]), ['SHA', 'TIME (UTC)', 'AUTHOR', 'MESSAGE']));
}

export async function diff(
  arg: string,
  opts: Common & { type?: string; from?: string; to?: string; blame?: boolean; local?: boolean },
): Promise<void> {
  // `--local` cannot be combined with --from, --to or --blame (docs/cli.md): refused before any request (and before anything else is read).
  if (opts.local && (opts.from !== undefined || opts.to !== undefined || opts.blame)) {
    const given = [opts.from !== undefined && '--from', opts.to !== undefined && '--to', opts.blame && '--blame'].filter(Boolean).join(', ');
    throw usageError(`--local compares your file with the server's current copy; it cannot be combined with ${given}`);
  }
  const { project, path, session, repo } = await pageTarget(arg, opts);
  const p = paint();
  if (opts.local) {
    if (!project) throw refused('--local compares a file of this project folder: run it inside the folder linked to the repository', 'no_project');
    const local = await project.read(path);
    if (!local) throw refused(`no local file for ${path}`, 'no_page');
    const server = await session.api.page(repo, path);
    // An empty left side: the page is not yet on the server.
    const d = diffPages(server?.content ?? '', local.text, { from_sha: server?.sha ?? '', to_sha: '' });
    if (opts.json) return printJson(d);
    out(
      renderDiff(
        d,
        { path, fromLabel: server ? `server ${shortSha(server.sha)}` : 'not yet on the server', toLabel: 'your file', listFields: listFieldsOf(server?.content, local.text) },
        p,
      ),
    );
    return;
  }
  let d: SectionDiff;
  try {
    d = await session.api.diff(repo, path, { from: opts.from, to: opts.to, blame: opts.blame });
  } catch (e) {
    // A page with one commit: its diff is against the empty page, as evolution's first entry.
    if (!(e instanceof ApiError) || e.refusal !== NO_PARENT || opts.from !== undefined) throw e;
    const first = await firstCommitDiff(session.api, repo, path, opts.to, opts.blame);
    if (!first) throw e;
    d = first;
  }
  if (opts.json) return printJson(d);
  const lists = hasFieldAddsOrRemoves(d) ? await listFieldsAtHead(session.api, repo, path) : undefined;
  const fromLabel = d.from_sha === '' ? '(empty page)' : shortSha(d.from_sha);
  out(renderDiff(d, { path, fromLabel, toLabel: shortSha(d.to_sha), showUnchanged: opts.blame, listFields: lists }, p));
}

export async function evolution(arg: string, opts: Common & { type?: string; limit?: string; blame?: boolean }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const { path, session, repo } = await pageTarget(arg, opts);
  const res = await session.api.evolution(repo, path, { limit, blame: opts.blame });
  if (opts.json) return printJson(res);
  const p = paint();
  if (res.entries.length === 0) return out(`${path}: no commits on the server yet.`);
  const lists = res.entries.some((e) => hasFieldAddsOrRemoves(e.diff)) ? await listFieldsAtHead(session.api, repo, path) : undefined;
  out(p.bold(clean(path)));
  for (const e of res.entries) {
    const c = e.commit;
    out(`${p.yellow(shortSha(c.sha))}  ${clean(c.time)}  ${clean(c.email)}  ${clean(c.message)}`);
    const lines = summaryLines(e.diff, p, '    ', lists);
    for (const l of lines.length ? lines : [`    ${p.dim('no section changes')}`]) out(l);
  }
  if (res.truncated) out(p.dim('(older entries left out by the server; ask with a lower --limit)'));
}
