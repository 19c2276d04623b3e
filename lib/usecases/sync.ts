import type { Identity } from '../auth/identity.ts';
import type { Deps } from '../framework/deps.ts';
import { PUSH_DETAIL_PATHS } from '../db/activity.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { pagePathProblem, storedPathProblem } from '../core/page/path.ts';
import type { MergedWrite, PushFile as StoreFile, PushResult } from '../repo/types.ts';
import type { PushRequest, PushResponse } from '../../schema/wire/sync.ts';
import { toBase64 } from '../util/bytes.ts';
import type { Repo, StreamOptions } from '../repo/repos.ts';
import { TimeSlice } from '../util/time-slice.ts';

/**
 * Push and pull: the wire forms of docs/api.md "Pages" over the repository store, and the activity
 * they record.
 */

const HEX_SHA = /^[0-9a-fA-F]{1,40}$/;
/** The one merge mode a push may ask for (docs/api.md "Pages", the push route's "Section merge"). */
export const MERGE_SECTIONS = 'sections';
/** Files one push may hold (docs/limits.md "Pushes and pages"): every one is an object write and an index row. */
export const MAX_FILES_PER_PUSH = 10_000;
const encoder = new TextEncoder();

/**
 * Checks every file of a push before anything is written: page paths, parent shas, and that each
 * file either carries content or deletes. Returns the store's form of the files.
 */
export async function validatePush(body: PushRequest): Promise<StoreFile[]> {
  if (body.merge !== undefined && body.merge !== MERGE_SECTIONS) throw refuse(R.invalid_merge_mode);
  if (body.files.length > MAX_FILES_PER_PUSH) {
    throw refuse(R.too_many_files, MAX_FILES_PER_PUSH);
  }
  // 10,000 paths take a few hundred milliseconds to check: other requests get turns meanwhile.
  const slice = new TimeSlice();
  for (const f of body.files) {
    if (slice.due) await slice.next();
    // A deletion only has to name a page; a write must satisfy every rule.
    const problem = f.delete === true ? storedPathProblem(f.path) : pagePathProblem(f.path);
    if (problem !== null) throw refuse(R.invalid_page_path, f.path);
  }
  return body.files.map((f, i) => {
    if (f.parent_sha !== undefined && !HEX_SHA.test(f.parent_sha)) {
      throw refuse(R.invalid_parent_sha, f.parent_sha);
    }
    if (f.delete !== true && f.content === undefined) {
      throw refuse(R.invalid_request, `files[${i}].content: required unless delete is true`);
    }
    const file: StoreFile = { path: f.path, content: f.delete === true ? null : encoder.encode(f.content!) };
    if (f.parent_sha !== undefined) file.parentSha = f.parent_sha;
    if (body.merge === MERGE_SECTIONS) file.merge = true;
    return file;
  });
}

/** Git identities cannot hold `<`, `>` or line breaks; keep what the client meant, minus those. */
function cleanIdent(value: string | undefined, fallback: string): string {
  const v = (value ?? '').replace(/[<>\u0000-\u001f\u007f]/g, '').trim();
  return v === '' ? fallback : v;
}

/** Who the commit is by: the account for real users, what the client sends under the legacy key. */
export function commitAuthor(identity: Identity, body: PushRequest): { name: string; email: string } {
  if (identity.kind === 'user') {
    return {
      name: cleanIdent(identity.name, identity.email.split('@')[0] || identity.email),
      email: cleanIdent(identity.email, 'unknown@service.local'),
    };
  }
  return {
    name: cleanIdent(body.author_name, 'unknown'),
    email: cleanIdent(body.author_email, 'unknown@service.local'),
  };
}

/**
 * Commits a validated push; 409 when any file conflicted. Records `push` activity for real users.
 * `requestId` names the push while it holds the repository's lock (the lock watchdog's `lock_held`).
 */
