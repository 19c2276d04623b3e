/** `kr push`, `kr rm`, `kr pull`, `kr status`, `kr resolve`: the commands around the sync engine (client/sync.ts). */
import { resolve } from 'node:path';
import type { LimitsResponse } from '../../schema/wire/limits.ts';
import type { PushFile } from '../../schema/wire/sync.ts';
import { DEFAULT_LIMITS } from '../../client/api.ts';
import { connect, repoOf, type Session } from '../../client/config.ts';
import { CliError, refused } from '../../client/errors.ts';
import { openProject, parseType, resolveSlug, sha256, type Project, type SkippedFile } from '../../client/project.ts';
import { note, out, paint, printJson, shortSha, clean, warn, type Paint } from '../../client/output.ts';
import { mergeOrigins, originLabel, type MergeOrigins } from '../../client/merged.ts';
import { type Outgoing, envelopeBytes, entryBytes, packPushes, mib, type MergedPage, noPushes, sendPushes, reportConflicts, planPush, packPlan, conflictAuthors, pullPages, WILL_MERGE_WHY, type PageStatus, pageStatuses, serverHead, syncHistory } from '../../client/sync.ts';

interface Common {
  repo?: string;
  json?: boolean;
}

function reportSkipped(project: Project, skipped: SkippedFile[], json: boolean | undefined): void {
  if (json || skipped.length === 0) return;
  note(`${skipped.length} file(s) under ${project.display('')}/ skipped (not sent):`);
  for (const s of skipped) note(`  ${clean(s.file)}: ${clean(s.reason)}`);
}

/** `merged <path> with <sha>: ## Decision (theirs), ## Consequences (yours)`, and what became of the file. */
function mergedLines(m: MergedPage, origins: MergeOrigins | null, p: Paint): string[] {
  const what =
    origins === null
      ? ` (the server could not say which parts came from where: "kr diff ${clean(m.path)}" shows the merge)`
      : origins.parts.length
        ? `: ${origins.parts.map((x) => originLabel(x, origins.wholeFile)).join(', ')}`
        : '';
  const lines = [`${p.cyan('merged')} ${clean(m.path)} with ${shortSha(m.merged_with)}${what}`];
  if (m.updatedKept) {
    lines.push(
      `    frontmatter "updated" was stamped here (${clean(m.updatedKept.ours)}) and on the server (${clean(m.updatedKept.theirs)}) at once: ` +
        `pushed again with the server's value, which the page keeps`,
    );
  }
  if (m.notWritten !== undefined) {
    lines.push(`    ${clean(m.notWritten)}: the merged page is on the server, your file was left as it is (the next "kr push" merges it again)`);
  }
  return lines;
}

