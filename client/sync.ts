/**
 * The client's sync engine, shared by `kr` (cli/commands/sync.ts) and the agent tool server (mcp/): what a
 * push sends and how (batches within the server's limits, merges taken into .kr/), what a pull writes (never
 * over a local edit), and each page's status against the server.
 */
import { stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { typeOfPath, type PageType } from '../lib/core/page/parse.ts';
import { pagePathProblem } from '../lib/core/page/path.ts';
import type { LimitsResponse } from '../schema/wire/limits.ts';
import type { PullResponse, PushFile, PushResponse } from '../schema/wire/sync.ts';
import { ApiError, type Api } from './api.ts';
import { CliError, refused } from './errors.ts';
import { resolveSlug, sha256, type Project, type SkippedFile } from './project.ts';
import { busy, note, out, paint, progress, shortSha, clean, utc } from './output.ts';
import { anyWholeFile, partLabel } from './merged.ts';
import { conflictSummary } from './render.ts';
import { frontmatterTrouble } from './pagecheck.ts';
import { onlyUpdatedConflicts, takeTheirUpdated } from './updated-stamp.ts';
import { mergePages } from '../lib/core/differ/merge.ts';

/**
 * `parent_sha` of a page we have never seen on the server: no commit has this sha, so the server accepts
 * the file only if the page does not exist yet, and otherwise answers a conflict (a `parent_sha` that
 * resolves to nothing is a conflict). A new local page never silently overwrites someone else's.
 */
export const NEW_PAGE_PARENT = '0'.repeat(40);

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);
export const fromBase64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');
export const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

export type Kind = 'new' | 'modified' | 'deleted';

/** One file of a push as the client sees it: what goes on the wire, plus what the state needs afterwards. */
export interface Outgoing {
  wire: PushFile;
  kind: Kind;
  /** SHA-256 of the content sent (deletions: none). */
  hash?: string;
  /** Bytes of this file's entry in the JSON body. */
  bytes: number;
  /**
   * A second sending with the server's frontmatter `updated` (client/updated-stamp.ts): the SHA-256 of the file
   * as read (what a merged page may replace), and both values.
   */
  retry?: { fileHash: string; ours: string; theirs: string };
}

/** The server paths a push looks at: the arguments (slugs, page files or folders, tracked paths), or every page. */
export async function pushCandidates(project: Project, args: string[], type: PageType | undefined): Promise<{ paths: string[]; scope: (file: string) => boolean }> {
  const tracked = Object.keys(project.state.pages);
  const ofType = (p: string) => type === undefined || typeOfPath(p) === type;
  const everything = () => [...project.localPages(), ...tracked].filter(ofType);
  if (args.length === 0) return { paths: [...new Set(everything())].sort(), scope: () => true };
  const picked = new Set<string>();
  const prefixes: string[] = [];
  const files = new Set<string>();
  for (const arg of args) {
    const abs = resolve(arg);
    const st = await stat(abs).catch(() => null);
    if (st?.isDirectory()) {
      const rel = relative(project.krDir, abs);
      if (rel.startsWith('..') || isAbsolute(rel)) throw refused(`${arg} is not inside ${project.display('')}`);
      const prefix = rel === '' ? '' : rel.split(sep).join('/') + '/';
      prefixes.push(prefix);
      everything()
        .filter((p) => p.startsWith(prefix.normalize('NFC')))
        .forEach((p) => picked.add(p));
      continue;
    }
    const path = await resolveSlug(project, arg, type);
    picked.add(path);
    files.add(path);
  }
  const scope = (file: string) => files.has(file.normalize('NFC')) || prefixes.some((p) => file.startsWith(p));
  return { paths: [...picked].sort(), scope };
}

/** The JSON body's size without files, and each file's share of it (its entry plus a separating comma). */
export const envelopeBytes = (message: string): number => utf8Bytes(JSON.stringify({ message, files: [] }));
export const entryBytes = (f: PushFile): number => utf8Bytes(JSON.stringify(f)) + 1;

