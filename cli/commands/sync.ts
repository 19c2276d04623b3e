/** `kr push`, `kr pull`, `kr status`, `kr resolve`. */
import { stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { typeOfPath, type PageType } from '../../lib/page/parse.ts';
import type { PullResponse, PushFile } from '../../schema/wire/sync.ts';
import { ApiError } from '../api.ts';
import { connect, repoOf } from '../config.ts';
import { CliError, refused } from '../errors.ts';
import { openProject, parseType, resolveSlug, sha256, type Project } from '../project.ts';
import { busy, note, out, paint, printJson, progress, shortSha, clean } from '../output.ts';
import { conflictSummary } from '../render.ts';

/**
 * `parent_sha` of a page we have never seen on the server: no commit has this sha, so the server accepts
 * the file only if the page does not exist yet, and otherwise answers a conflict (API.md: "a hex value that
 * resolves to nothing → conflict"). A new local page never silently overwrites someone else's.
 */
export const NEW_PAGE_PARENT = '0'.repeat(40);

const fromBase64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

interface Common {
  repo?: string;
  json?: boolean;
}

/** The server paths a push looks at: the arguments (slugs, page files, folders), or every page. */
async function pushCandidates(project: Project, args: string[], type: PageType | undefined): Promise<string[]> {
  const tracked = Object.keys(project.state.pages);
  const ofType = (p: string) => type === undefined || typeOfPath(p) === type;
  if (args.length === 0) {
    const all = new Set([...(await project.layoutPages(type ? [type] : undefined)), ...tracked.filter(ofType)]);
    return [...all].sort();
  }
  const picked = new Set<string>();
  for (const arg of args) {
    const abs = resolve(arg);
    const st = await stat(abs).catch(() => null);
    if (st?.isDirectory()) {
      const rel = relative(project.krDir, abs);
      if (rel.startsWith('..') || isAbsolute(rel)) throw refused(`${arg} is not inside ${project.display('')}`);
      const prefix = rel === '' ? '' : rel.split(sep).join('/') + '/';
      const under = [...(await project.layoutPages(type ? [type] : undefined)), ...tracked.filter(ofType)].filter((p) => p.startsWith(prefix));
      under.forEach((p) => picked.add(p));
      continue;
    }
    picked.add(await resolveSlug(project, arg, type));
  }
  return [...picked].sort();
}

export async function push(args: string[], opts: Common & { type?: string; message?: string; dryRun?: boolean }): Promise<void> {
  const type = parseType(opts.type);
  const project = await openProject();
  const candidates = await pushCandidates(project, args, type);
  const files: Array<PushFile & { hash: string; kind: 'new' | 'modified' }> = [];
  const missing: string[] = [];
  const reading = progress('reading pages', candidates.length);
  for (const path of candidates) {
    reading.tick();
    const local = await project.read(path);
    const known = project.state.pages[path];
    if (!local) {
      if (known) missing.push(path);
      continue;
    }
    if (known && known.hash === local.hash) continue;
    files.push({
      path,
      content: local.text,
      parent_sha: known ? known.sha : NEW_PAGE_PARENT,
      hash: local.hash,
      kind: known ? 'modified' : 'new',
    });
  }
  reading.done();
  const p = paint();
  if (missing.length && !opts.json) {
    note(`${missing.length} tracked page(s) missing locally are not pushed (push never deletes; "kr pull --full" restores them):`);
    for (const m of missing) note(`  ${m}`);
  }
  if (opts.dryRun) {
    if (opts.json) printJson({ dry_run: true, files: files.map((f) => ({ path: f.path, kind: f.kind, parent_sha: f.parent_sha })) });
    else if (files.length === 0) out('Nothing to push.');
    else {
      out(`Would push ${files.length} page(s):`);
      for (const f of files) out(`  ${f.kind.padEnd(8)}  ${f.path}`);
    }
    return;
  }
  if (files.length === 0) {
    if (opts.json) printJson({ new_head: null, pushed: [], conflicts: [] });
    else out('Nothing to push: no new or changed pages.');
    return;
  }

  const session = await connect();
  const repo = repoOf(session, opts.repo);
  project.checkRepo(repo);
  const message = opts.message ?? (files.length === 1 ? `update ${files[0]!.path}` : `update ${files.length} pages`);
  const working = busy(`pushing ${files.length} page(s)`);
  let res;
  try {
    res = await session.api.push(repo, {
      message,
      files: files.map(({ path, content, parent_sha }) => ({ path, content, parent_sha })),
    });
  } finally {
    working.done();
  }
  const sent = new Map(files.map((f) => [f.path, f]));
  const { data } = res;
  for (const pushed of data.pushed) {
    const f = sent.get(pushed.path);
    if (f) project.state.pages[pushed.path] = { sha: pushed.sha, hash: f.hash };
  }
  await project.save();

  if (opts.json) {
    printJson({
      new_head: data.new_head,
      pushed: data.pushed,
      conflicts: data.conflicts.map((c) => ({ path: c.path, current_sha: c.current_sha, expected_parent_sha: c.expected_parent_sha })),
    });
  } else {
    const committed = data.pushed.filter((x) => !x.unchanged);
    if (committed.length) {
      out(`Pushed ${committed.length} page(s) to ${repo} as ${shortSha(data.new_head)}:`);
      for (const x of committed) out(`  ${p.green(sent.get(x.path)?.kind.padEnd(8) ?? '')}  ${x.path}`);
    }
    const same = data.pushed.filter((x) => x.unchanged);
    if (same.length) out(`${same.length} page(s) already had this content on the server.`);
    for (const c of data.conflicts) {
      const ours = sent.get(c.path)?.content ?? '';
      const theirs = fromBase64(c.current_content);
      const ancestor = c.ancestor_content !== undefined ? fromBase64(c.ancestor_content) : undefined;
      const why =
        c.expected_parent_sha === NEW_PAGE_PARENT
          ? 'the page already exists on the server (you have not pulled it)'
          : `the server has ${shortSha(c.current_sha)}, your copy is based on ${shortSha(c.expected_parent_sha)}`;
      out(`${p.red('conflict')}  ${c.path}: ${why}; your file was left as it is. Sections (yours vs the server's):`);
      for (const line of conflictSummary(ours, theirs, ancestor, p)) out(line);
    }
  }
  if (data.conflicts.length) {
    const slugs = data.conflicts.map((c) => c.path);
    throw new CliError(
      `${data.conflicts.length} page(s) not pushed because they changed on the server: ${slugs.join(', ')}\n` +
        `  next: "kr pull", compare with "kr diff <slug> --local", merge into your file, then "kr resolve <slug>" and "kr push"`,
      1,
    );
  }
}

/** A file operation of a pull; on failure the state keeps what was done so far (head unchanged). */
async function io(project: Project, path: string, op: () => Promise<void>): Promise<void> {
  try {
    await op();
  } catch (e) {
    await project.save();
    throw refused(`cannot write ${project.display(path)}: ${(e as Error).message}`);
  }
}

export async function pull(opts: Common & { full?: boolean }): Promise<void> {
  const project = await openProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo);
  project.checkRepo(repo);
  let full = opts.full === true || project.state.head === '';
  const since = full ? undefined : project.state.head;
  let res: PullResponse;
  const working = busy('pulling');
  try {
    try {
      res = await session.api.pull(repo, since);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 400 || !e.message.startsWith('unknown sha') || since === undefined) throw e;
      note(`the last pulled head ${shortSha(since)} is unknown to the server (history rewritten?); pulling every page`);
      full = true;
      res = await session.api.pull(repo);
    }
  } finally {
    working.done();
  }

  // Deletions: those the server lists, plus on a full pull every tracked page the server no longer has.
  const deletions = new Set(res.deleted);
  if (full) {
    const present = new Set(res.files.map((f) => f.path));
    for (const path of Object.keys(project.state.pages)) if (!present.has(path)) deletions.add(path);
  }
  // Every path is checked before anything is written: one bad path refuses the whole pull.
  const targets = new Map<string, string>();
  for (const path of [...res.files.map((f) => f.path), ...deletions]) targets.set(path, await project.safeTarget(path));

  const written: string[] = [];
  const removed: string[] = [];
  const conflicts: Array<{ path: string; why: string }> = [];
  const bar = progress('writing pages', res.files.length + deletions.size);
  for (const f of res.files) {
    bar.tick();
    const known = project.state.pages[f.path];
    const local = await project.read(f.path);
    const serverHash = sha256(Buffer.from(f.content, 'utf8'));
    if (local && known && known.sha === f.sha) continue; // our own base (e.g. our last push): nothing new
    if (local && local.hash === serverHash) {
      project.state.pages[f.path] = { sha: f.sha, hash: serverHash };
      continue;
    }
    if (local && !(known && local.hash === known.hash)) {
      conflicts.push({ path: f.path, why: known ? 'changed locally and on the server' : 'exists locally but was never pulled' });
      continue;
    }
    await io(project, f.path, () => project.writePage(targets.get(f.path)!, f.content));
    project.state.pages[f.path] = { sha: f.sha, hash: serverHash };
    written.push(f.path);
  }
  for (const path of deletions) {
    bar.tick();
    const known = project.state.pages[path];
    const local = await project.read(path);
    if (!local) {
      delete project.state.pages[path];
      continue;
    }
    if (!known) continue; // never tracked: not ours to delete
    if (local.hash !== known.hash) {
      conflicts.push({ path, why: 'changed locally but deleted on the server' });
      continue;
    }
    await io(project, path, () => project.deletePage(targets.get(path)!));
    delete project.state.pages[path];
    removed.push(path);
  }
  bar.done();
  project.state.head = res.new_head;
  await project.save();

  if (opts.json) {
    printJson({ new_head: res.new_head, written, deleted: removed, conflicts });
  } else {
    const p = paint();
    if (written.length === 0 && removed.length === 0 && conflicts.length === 0) out(`Already up to date (${repo} at ${shortSha(res.new_head)}).`);
    else {
      out(`Pulled ${repo} at ${shortSha(res.new_head)}: ${written.length} written, ${removed.length} deleted.`);
      const LIST = 50;
      const lines = [...written.map((w) => `  ${p.green('updated')}  ${w}`), ...removed.map((r) => `  ${p.red('deleted')}  ${r}`)];
      for (const l of lines.slice(0, LIST)) out(l);
      if (lines.length > LIST) out(`  … and ${lines.length - LIST} more (--json lists them all)`);
      for (const c of conflicts) out(`  ${p.red('conflict')} ${c.path}: ${c.why}; your file was kept`);
    }
  }
  if (conflicts.length) {
    throw new CliError(
      `${conflicts.length} page(s) need resolving: ${conflicts.map((c) => c.path).join(', ')}\n` +
        `  compare with "kr diff <slug> --local", merge into your file, then "kr resolve <slug>" (or "kr resolve <slug> --theirs") and "kr push"`,
      1,
    );
  }
}