export async function push(args: string[], opts: Common & { type?: string; message?: string; dryRun?: boolean; merge?: boolean }): Promise<void> {
  const type = parseType(opts.type);
  const project = await openProject();
  const { files, skipped, troubles: sentTroubles, message } = await planPush(project, args, type, opts.message);
  reportSkipped(project, skipped, opts.json);
  if (!opts.json) {
    for (const t of sentTroubles) {
      warn(
        `${project.display(t.path)}:${t.line}: the frontmatter does not parse (${clean(t.problem)}); the page is pushed as is, ` +
          `but its diffs compare the whole file until the frontmatter is fixed`,
      );
    }
  }

  // The server's limits: a file too large for any push is named and left out; the rest is packed.
  let session: Session | null = null;
  let limits: LimitsResponse = DEFAULT_LIMITS;
  let limitsKnown = false;
  if (files.length > 0) {
    if (opts.dryRun) {
      try {
        session = await connect();
        limits = await session.api.limits();
        limitsKnown = true;
      } catch {
        // a dry run works offline: the defaults stand in
      }
    } else {
      session = await connect();
      limits = await session.api.limits();
      limitsKnown = true;
    }
  }
  const { tooLarge, fitting, batches } = packPlan({ files, skipped, troubles: sentTroubles, message }, limits);
  const tooLargeText = (f: Outgoing) =>
    `${clean(f.wire.path)} is ${mib(f.bytes)} as sent, over the server's limit of ${mib(limits.max_body_bytes)} per push (max_body_bytes ${limits.max_body_bytes})`;

  if (opts.dryRun) {
    if (opts.json) {
      printJson({
        dry_run: true,
        files: fitting.map((f) => ({ path: f.wire.path, kind: f.kind, parent_sha: f.wire.parent_sha })),
        pushes: batches.length,
        too_large: tooLarge.map((f) => ({ path: f.wire.path, bytes: f.bytes, max_body_bytes: limits.max_body_bytes })),
        skipped,
      });
    } else if (files.length === 0) out('Nothing to push.');
    else {
      if (fitting.length) {
        out(`Would push ${fitting.length} page(s)${batches.length > 1 ? ` in ${batches.length} pushes (server limit ${mib(limits.max_body_bytes)} per push)` : ''}:`);
        for (const f of [...fitting].sort((a, b) => (a.wire.path < b.wire.path ? -1 : 1))) out(`  ${f.kind.padEnd(8)}  ${clean(f.wire.path)}`);
      }
      for (const f of tooLarge) out(`Would not push ${tooLargeText(f)}.`);
      if (!limitsKnown) note('(the server was not asked for its limits: checked against the defaults)');
    }
    return;
  }
  if (files.length === 0) {
    if (opts.json) printJson({ new_head: null, pushed: [], conflicts: [], skipped });
    else out('Nothing to push: no new, changed or deleted pages.');
    return;
  }

  const repo = repoOf(session!, opts.repo, project);
  project.checkRepo(repo);
  const merging = opts.merge !== false;
  const res = batches.length ? await sendPushes(project, session!.api, repo, batches, message, { merge: merging }) : noPushes();
  const sent = new Map(files.map((f) => [f.wire.path, f]));
  // Where each merged page's parts came from, and who made the server's side of each conflict (the push
  // itself is done: a failed lookup only leaves that detail out).
  const origins = new Map<string, MergeOrigins | null>();
  for (const m of res.merged) {
    origins.set(m.path, await mergeOrigins(session!.api, repo, m.path, { parent: m.parent, mergedWith: m.merged_with, sha: m.sha }, m.text).catch(() => null));
  }
  const authors = await conflictAuthors(session!.api, repo, merging ? res.conflicts : res.conflicts.filter((c) => c.deleted));

  if (opts.json) {
    printJson({
      new_head: res.heads[res.heads.length - 1] ?? null,
      commits: res.heads,
      pushed: res.pushed.map(({ content: _merged, ...entry }) => entry),
      deleted: [...res.pushed.filter((x) => sent.get(x.path)?.kind === 'deleted').map((x) => x.path), ...res.gone],
      already_on_server: res.inSync,
      ...(merging
        ? {
            merged: res.merged.map((m) => ({
              path: m.path,
              sha: m.sha,
              merged_with: m.merged_with,
              written: m.notWritten === undefined,
              parts: origins.get(m.path)?.parts ?? null,
              ...(m.updatedKept ? { updated_kept: m.updatedKept.theirs } : {}),
            })),
          }
        : {}),
      conflicts: res.conflicts.map((c) => ({
        path: c.path,
        current_sha: c.current_sha,
        expected_parent_sha: c.expected_parent_sha,
        ...(c.conflicting ? { conflicting: c.conflicting } : {}),
        ...(c.deleted ? { deleted: true, deleted_by: authors.get(c.path) ?? null } : {}),
      })),
      too_large: tooLarge.map((f) => ({ path: f.wire.path, bytes: f.bytes, max_body_bytes: limits.max_body_bytes })),
      skipped,
    });
  } else {
    const p = paint();
    const committed = res.pushed.filter((x) => !x.unchanged);
    if (committed.length) {
      const as = res.heads.length > 1 ? `in ${res.heads.length} commits (${res.heads.map(shortSha).join(', ')})` : `as ${shortSha(res.heads[0] ?? '')}`;
      out(`Pushed ${committed.length} page(s) to ${repo} ${as}:`);
      for (const x of [...committed].sort((a, b) => (a.path < b.path ? -1 : 1))) {
        const kind = sent.get(x.path)?.kind ?? '';
        out(`  ${(kind === 'deleted' ? p.red : p.green)(kind.padEnd(8))}  ${clean(x.path)}`);
      }
    }
    const same = res.pushed.filter((x) => x.unchanged);
    if (same.length) out(`${same.length} page(s) already had this content on the server.`);
    if (res.inSync.length) {
      out(`${res.inSync.length} page(s) were already on the server exactly as yours (an earlier push whose answer was lost); recorded as pushed:`);
      for (const path of res.inSync) out(`  ${clean(path)}`);
    }
    if (res.gone.length) out(`${res.gone.length} page(s) deleted here were already gone from the server: ${res.gone.map(clean).join(', ')}`);
    for (const m of res.merged) for (const line of mergedLines(m, origins.get(m.path) ?? null, p)) out(line);
  }
  const conflict = reportConflicts(res.conflicts, sent, opts.json, authors);
  if (tooLarge.length) {
    const lines = tooLarge.map((f) => `  ${tooLargeText(f)}`);
    const rest = conflict ? `\n${conflict.message}` : '';
    throw new CliError(`${tooLarge.length} page(s) too large to push, not sent (the rest was pushed):\n${lines.join('\n')}${rest}`, 1, 'too_large');
  }
  if (conflict) throw conflict;
}