/**
 * Packs the files into as few pushes as fit the server's limits (first fit, largest first): each push's
 * body at most `max_body_bytes`, at most `max_files_per_push` files.
 */
export function packPushes<T extends { bytes: number }>(files: T[], budget: number, maxFiles: number): T[][] {
  const bins: Array<{ left: number; files: T[] }> = [];
  for (const f of [...files].sort((a, b) => b.bytes - a.bytes)) {
    let bin = bins.find((b) => b.left >= f.bytes && b.files.length < maxFiles);
    if (!bin) {
      bin = { left: budget, files: [] };
      bins.push(bin);
    }
    bin.left -= f.bytes;
    bin.files.push(f);
  }
  return bins.map((b) => b.files);
}

export const mib = (n: number): string => (n >= 1024 * 1024 ? `${(n / (1024 * 1024)).toFixed(1).replace(/\.0$/, '')} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1).replace(/\.0$/, '')} KiB` : `${n} bytes`);

/** A page the server merged with changes made there since this folder's copy (docs/api.md "Pages", the push route's "Section merge"). */
export interface MergedPage {
  path: string;
  /** The commit of the push (the page's new base). */
  sha: string;
  /** The head it was merged with. */
  merged_with: string;
  /** The commit this folder's copy was based on (the parent sent). */
  parent: string;
  /** The merged text, as committed. */
  text: string;
  /**
   * Why the merged text was not written into `.kr/` (and recorded as the page's base); absent when it was.
   * The file is then left as it is, on its old base, so the next push merges it again.
   */
  notWritten?: string;
  /**
   * Frontmatter `updated` was stamped here and on the server at once: the page was pushed again with the
   * server's value, which the merged page keeps (client/updated-stamp.ts).
   */
  updatedKept?: { ours: string; theirs: string };
}

export interface PushOutcome {
  heads: string[];
  pushed: PushResponse['pushed'];
  conflicts: PushResponse['conflicts'];
  /** Pages the server already had exactly as sent (a push whose answer was lost): now recorded as pushed. */
  inSync: string[];
  /** Deletions that found the page already gone. */
  gone: string[];
  /** Pages merged by the server (also in `pushed`). */
  merged: MergedPage[];
}

export const noPushes = (): PushOutcome => ({ heads: [], pushed: [], conflicts: [], inSync: [], gone: [], merged: [] });

/**
 * A merged page: its text goes into `.kr/` as a pull would write it, and becomes the page's base — unless
 * the file is no longer what was sent (changed while the push ran) or cannot be written: then it is left
 * alone, on its old base.
 */
export async function takeMerged(project: Project, f: Outgoing, p: PushResponse['pushed'][number]): Promise<MergedPage> {
  const bytes = Buffer.from(p.content!, 'base64');
  const page: MergedPage = { path: p.path, sha: p.sha, merged_with: p.merged_with ?? '', parent: f.wire.parent_sha ?? '', text: bytes.toString('utf8') };
  if (f.retry) page.updatedKept = { ours: f.retry.ours, theirs: f.retry.theirs };
  try {
    const now = await project.read(p.path);
    if (now?.hash !== (f.retry?.fileHash ?? f.hash)) return { ...page, notWritten: 'your file changed while the push ran' };
    await project.writePage(await project.safeTarget(p.path), page.text);
  } catch (e) {
    return { ...page, notWritten: `cannot write ${project.display(p.path)}: ${(e as Error).message}` };
  }
  project.state.pages[p.path] = { sha: p.sha, hash: sha256(bytes) };
  return page;
}

/**
 * Sends the files in as few pushes as the limits allow (each one commit) and records in the state what
 * the server took. A conflict whose server content equals what we sent is no conflict: an earlier push
 * went through but its answer was lost; the server's sha becomes the page's base. With `merge`, a page
 * that changed on the server since its base is merged there by section, and the merged page is written
 * into `.kr/` ({@link MergedPage}); a page whose merge conflicts only on frontmatter `updated` (both sides
 * stamped it) is sent once more with the server's value, in a push of its own (client/updated-stamp.ts).
 * Without `merge` the request is exactly the original client's.
 */
