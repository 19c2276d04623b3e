import type { Context } from 'hono';
import type { Identity, UserIdentity } from '../auth/identity.ts';
import type { Role } from '../db/members.ts';
import type { Deps } from '../framework/deps.ts';
import type { Repo, StreamOptions } from '../repo/repos.ts';
import { HttpError, RepoNotFoundError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { repoIdParam } from '../framework/http/params.ts';
import { authorizeRepo, type Action } from './policy.ts';
import { quotaError } from './quota.ts';
import { roleIn } from './membership.ts';
import type { AppEnv } from '../framework/route.ts';
import type { RepoSummary } from '../../schema/wire/repos.ts';
import { commitJson } from './shape.ts';
import { concatBytes } from '../util/bytes.ts';

/**
 * Repositories as the API sees them: who may open one, how each of the three creation paths works,
 * and the listing. Creation of one id is serialised, so two creators never both become its owner, and a
 * user's owner row is written in one atomic step with the repository's coming into existence, within the
 * plan cap, however many creations race (lib/repo/repos.ts `createOwned`).
 */

/**
 * Resolves `:id`, checks the caller may perform `action` there (a non-member gets 403 whether or not
 * the repository exists) and that it exists (404 `repo not found`), and hands out the repository's handle
 * (Repos.open): what the route does next goes through `repo`, with no check of its own. A member row for a
 * repository that is not there — a creation still under way, whose owner row is written first — makes no
 * one a member: a user gets the 403 then, and only the legacy key learns that the repository is missing.
 */
export async function openRepo(
  c: Context<AppEnv>,
  action: Action,
  id: string = repoIdParam(c),
): Promise<{ id: string; identity: Identity; role: Role | null; repo: Repo }> {
  const { identity, role } = await authorizeRepo(c, action, id);
  const repos = c.get('deps').repos;
  if (!(await repos.exists(id))) {
    throw identity.kind === 'legacy' ? refuse(R.repo_not_found) : refuse(R.not_a_member);
  }
  return { id, identity, role, repo: repos.open(id) };
}

/**
 * Creates the repository unless it exists; true when this call created it. A real user becomes its owner
 * in the same atomic step that creates it, within the plan cap (402 otherwise, nothing written); the
 * legacy key owns nothing and is never capped. An id equal to an existing repository's ignoring ASCII case,
 * but not exactly, is refused (409): on a case-insensitive filesystem the two would be one directory.
 * Callers hold the creation lock of the id (see {@link creationKey}).
 */
async function createChecked(deps: Deps, identity: Identity, id: string): Promise<boolean> {
  if (await deps.repos.exists(id)) return false;
  if ((await deps.repos.caseVariant(id)) !== null) throw refuse(R.repo_exists);
  if (identity.kind !== 'user') return deps.repos.create(id);
  const cap = deps.quota.repoCreate(identity);
  const outcome = await deps.repos.createOwned(id, identity.userId, cap?.when ?? null);
  if (outcome === 'created') return true;
  if (outcome === 'refused' && cap) throw quotaError(cap.refusal);
  // Taken meanwhile (another isolate of the hosted build): by this spelling, or by another one (409).
  if (await deps.repos.exists(id)) return false;
  throw refuse(R.repo_exists);
}

/** Creations of ids that differ only in letter case are serialised together. */
const creationKey = (id: string) => id.replace(/[A-Z]/g, (ch) => ch.toLowerCase());

/**
 * `POST /v1/repos`: creates the repository with the user as owner; 409 when it exists — with an owner or
 * without one. Only the very first user adopts ownerless repositories (at sign-in); after that an operator
 * gives one an owner.
 */
export async function createRepo(deps: Deps, user: UserIdentity, id: string): Promise<void> {
  await deps.repos.creation.run(creationKey(id), async () => {
    if (!(await createChecked(deps, user, id))) throw refuse(R.repo_exists);
  });
}

/**
 * `POST /v1/repos/:id` (legacy, idempotent): creates the repository if missing. A real user becomes owner
 * only of a repository this call created; on an existing one (owned or ownerless) a non-member gets 403.
 */
export async function legacyCreateRepo(deps: Deps, identity: Identity, id: string): Promise<void> {
  await deps.repos.creation.run(creationKey(id), async () => {
    const created = await createChecked(deps, identity, id);
    if (identity.kind !== 'user' || created) return;
    if ((await roleIn(deps, id, identity.userId)) === null) throw refuse(R.not_a_member);
  });
}

/** A push's repository, checked before its body is read; `take` gives it once the body is valid. */
export interface PushTarget {
  /**
   * The repository to commit to, under the id's creation lock (every push takes it): one that existed when
   * the push was checked is used as it is (its pusher was authorised then; were it deleted meanwhile, the
   * commit finds no repository: 404); a missing one is created now (a real pusher becomes its owner), or,
   * made by someone else meanwhile, requires membership. `created`: this call created it.
   */
  take(): Promise<{ identity: Identity; repo: Repo; created: boolean }>;
}

/**
 * A push's one check of its repository, before its body is read: whether it exists (asked once), and
 * into an existing one only members may push (403 before any 400 about the body). A missing one is
 * created by `take`, once the body has been validated, so a refused push leaves nothing behind.
 */
export async function pushTarget(c: Context<AppEnv>, id: string): Promise<PushTarget> {
  const deps = c.get('deps');
  const existing = (await deps.repos.exists(id)) ? await authorizeRepo(c, 'repo.push', id) : null;
  return {
    take: () =>
      deps.repos.creation.run(creationKey(id), async () => {
        if (existing) return { identity: existing.identity, repo: deps.repos.open(id), created: false };
        const identity = c.get('identity')!;
        const created = await createChecked(deps, identity, id);
        if (!created) await authorizeRepo(c, 'repo.push', id);
        return { identity, repo: deps.repos.open(id), created };
      }),
  };
}

/** `GET /v1/repos`: every repository for the legacy key, the user's own (with role) otherwise. */
export async function listRepos(deps: Deps, identity: Identity): Promise<RepoSummary[]> {
  let entries: Array<{ id: string; role?: Role }>;
  if (identity.kind === 'user') {
    const mine = await deps.members.reposOf(identity.userId);
    const existing = await Promise.all(mine.map(async (m) => ((await deps.repos.exists(m.repo_id)) ? m : null)));
    entries = existing.filter((m) => m !== null).map((m) => ({ id: m.repo_id, role: m.role }));
  } else {
    entries = (await deps.repos.list()).map((id) => ({ id }));
  }
  const out = await Promise.all(
    entries.map(async (e) => {
      let summary;
      try {
        summary = await deps.repos.open(e.id).summary();
      } catch (err) {
        // Deleted meanwhile (on Workers, a deletion cut short between its two steps): not listed.
        if (err instanceof RepoNotFoundError || (err instanceof HttpError && err.status === 404)) return null;
        throw err;
      }
      const s: RepoSummary = { id: e.id, page_count: summary.pageCount };
      if (summary.lastCommit) s.last_commit = commitJson(summary.lastCommit);
      if (e.role) s.role = e.role;
      return s;
    }),
  );
  return out.filter((s) => s !== null).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * `DELETE /v1/repos/:id`: the repository, its history and every row about it are gone (Repos.remove); the
 * id may be created again. Serialised with creations and pushes of the id (its creation lock), so none
 * starts while it runs; a push already in flight finishes first. 404 when it no longer exists.
 */
export async function deleteRepo(deps: Deps, id: string): Promise<void> {
  const removed = await deps.repos.creation.run(creationKey(id), () => deps.repos.remove(id));
  if (!removed) throw refuse(R.repo_not_found);
  deps.live.deleted(id);
}

/** `GET /v1/repos/:id/export`: the repository as a git bundle, streamed; 409 while it has no commit to bundle. */
export async function exportBundle(repo: Repo, opts: StreamOptions = {}): Promise<ReadableStream<Uint8Array>> {
  const bundle = await repo.exportBody(opts);
  if (!bundle) throw refuse(R.repo_empty);
  return bundle;
}

/** What is gathered before a chunk of an import's body is handed to the store (one RPC each on Workers). */
const IMPORT_CHUNK_BYTES = 1024 * 1024;

/**
 * `POST /v1/repos/:id/import` (docs/api.md "Repositories", the import route): the repository becomes the history of a git bundle.
 *
 * Who comes first, before a byte of the body is read: an existing repository takes an import from its owners
 * (403 `only an owner can import`) while it has no commit (409 `repository is not empty`); a missing one from
 * any real user within their plan's cap (402), or the legacy key. Then the body goes to storage as it
 * arrives (Repos.importAppend, a MiB at a time), is checked whole (Repos.importCheck: 400/413 with the
 * reason), and only then is the repository created (the importer its owner, in the same atomic step as for
 * `POST /v1/repos`) and the import kept (Repos.importFinish). Whatever fails leaves nothing behind: the
 * spool is discarded, and a repository this call created is removed with its rows.
 */
export async function importRepo(
  c: Context<AppEnv>,
  opts: { branch?: string; readBody: (onChunk: (chunk: Uint8Array) => Promise<void>) => Promise<number> },
): Promise<{ id: string; head: string; commits: number; pages: number }> {
  const deps = c.get('deps');
  const id = repoIdParam(c);
  const identity = c.get('identity')!;
  const repo = deps.repos.open(id);
  const check = async (): Promise<boolean> => {
    if (await deps.repos.exists(id)) {
      await authorizeRepo(c, 'repo.import', id);
      if ((await repo.head()) !== null) throw refuse(R.repo_not_empty);
      return true;
    }
    if ((await deps.repos.caseVariant(id)) !== null) throw refuse(R.repo_exists);
    // The cap is checked again, atomically, when the repository is made; asked now, a refused user sends no body.
    const cap = identity.kind === 'user' ? deps.quota.repoCreate(identity) : null;
    if (cap && !(await deps.db.get(`SELECT 1 AS ok WHERE ${cap.when.sql}`, cap.when.args))) throw quotaError(cap.refusal);
    return false;
  };
  await check();
  const token = await repo.importBegin();
  let created = false;
  try {
    let pending: Uint8Array[] = [];
    let bytes = 0;
    const hand = async () => {
      if (bytes === 0) return;
      const chunk = pending.length === 1 ? pending[0]! : concatBytes(pending);
      pending = [];
      bytes = 0;
      await repo.importAppend(token, chunk);
    };
    await opts.readBody(async (chunk) => {
      pending.push(chunk);
      bytes += chunk.byteLength;
      if (bytes >= IMPORT_CHUNK_BYTES) await hand();
    });
    await hand();
    const plan = await repo.importCheck(token, { branch: opts.branch, maxFileBytes: deps.config.maxBodyBytes });
    await deps.repos.creation.run(creationKey(id), async () => {
      if (await check()) return;
      created = await createChecked(deps, identity, id);
      if (!created) await check();
    });
    const done = await repo.importFinish(token);
    if (identity.kind === 'user') {
      await deps.activity.record(id, identity, 'import', { commits: done.commits, pages: done.pages, head: done.head });
    }
    return { id, head: plan.head, commits: plan.commits, pages: plan.pages };
  } catch (e) {
    if (created) await deps.repos.creation.run(creationKey(id), () => deps.repos.remove(id)).catch(() => undefined);
    throw e;
  } finally {
    await repo.importDiscard(token);
  }
}