export type PageStatus = 'new' | 'modified' | 'behind' | 'conflict' | 'missing';

export async function status(opts: Common): Promise<void> {
  const project = await openProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo);
  project.checkRepo(repo);
  let pages: Array<{ path: string; sha: string }>;
  let absent = false;
  try {
    pages = (await session.api.pages(repo)).pages; // the one request
  } catch (e) {
    // Only the legacy key sees this (a user gets 403): the first push will create the repository.
    if (!(e instanceof ApiError) || e.status !== 404 || e.message !== 'repo not found') throw e;
    pages = [];
    absent = true;
  }
  const server = new Map(pages.map((pg) => [pg.path, pg.sha]));
  const paths = new Set([...(await project.layoutPages()), ...Object.keys(project.state.pages), ...server.keys()]);
  const rows: Array<{ path: string; status: PageStatus; server_sha?: string; known_sha?: string }> = [];
  for (const path of [...paths].sort()) {
    const known = project.state.pages[path];
    const remote = server.get(path);
    const local = await project.read(path);
    let st: PageStatus | null = null;
    if (local) {
      if (!known) st = remote ? 'conflict' : 'new';
      else {
        const modified = local.hash !== known.hash;
        const moved = remote !== known.sha;
        st = modified && moved ? 'conflict' : modified ? 'modified' : moved ? 'behind' : null;
      }
    } else if (known) st = remote === known.sha ? 'missing' : 'behind';
    else if (remote) st = 'behind';
    if (st) {
      const row: (typeof rows)[number] = { path, status: st };
      if (remote) row.server_sha = remote;
      if (known) row.known_sha = known.sha;
      rows.push(row);
    }
  }
  if (opts.json) {
    printJson({ repo, server_url: session.serverUrl, head: project.state.head, pages: rows });
    return;
  }
  const p = paint();
  out(`Repository ${repo} on ${session.serverUrl}; last pull at ${shortSha(project.state.head)}.`);
  if (absent) note(`(${repo} does not exist on the server yet: the first push creates it)`);
  if (rows.length === 0) {
    out('Up to date: nothing to push or pull.');
    return;
  }
  const colour: Record<PageStatus, (s: string) => string> = {
    new: p.green,
    modified: p.yellow,
    behind: p.cyan,
    conflict: p.red,
    missing: p.dim,
  };
  for (const r of rows) out(`  ${colour[r.status](r.status.padEnd(8))}  ${clean(r.path)}`);
  const hints: string[] = [];
  if (rows.some((r) => r.status === 'new' || r.status === 'modified')) hints.push('"kr push" sends new and modified pages');
  if (rows.some((r) => r.status === 'behind')) hints.push('"kr pull" fetches pages that changed on the server');
  if (rows.some((r) => r.status === 'conflict')) hints.push('conflicts: "kr diff <slug> --local", merge, "kr resolve <slug>"');
  if (rows.some((r) => r.status === 'missing')) hints.push('missing pages come back with "kr pull --full"');
  for (const h of hints) note(`  (${h})`);
}