export async function sendPushes(
  project: Project,
  api: Api,
  repo: string,
  batches: Outgoing[][],
  message: string,
  opts: { merge?: boolean } = {},
): Promise<PushOutcome> {
  const outcome = noPushes();
  const total = batches.reduce((n, b) => n + b.length, 0);
  const working = busy(`pushing ${total} page(s)${batches.length > 1 ? ` in ${batches.length} pushes` : ''}`);

  /** One push of `batch`; returns the files to send again with the server's `updated`. */
  const pushOnce = async (batch: Outgoing[], msg: string): Promise<Outgoing[]> => {
    const { data } = await api.push(repo, { message: msg, ...(opts.merge ? { merge: 'sections' } : {}), files: batch.map((f) => f.wire) });
    const sent = new Map(batch.map((f) => [f.wire.path, f]));
    const answered = new Set<string>();
    const again: Outgoing[] = [];
    for (const p of data.pushed) {
      answered.add(p.path);
      const f = sent.get(p.path);
      if (!f) continue;
      if (f.kind === 'deleted') delete project.state.pages[p.path];
      else if (p.merged && p.content !== undefined && p.unchanged && sha256(Buffer.from(p.content, 'base64')) === f.hash) {
        // Merged into exactly what the server already has, which is our file: an earlier push went
        // through but its answer was lost (as with a conflict whose content is ours, below).
        project.state.pages[p.path] = { sha: p.sha, hash: f.hash! };
        outcome.inSync.push(p.path);
        continue;
      } else if (p.merged && p.content !== undefined) outcome.merged.push(await takeMerged(project, f, p));
      else project.state.pages[p.path] = { sha: p.sha, hash: f.hash! };
      outcome.pushed.push(p);
    }
    for (const c of data.conflicts) {
      answered.add(c.path);
      const f = sent.get(c.path);
      // (A page deleted on the server is never in sync with a file, even an empty one.)
      if (f && !c.deleted && f.kind !== 'deleted' && f.wire.content !== undefined && fromBase64(c.current_content) === f.wire.content) {
        project.state.pages[c.path] = { sha: c.current_sha, hash: f.hash! };
        outcome.inSync.push(c.path);
        continue;
      }
      const stamped = opts.merge && f && !f.retry && f.kind !== 'deleted' && f.wire.content !== undefined && onlyUpdatedConflicts(c.conflicting);
      const retry = stamped ? takeTheirUpdated(f.wire.content!, fromBase64(c.current_content)) : null;
      if (retry) {
        const wire: PushFile = { ...f!.wire, content: retry.text };
        again.push({ wire, kind: f!.kind, hash: sha256(retry.text), bytes: entryBytes(wire), retry: { fileHash: f!.hash!, ours: retry.ours, theirs: retry.theirs } });
      } else outcome.conflicts.push(c);
    }
    // Not in either list: a deletion of a page the server no longer has.
    for (const f of batch) {
      if (!answered.has(f.wire.path) && f.kind === 'deleted') {
        delete project.state.pages[f.wire.path];
        outcome.gone.push(f.wire.path);
      }
    }
    if (data.pushed.some((p) => !p.unchanged && sent.get(p.path))) {
      outcome.heads.push(data.new_head);
      project.state.pushed = { head: data.new_head, at: nowSeconds() };
    }
    await project.save();
    return again;
  };

  try {
    for (let i = 0; i < batches.length; i++) {
      const msg = batches.length > 1 ? `${message} (part ${i + 1} of ${batches.length})` : message;
      const again = await pushOnce(batches[i]!, msg);
      // Once only: a page that conflicts again is reported as it is.
      if (again.length) await pushOnce(again, msg);
    }
  } finally {
    working.done();
    await project.save();
  }
  return outcome;
}

/**
 * Prints the conflicts of a push and returns the refusal to throw (null when none). A conflict of a merging
 * push names only the parts that could not merge, and who changed the server's version (`authors`: path →
 * email of the commit `current_sha`, when known).
 */