/** `kr rm <slug|path>...`: deletes pages on the server (one commit) and then the local files. */
export async function rm(args: string[], opts: Common & { type?: string; message?: string; dryRun?: boolean; force?: boolean }): Promise<void> {
  const type = parseType(opts.type);
  const project = await openProject();
  const paths = [...new Set(await Promise.all(args.map((a) => resolveSlug(project, a, type))))].sort();
  const files: Outgoing[] = [];
  for (const path of paths) {
    const known = project.state.pages[path];
    const local = await project.read(path);
    if (!known) {
      throw refused(`${path} is not on the server as far as this folder knows (never pushed or pulled): nothing to delete there; remove ${project.display(path)} yourself if you no longer want it`, 'not_tracked');
    }
    if (local && local.hash !== known.hash && !opts.force) {
      throw refused(`${project.display(path)} has changes that were never pushed; pass --force to delete it anyway`, 'modified');
    }
    const wire: PushFile = { path, delete: true, parent_sha: known.sha };
    files.push({ wire, kind: 'deleted', bytes: entryBytes(wire) });
  }
  if (opts.dryRun) {
    if (opts.json) printJson({ dry_run: true, files: files.map((f) => ({ path: f.wire.path, kind: 'deleted', parent_sha: f.wire.parent_sha })) });
    else {
      out(`Would delete ${files.length} page(s) on the server and here:`);
      for (const f of files) out(`  deleted   ${clean(f.wire.path)}`);
    }
    return;
  }
  const session = await connect();
  const repo = repoOf(session, opts.repo, project);
  project.checkRepo(repo);
  const limits = await session.api.limits();
  const message = opts.message ?? (files.length === 1 ? `delete ${files[0]!.wire.path}` : `delete ${files.length} pages`);
  const batches = packPushes(files, limits.max_body_bytes - envelopeBytes(`${message} (part 99999 of 99999)`), Math.max(1, limits.max_files_per_push));
  const res = await sendPushes(project, session.api, repo, batches, message);
  const failed = new Set(res.conflicts.map((c) => c.path));
  const removed: string[] = [];
  for (const f of files) {
    if (failed.has(f.wire.path)) continue;
    await project.deletePage(await project.safeTarget(f.wire.path));
    removed.push(f.wire.path);
  }
  if (opts.json) printJson({ new_head: res.heads[res.heads.length - 1] ?? null, deleted: removed, conflicts: res.conflicts.map((c) => ({ path: c.path, current_sha: c.current_sha })) });
  else if (removed.length) {
    out(`Deleted ${removed.length} page(s) from ${repo}${res.heads.length ? ` as ${res.heads.map(shortSha).join(', ')}` : ''}:`);
    for (const r of removed) out(`  ${paint().red('deleted ')}  ${clean(r)}`);
  }
  const conflict = reportConflicts(res.conflicts, new Map(files.map((f) => [f.wire.path, f])), opts.json);
  if (conflict) throw conflict;
}