export async function resolveConflict(slug: string, opts: Common & { type?: string; theirs?: boolean }): Promise<void> {
  const type = parseType(opts.type);
  const project = await openProject();
  const path = await resolveSlug(project, slug, type);
  const session = await connect();
  const repo = repoOf(session, opts.repo);
  project.checkRepo(repo);
  const target = await project.safeTarget(path);
  const server = await session.api.page(repo, path);
  const local = await project.read(path);
  let message: string;
  if (opts.theirs) {
    if (server) {
      await project.writePage(target, server.content);
      project.state.pages[path] = { sha: server.sha, hash: sha256(Buffer.from(server.content, 'utf8')) };
      message = `${path}: replaced your file with the server's version ${shortSha(server.sha)}.`;
    } else {
      await project.deletePage(target);
      delete project.state.pages[path];
      message = `${path}: the page is gone from the server; removed your file.`;
    }
  } else if (server) {
    const serverHash = sha256(Buffer.from(server.content, 'utf8'));
    project.state.pages[path] = { sha: server.sha, hash: serverHash };
    message =
      local && local.hash === serverHash
        ? `${path}: your file equals the server's version ${shortSha(server.sha)}; nothing to push.`
        : `${path}: your file is now based on the server's version ${shortSha(server.sha)}; "kr push" sends it.`;
  } else {
    delete project.state.pages[path];
    message = `${path}: not on the server; "kr push" creates it from your file.`;
  }
  await project.save();
  if (opts.json) printJson({ path, server_sha: server?.sha ?? null, theirs: opts.theirs === true });
  else out(message);
}