export function reportConflicts(conflicts: PushResponse['conflicts'], sent: Map<string, Outgoing>, json: boolean | undefined, authors = new Map<string, string>()): CliError | null {
  if (conflicts.length === 0) return null;
  const p = paint();
  if (!json) {
    for (const c of conflicts) {
      const f = sent.get(c.path);
      if (c.deleted) {
        const by = authors.get(c.path);
        out(
          `${p.red('conflict')}  ${clean(c.path)}: deleted on the server${by === undefined ? '' : ` by ${clean(by)}`} in ${shortSha(c.current_sha)}, ` +
            `after the version your file is based on (${shortSha(c.expected_parent_sha)}); your file was left as it is, and the page stays deleted.`,
        );
        out(`    (to create it again from your file: "kr resolve <slug>", then "kr push"; to drop your file: "kr resolve <slug> --theirs")`);
        continue;
      }
      if (c.conflicting?.length && f?.kind !== 'deleted') {
        const whole = anyWholeFile(f?.wire.content, fromBase64(c.current_content), c.ancestor_content === undefined ? undefined : fromBase64(c.ancestor_content));
        const by = authors.get(c.path);
        out(
          `${p.red('conflict')}  ${clean(c.path)}: ${c.conflicting.map((n) => partLabel(n, whole)).join(', ')} changed on the server ` +
            `(${by === undefined ? '' : `by ${clean(by)}, `}${shortSha(c.current_sha)}) and here; your file was left as it is.`,
        );
        continue;
      }
      const why =
        c.expected_parent_sha === NEW_PAGE_PARENT
          ? 'the page already exists on the server (you have not pulled it)'
          : `the server has ${shortSha(c.current_sha)}, your copy is based on ${shortSha(c.expected_parent_sha)}`;
      if (f?.kind === 'deleted') {
        out(`${p.red('conflict')}  ${clean(c.path)}: ${why}; you deleted the page, and it changed on the server since. Nothing was deleted.`);
        out(`    ("kr pull --full" brings the server's version back; "kr resolve <slug>" then "kr push" deletes it anyway)`);
        continue;
      }
      const ours = f?.wire.content ?? '';
      const theirs = fromBase64(c.current_content);
      const ancestor = c.ancestor_content !== undefined ? fromBase64(c.ancestor_content) : undefined;
      out(`${p.red('conflict')}  ${clean(c.path)}: ${why}; your file was left as it is. Sections (yours vs the server's):`);
      for (const line of conflictSummary(ours, theirs, ancestor, p)) out(line);
    }
  }
  const gone = conflicts.filter((c) => c.deleted);
  const lines = [`${conflicts.length} page(s) not pushed because they changed on the server: ${conflicts.map((c) => clean(c.path)).join(', ')}`];
  if (gone.length < conflicts.length) lines.push(`  next: "kr pull", compare with "kr diff <slug> --local", merge into your file, then "kr resolve <slug>" and "kr push"`);
  if (gone.length) lines.push(`  deleted on the server: ${gone.map((c) => clean(c.path)).join(', ')}; "kr resolve <slug>" then "kr push" creates a page again from your file`);
  return new CliError(
    lines.join('\n'),
    1,
    'conflict',
  );
}

/** What a push would send: the files (new, modified, deleted), the files skipped, the frontmatter troubles. */
export interface PushPlan {
  files: Outgoing[];
  skipped: SkippedFile[];
  /** Pages whose frontmatter does not parse (still sent). */
  troubles: Array<{ path: string; line: number; problem: string }>;
  /** The commit message: the given one, or one naming the change. */
  message: string;
}