export async function pull(opts: Common & { full?: boolean }): Promise<void> {
  const project = await openProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo, project);
  const { new_head, added, updated, deleted: removed, conflicts, willMerge } = await pullPages(project, session.api, repo, opts.full === true);
  const res = { new_head };

  if (opts.json) {
    printJson({ new_head: res.new_head, added, updated, written: [...added, ...updated].sort(), deleted: removed, conflicts, will_merge: willMerge });
  } else {
    const p = paint();
    if (added.length === 0 && updated.length === 0 && removed.length === 0 && conflicts.length === 0 && willMerge.length === 0) out(`Already up to date (${repo} at ${shortSha(res.new_head)}).`);
    else {
      out(`Pulled ${repo} at ${shortSha(res.new_head)}: ${added.length} added, ${updated.length} updated, ${removed.length} deleted.`);
      const LIST = 50;
      const lines = [
        ...added.map((w) => `  ${p.green('added  ')}  ${clean(w)}`),
        ...updated.map((w) => `  ${p.green('updated')}  ${clean(w)}`),
        ...removed.map((r) => `  ${p.red('deleted')}  ${clean(r)}`),
      ];
      for (const l of lines.slice(0, LIST)) out(l);
      if (lines.length > LIST) out(`  … and ${lines.length - LIST} more (--json lists them all)`);
      for (const path of willMerge) out(`  ${p.cyan('will merge on push')} ${clean(path)}: ${WILL_MERGE_WHY}`);
      for (const c of conflicts) out(`  ${p.red('conflict')} ${clean(c.path)}: ${c.why}; your file was kept`);
    }
  }
  if (conflicts.length) {
    throw new CliError(
      `${conflicts.length} page(s) need resolving: ${conflicts.map((c) => clean(c.path)).join(', ')}\n` +
        `  compare with "kr diff <slug> --local", merge into your file, then "kr resolve <slug>" (or "kr resolve <slug> --theirs") and "kr push"`,
      1,
      'conflict',
    );
  }
}

