/** `kr log`, `kr timeline`, `kr history`, `kr diff`, `kr evolution`. */
import { diffPages } from '../../lib/differ/index.ts';
import { connect, repoOf } from '../config.ts';
import { refused, usageError } from '../errors.ts';
import { openProject, parseType, resolveSlug } from '../project.ts';
import { clean, out, paint, printJson, shortSha, table, utc } from '../output.ts';
import { renderDiff, summaryLines } from '../render.ts';

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

/** Activity: three columns, actor email, action, UTC timestamp (SPEC.md "Events" rule 3). */
/** The page a slug names (resolved among the local page directories) and the repository to ask. */
async function pageTarget(slug: string, opts: Common & { type?: string }) {
  const type = parseType(opts.type);
  const project = await openProject();
  const path = await resolveSlug(project, slug, type);
  const session = await connect();
  return { project, path, session, repo: repoOf(session, opts.repo) };
}

export async function log(opts: Common & { limit?: string; offset?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const offset = intOption('offset', opts.offset, 0);
  const session = await connect();
  const repo = repoOf(session, opts.repo);
  const res = await session.api.activity(repo, { limit, offset });
  if (opts.json) return printJson(res);
  if (res.events.length === 0) return out('No activity yet.');
  out(table(res.events.map((e) => [e.email, e.action, utc(e.created_at)]), ['ACTOR', 'ACTION', 'TIME (UTC)']));
}

export async function timeline(opts: Common & { limit?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const session = await connect();
  const repo = repoOf(session, opts.repo);
  const res = await session.api.timeline(repo, limit);
  if (opts.json) return printJson(res);
  if (res.commits.length === 0) return out('No commits yet.');
  const p = paint();
  for (const c of res.commits) {
    out(`${p.yellow(shortSha(c.sha))}  ${clean(c.time)}  ${clean(c.email)}  ${clean(c.message)}`);
    for (const path of c.paths) out(`    ${clean(path)}`);
  }
}

export async function history(slug: string, opts: Common & { type?: string; limit?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const { path, session, repo } = await pageTarget(slug, opts);
  const res = await session.api.history(repo, path, limit);
  if (opts.json) return printJson({ path, ...res });
  if (res.commits.length === 0) return out(`${path}: no commits on the server yet.`);
  out(table(res.commits.map((c) => [shortSha(c.sha), c.time, c.email, c.message]), ['SHA', 'TIME (UTC)', 'AUTHOR', 'MESSAGE']));
}

export async function diff(
  slug: string,
  opts: Common & { type?: string; from?: string; to?: string; blame?: boolean; local?: boolean },
): Promise<void> {
  // SPEC.md diff rule 8: refused before any request (and before anything else is read).
  if (opts.local && (opts.from !== undefined || opts.to !== undefined || opts.blame)) {
    const given = [opts.from !== undefined && '--from', opts.to !== undefined && '--to', opts.blame && '--blame'].filter(Boolean).join(', ');
    throw usageError(`--local compares your file with the server's current copy; it cannot be combined with ${given}`);
  }
  const { project, path, session, repo } = await pageTarget(slug, opts);
  const p = paint();
  if (opts.local) {
    const local = await project.read(path);
    if (!local) throw refused(`no local file for ${path}`);
    const server = await session.api.page(repo, path);
    // An empty left side: the page is not yet on the server.
    const d = diffPages(server?.content ?? '', local.text, { from_sha: server?.sha ?? '', to_sha: '' });
    if (opts.json) return printJson(d);
    out(renderDiff(d, { path, fromLabel: server ? `server ${shortSha(server.sha)}` : 'not yet on the server', toLabel: 'your file' }, p));
    return;
  }
  const d = await session.api.diff(repo, path, { from: opts.from, to: opts.to, blame: opts.blame });
  if (opts.json) return printJson(d);
  out(renderDiff(d, { path, fromLabel: shortSha(d.from_sha), toLabel: shortSha(d.to_sha), showUnchanged: opts.blame }, p));
}

export async function evolution(slug: string, opts: Common & { type?: string; limit?: string; blame?: boolean }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const { path, session, repo } = await pageTarget(slug, opts);
  const res = await session.api.evolution(repo, path, { limit, blame: opts.blame });
  if (opts.json) return printJson(res);
  const p = paint();
  if (res.entries.length === 0) return out(`${path}: no commits on the server yet.`);
  out(p.bold(clean(path)));
  for (const e of res.entries) {
    const c = e.commit;
    out(`${p.yellow(shortSha(c.sha))}  ${clean(c.time)}  ${clean(c.email)}  ${clean(c.message)}`);
    const lines = summaryLines(e.diff, p);
    for (const l of lines.length ? lines : [`    ${p.dim('no section changes')}`]) out(l);
  }
  if (res.truncated) out(p.dim('(older entries left out by the server; ask with a lower --limit)'));
}