/** The files a push of `args` (slugs, paths, folders; none: every page) would send; no request is made. */
export async function planPush(project: Project, args: string[], type: PageType | undefined, givenMessage?: string): Promise<PushPlan> {
  const { paths, scope } = await pushCandidates(project, args, type);
  const skipped: SkippedFile[] = project.skipped.filter((s) => scope(s.file));
  const files: Outgoing[] = [];
  const troubles: Array<{ path: string; line: number; problem: string }> = [];
  const reading = progress('reading pages', paths.length);
  for (const path of paths) {
    reading.tick();
    const local = await project.read(path);
    const known = project.state.pages[path];
    if (!local) {
      if (!known) continue;
      // Deleted locally: deleted on the server too, unless it changed there meanwhile (then a conflict).
      const wire: PushFile = { path, delete: true, parent_sha: known.sha };
      files.push({ wire, kind: 'deleted', bytes: entryBytes(wire) });
      continue;
    }
    if (known && known.hash === local.hash) continue;
    const problem = pagePathProblem(path);
    if (problem !== null) {
      if (!skipped.some((x) => x.file.normalize('NFC') === path)) skipped.push({ file: path, reason: `${problem}: the server refuses this page path` });
      continue;
    }
    const trouble = frontmatterTrouble(local.text);
    if (trouble) troubles.push({ path, ...trouble });
    const wire: PushFile = { path, content: local.text, parent_sha: known ? known.sha : NEW_PAGE_PARENT };
    files.push({ wire, kind: known ? 'modified' : 'new', hash: local.hash, bytes: entryBytes(wire) });
  }
  reading.done();
  const message =
    givenMessage ?? (files.length === 1 ? `${files[0]!.kind === 'deleted' ? 'delete' : 'update'} ${files[0]!.wire.path}` : `update ${files.length} pages`);
  return { files, skipped, troubles: troubles.filter((t) => files.some((f) => f.wire.path === t.path)), message };
}

/** A plan cut to the server's limits: the files too large for any push, and the rest packed into pushes. */
export function packPlan(plan: PushPlan, limits: LimitsResponse): { tooLarge: Outgoing[]; fitting: Outgoing[]; batches: Outgoing[][] } {
  const room = limits.max_body_bytes - envelopeBytes(`${plan.message} (part 99999 of 99999)`);
  const tooLarge = plan.files.filter((f) => f.bytes > room);
  const fitting = plan.files.filter((f) => f.bytes <= room);
  return { tooLarge, fitting, batches: packPushes(fitting, room, Math.max(1, limits.max_files_per_push)) };
}

/**
 * Who pushed the server's version of each page whose conflict names its parts, or who deleted a page deleted
 * on the server (path → email), from the page's history; a page the server cannot say for is left out.
 */
export async function conflictAuthors(api: Api, repo: string, conflicts: PushResponse['conflicts']): Promise<Map<string, string>> {
  const authors = new Map<string, string>();
  for (const c of conflicts) {
    if (!c.conflicting?.length && !c.deleted) continue;
    const commits = (await api.history(repo, c.path, 20).catch(() => null))?.commits ?? [];
    const commit = commits.find((x) => x.sha === c.current_sha);
    if (commit) authors.set(c.path, commit.email);
  }
  return authors;
}

/** A file operation of a pull; on failure the state keeps what was done so far (head unchanged). */
export async function io(project: Project, path: string, op: () => Promise<void>): Promise<void> {
  try {
    await op();
  } catch (e) {
    await project.save();
    throw refused(`cannot write ${project.display(path)}: ${(e as Error).message}`);
  }
}

/**
 * Whether `kr push` will merge a page changed both here (`ours`) and on the server (`theirs`) since the commit
 * this folder's copy is based on (`baseSha`): the server's own section merge (lib/core/differ/merge.ts
 * `mergePages`) run here, over the page as it was at that commit (one request, `GET pages/<path>?at=`; absent
 * there: the empty page, as the server merges). A conflict only on frontmatter `updated` counts as merging, as
 * push sends the page again with the server's value (client/updated-stamp.ts). Anything the server cannot
 * answer (an older server without `?at=`, a network error) is false: the page stays a conflict.
 */