export async function push(
  deps: Deps,
  identity: Identity,
  repo: Repo,
  body: PushRequest,
  files: StoreFile[],
  opts: { requestId?: string } = {},
): Promise<{ status: 200 | 409; body: PushResponse }> {
  const message = (body.message ?? '').replace(/\u0000/g, '').trim() || 'push';
  const repoId = repo.id;
  // Where the feed shares the database the commit is recorded in (the Node build), the push's event is
  // recorded in that transaction: one flush, and no acknowledged push without its event.
  const joint = identity.kind === 'user' && repo.commitDatabase !== undefined && repo.commitDatabase === deps.activity.database;
  const author = commitAuthor(identity, body);
  const result = await repo.commitFiles(
    files,
    author,
    message,
    joint
      ? {
          owner: opts.requestId,
          activity: (r: PushResult) => deps.activity.stmts(repoId, identity, 'push', pushDetail(r), r.commit?.sha),
        }
      : { owner: opts.requestId },
  );
  const out: PushResponse = { new_head: result.head, pushed: [], conflicts: [] };
  const merged = (m: MergedWrite | undefined) => (m ? { merged: true as const, merged_with: m.with, content: toBase64(m.content) } : {});
  for (const o of result.outcomes) {
    if (o.kind === 'committed') out.pushed.push({ path: o.path, sha: result.commit!.sha, ...merged(o.merged) });
    else if (o.kind === 'unchanged') out.pushed.push({ path: o.path, sha: o.sha, unchanged: true, ...merged(o.merged) });
    else if (o.kind === 'conflict') {
      out.conflicts.push({
        path: o.path,
        current_sha: o.currentSha,
        current_content: toBase64(o.currentContent),
        expected_parent_sha: o.expectedParentSha,
        ...(o.ancestorContent ? { ancestor_content: toBase64(o.ancestorContent) } : {}),
        ...(o.conflicting ? { conflicting: o.conflicting } : {}),
        ...(o.deleted ? { deleted: true as const } : {}),
      });
    }
  }
  if (result.commit && identity.kind === 'user' && !joint) {
    await deps.activity.record(repoId, identity, 'push', pushDetail(result), result.commit.sha);
  }
  return { status: out.conflicts.length > 0 ? 409 : 200, body: out };
}

/** Characters of the commit's subject line kept in a push event's detail (the rest is cut, with "…"). */
export const PUSH_DETAIL_MESSAGE_CHARS = 500;

/**
 * A push's activity detail: the first committed paths, the commit's subject line (so a feed says what
 * changed without a request per event), and (section merge) the paths merged on the way.
 */
function pushDetail(r: PushResult): Record<string, unknown> {
  const merged = r.outcomes.filter((o) => o.kind === 'committed' && o.merged).map((o) => o.path);
  const detail: Record<string, unknown> = { paths: r.committedPaths.slice(0, PUSH_DETAIL_PATHS) };
  if (r.commit) detail.message = clip(r.commit.message, PUSH_DETAIL_MESSAGE_CHARS);
  if (merged.length > 0) detail.merged = [...new Set(merged)].slice(0, PUSH_DETAIL_PATHS);
  return detail;
}

/** `text` cut to at most `max` code points, the last one "…" when anything was cut. */
function clip(text: string, max: number): string {
  if (text.length <= max) return text; // never more code points than UTF-16 units
  const points: string[] = [];
  for (const ch of text) {
    if (points.length === max) return `${points.slice(0, max - 1).join('')}…`;
    points.push(ch);
  }
  return text;
}

/**
 * A pull's answer, streamed as it is read (Repos.pullBody): every page at head, or what changed and was
 * deleted since a commit. Records `pull` activity when pages are to be received. Errors about the request
 * (an unknown `since`) are thrown before anything is streamed.
 */
export async function pull(
  deps: Deps,
  identity: Identity,
  repo: Repo,
  since: string | undefined,
  client: string | undefined,
  opts: StreamOptions = {},
): Promise<ReadableStream<Uint8Array>> {
  const { pages, body } = await repo.pullBody(since, opts);
  if (pages && identity.kind === 'user') {
    const name = client?.trim();
    try {
      await deps.activity.record(repo.id, identity, 'pull', name ? { client: name.slice(0, 200) } : undefined);
    } catch (e) {
      // Nobody reads the stream now: it is let go, and its work with it.
      await body.cancel();
      throw e;
    }
  }
  return body;
}