export async function status(opts: Common): Promise<void> {
  const project = await openProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo, project);
  // The head is asked for beside the pages (one round trip instead of two); a repository that does not exist
  // yet has none.
  const headAsked = serverHead(session.api, repo).then(
    (h) => ({ h }),
    (e: unknown) => ({ e }),
  );
  const { rows, inSync, absent } = await pageStatuses(project, session.api, repo);
  const asked = await headAsked;
  if (!absent && 'e' in asked) throw asked.e;
  const head = absent || 'e' in asked ? null : asked.h;
  const { state } = project;
  if (opts.json) {
    printJson({
      repo,
      server_url: session.serverUrl,
      head: state.head,
      server_head: head?.sha ?? null,
      last_pull: state.head === '' ? null : { head: state.head, at: state.pulled_at ?? null },
      last_push: state.pushed ? { head: state.pushed.head, at: state.pushed.at } : null,
      up_to_date: rows.length === 0,
      pages: rows,
      in_sync: inSync,
      skipped: project.skipped,
    });
    return;
  }
  const p = paint();
  out(`Repository ${repo} on ${session.serverUrl}: ${syncHistory(state)}.`);
  if (absent) note(`(${repo} does not exist on the server yet: the first push creates it)`);
  for (const path of inSync) {
    out(`  ${p.green('in sync ')}  ${clean(path)}: the server already has your version (a push whose answer was lost); recorded as pushed`);
  }
  // Every page compared equal: the folder is level with the server's head, whoever made it.
  const level =
    head === null
      ? 'Up to date: nothing to push or pull.'
      : `Up to date with the server at ${shortSha(head.sha)} (${head.sha === state.pushed?.head ? 'your push' : `by ${clean(head.email)}`}, ${clean(head.time)}): nothing to push or pull.`;
  if (rows.length === 0 && project.skipped.length === 0) {
    out(level);
    return;
  }
  const colour: Record<PageStatus, (s: string) => string> = {
    new: p.green,
    modified: p.yellow,
    deleted: p.red,
    behind: p.cyan,
    conflict: p.red,
    mergeable: p.cyan,
  };
  for (const r of rows) {
    const why = r.status === 'mergeable' ? ': changed here and on the server in different parts; will merge on push' : '';
    out(`  ${colour[r.status](r.status.padEnd(8))}  ${clean(r.path)}${why}`);
  }
  for (const s of project.skipped) out(`  ${p.dim('skipped ')}  ${clean(s.file)}: ${clean(s.reason)}`);
  if (rows.length === 0) out(level);
  const hints: string[] = [];
  if (rows.some((r) => r.status === 'new' || r.status === 'modified')) hints.push('"kr push" sends new and modified pages');
  if (rows.some((r) => r.status === 'deleted')) hints.push('"kr push" deletes pages deleted here on the server too; "kr pull --full" brings them back instead');
  if (rows.some((r) => r.status === 'behind')) hints.push('"kr pull" fetches pages that changed on the server');
  if (rows.some((r) => r.status === 'mergeable')) hints.push('"kr push" merges pages marked mergeable with the server\'s changes');
  if (rows.some((r) => r.status === 'conflict')) hints.push('conflicts: "kr diff <slug> --local", merge, "kr resolve <slug>"');
  if (project.skipped.length) hints.push('skipped files are never sent: rename them to a name the server accepts');
  for (const h of hints) note(`  (${h})`);
}

export async function resolveConflict(slug: string, opts: Common & { type?: string; theirs?: boolean }): Promise<void> {
  const type = parseType(opts.type);
  const project = await openProject();
  const path = await resolveSlug(project, slug, type);
  const session = await connect();
  const repo = repoOf(session, opts.repo, project);
  project.checkRepo(repo);
  const target = await project.safeTarget(path);
  const server = await session.api.page(repo, path);
  const local = await project.read(path);
  let message: string;
  if (opts.theirs) {
    if (server) {
      await project.writePage(target, server.content);
      project.state.pages[path] = { sha: server.sha, hash: sha256(Buffer.from(server.content, 'utf8')) };
      message = `${clean(path)}: replaced your file with the server's version ${shortSha(server.sha)}.`;
    } else {
      await project.deletePage(target);
      delete project.state.pages[path];
      message = `${clean(path)}: the page is gone from the server; removed your file.`;
    }
  } else if (server) {
    const serverHash = sha256(Buffer.from(server.content, 'utf8'));
    project.state.pages[path] = { sha: server.sha, hash: serverHash };
    message = !local
      ? `${clean(path)}: your deletion is now based on the server's version ${shortSha(server.sha)}; "kr push" deletes the page.`
      : local.hash === serverHash
        ? `${clean(path)}: your file equals the server's version ${shortSha(server.sha)}; nothing to push.`
        : `${clean(path)}: your file is now based on the server's version ${shortSha(server.sha)}; "kr push" sends it.`;
  } else {
    delete project.state.pages[path];
    message = local ? `${clean(path)}: not on the server; "kr push" creates it from your file.` : `${clean(path)}: gone here and on the server; nothing to do.`;
  }
  await project.save();
  if (opts.json) printJson({ path, server_sha: server?.sha ?? null, theirs: opts.theirs === true });
  else out(message);
}