export async function willMerge(api: Api, repo: string, path: string, baseSha: string, theirs: string, ours: string): Promise<boolean> {
  let base: string;
  try {
    const page = await api.page(repo, path, baseSha);
    // An older server ignores `at` and answers the head: not the base, so no verdict.
    if (page && page.sha !== baseSha) return false;
    base = page?.content ?? '';
  } catch {
    return false;
  }
  let m = mergePages(base, theirs, ours);
  if (!m.clean && onlyUpdatedConflicts(m.conflicting)) {
    const retry = takeTheirUpdated(ours, theirs);
    if (retry) m = mergePages(base, theirs, retry.text);
  }
  return m.clean;
}

/** What `kr pull` and `kr watch` say of a page that will merge on push. */
export const WILL_MERGE_WHY = 'changed here and on the server in different parts; your file was kept, and "kr push" merges the two';

/** What a pull did: pages written, deleted, and the ones left alone because they changed here too. */
export interface PullResult {
  new_head: string;
  added: string[];
  updated: string[];
  deleted: string[];
  conflicts: Array<{ path: string; why: string }>;
  /**
   * Pages changed here and on the server in parts that merge (see {@link willMerge}): left as they are, like
   * a conflict, but `kr push` merges them.
   */
  willMerge: string[];
}

/**
 * Fetches what changed on the server since the last pull (everything with `full`, or when the last pulled
 * head is unknown to the server) into the project folder, and records the new head. Prints nothing.
 */
export async function pullPages(project: Project, api: Api, repo: string, fullAsked: boolean): Promise<PullResult> {
  project.checkRepo(repo);
  let full = fullAsked || project.state.head === '';
  const since = full ? undefined : project.state.head;
  let res: PullResponse;
  const working = busy('pulling');
  try {
    try {
      res = await api.pull(repo, since);
    } catch (e) {
      if (!(e instanceof ApiError) || e.refusal !== 'unknown_sha' || since === undefined) throw e;
      note(`the last pulled head ${shortSha(since)} is unknown to the server (history rewritten?); pulling every page`);
      full = true;
      res = await api.pull(repo);
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

  const added: string[] = [];
  const updated: string[] = [];
  const removed: string[] = [];
  const conflicts: Array<{ path: string; why: string }> = [];
  const mergeable: string[] = [];
  const bar = progress('writing pages', res.files.length + deletions.size);
  for (const f of res.files) {
    bar.tick();
    const known = project.state.pages[f.path];
    const local = await project.read(f.path);
    const serverHash = sha256(Buffer.from(f.content, 'utf8'));
    if (local && known && known.sha === f.sha) continue; // our own base (e.g. our last push): nothing new
    if (!local && known && known.sha === f.sha && !full) continue; // deleted here, unchanged there: the next push deletes it
    if (local && local.hash === serverHash) {
      project.state.pages[f.path] = { sha: f.sha, hash: serverHash };
      continue;
    }
    if (local && !(known && local.hash === known.hash)) {
      if (known && (await willMerge(api, repo, f.path, known.sha, f.content, local.text))) mergeable.push(f.path);
      else conflicts.push({ path: f.path, why: known ? 'changed locally and on the server' : 'exists locally but was never pulled' });
      continue;
    }
    if (!local && known && !full) {
      conflicts.push({ path: f.path, why: 'deleted locally but changed on the server ("kr pull --full" brings it back)' });
      continue;
    }
    await io(project, f.path, () => project.writePage(targets.get(f.path)!, f.content));
    project.state.pages[f.path] = { sha: f.sha, hash: serverHash };
    (local ? updated : added).push(f.path);
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
  project.state.pulled_at = nowSeconds();
  await project.save();
  return { new_head: res.new_head, added, updated, deleted: removed, conflicts, willMerge: mergeable };
}

/** `mergeable`: changed here and on the server in parts that merge; `kr push` merges it ({@link willMerge}). */
export type PageStatus = 'new' | 'modified' | 'deleted' | 'behind' | 'conflict' | 'mergeable';

/** One page's state against the server (see {@link pageStatuses}). */
export interface StatusRow {
  path: string;
  status: PageStatus;
  server_sha?: string;
  known_sha?: string;
}

/**
 * Every page that differs between the folder and the server: new, modified, deleted here, behind the
 * server, changed on both sides in parts that merge (`mergeable`), in conflict. A page the server already has exactly as here (a push whose answer was lost) is
 * recorded as pushed and listed in `inSync`; `absent`: the repository does not exist yet. Prints nothing.
 */
export async function pageStatuses(project: Project, api: Api, repo: string): Promise<{ rows: StatusRow[]; inSync: string[]; absent: boolean }> {
  project.checkRepo(repo);
  let pages: Array<{ path: string; sha: string }>;
  let absent = false;
  try {
    pages = (await api.pages(repo)).pages; // the one request (plus one or two per apparent conflict, below)
  } catch (e) {
    // Only the legacy key sees this (a user gets 403): the first push will create the repository.
    if (!(e instanceof ApiError) || e.status !== 404 || e.message !== 'repo not found') throw e;
    pages = [];
    absent = true;
  }
  const server = new Map(pages.map((pg) => [pg.path, pg.sha]));
  const paths = new Set([...project.localPages(), ...Object.keys(project.state.pages), ...server.keys()]);
  const rows: StatusRow[] = [];
  const inSync: string[] = [];
  let stateChanged = false;
  for (const path of [...paths].sort()) {
    const known = project.state.pages[path];
    const remote = server.get(path);
    const local = project.hasFile(path) || known ? await project.read(path) : null;
    let st: PageStatus | null = null;
    if (local) {
      if (!known) st = remote ? 'conflict' : 'new';
      else {
        const modified = local.hash !== known.hash;
        const moved = remote !== known.sha;
        st = modified && moved ? 'conflict' : modified ? 'modified' : moved ? 'behind' : null;
      }
      // Before calling anything a conflict, look at the server's copy: after a push whose answer was
      // lost the server has exactly this file, and the page is simply in sync.
      if (st === 'conflict' && remote) {
        const copy = await api.page(repo, path);
        if (copy && sha256(Buffer.from(copy.content, 'utf8')) === local.hash) {
          project.state.pages[path] = { sha: copy.sha, hash: local.hash };
          stateChanged = true;
          inSync.push(path);
          st = null;
        } else if (copy && known && (await willMerge(api, repo, path, known.sha, copy.content, local.text))) st = 'mergeable';
      }
    } else if (known) {
      if (remote === undefined) {
        // Gone here and there (a deletion whose answer was lost, or deleted on both sides).
        if (!absent) {
          delete project.state.pages[path];
          stateChanged = true;
        }
      } else st = remote === known.sha ? 'deleted' : 'conflict';
    } else if (remote) st = 'behind';
    if (st) {
      const row: (typeof rows)[number] = { path, status: st };
      if (remote) row.server_sha = remote;
      if (known) row.known_sha = known.sha;
      rows.push(row);
    }
  }
  if (stateChanged) await project.save();
  return { rows, inSync, absent };
}

/** The newest commit of the repository (its head), or null when it has none or does not exist yet. */
export async function serverHead(api: Api, repo: string): Promise<{ sha: string; email: string; time: string } | null> {
  try {
    const c = (await api.timeline(repo, 1)).commits[0];
    return c ? { sha: c.sha, email: c.email, time: c.time } : null;
  } catch (e) {
    if (e instanceof ApiError && e.refusal === 'repo_not_found') return null;
    throw e;
  }
}

/**
 * What this folder last did with the server, in words: `last pull 356509b at <time>; last push 9f2c1d0 at
 * <time>` (`never` for either). A push does not count as a pull: it does not bring other people's changes.
 */
export function syncHistory(state: Project['state']): string {
  const at = (t: number | undefined) => (t === undefined ? '' : ` at ${utc(t)}`);
  const pull = state.head === '' ? 'never' : `${shortSha(state.head)}${at(state.pulled_at)}`;
  const push = state.pushed ? `${shortSha(state.pushed.head)}${at(state.pushed.at)}` : 'never';
  return `last pull ${pull}; last push ${push}`;
}
