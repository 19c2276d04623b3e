import type { Context } from 'hono';
import type { Identity, UserIdentity } from './auth/identity.ts';
import type { Role } from './db/members.ts';
import type { Deps } from './deps.ts';
import type { StreamOptions } from './repo/repos.ts';
import { HttpError, RepoNotFoundError } from './errors.ts';
import { repoIdParam } from './http/params.ts';
import { authorizeRepo, type Action } from './policy.ts';
import { quotaError } from './quota.ts';
import { roleIn } from './membership.ts';
import type { AppEnv } from './route.ts';
import type { RepoSummary } from '../schema/wire/repos.ts';
import { commitJson } from './wire.ts';

/**
 * Repositories as the API sees them: who may open one, how each of the three creation paths works,
 * and the listing. Creation of one id is serialised, so two creators never both become its owner, and a
 * user's owner row is written in one atomic step with the repository's coming into existence, within the
 * plan cap, however many creations race (lib/repo/repos.ts `createOwned`).
 */

/**
 * Resolves `:id`, checks the caller may perform `action` there (a non-member gets 403 whether or not
 * the repository exists) and that it exists (404 `repo not found`). A member row for a repository that is
 * not there — a creation still under way, whose owner row is written first — makes no one a member: a user
 * gets the 403 then, and only the legacy key learns that the repository is missing.
 */
export async function openRepo(
  c: Context<AppEnv>,
  action: Action,
  id: string = repoIdParam(c),
): Promise<{ id: string; identity: Identity; role: Role | null }> {
  const { identity, role } = await authorizeRepo(c, action, id);
  if (!(await c.get('deps').repos.exists(id))) {
    throw identity.kind === 'legacy' ? new HttpError(404, 'repo not found') : new HttpError(403, 'not a member of this repo');
  }
  return { id, identity, role };
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
  if ((await deps.repos.caseVariant(id)) !== null) throw new HttpError(409, REPO_EXISTS);
  if (identity.kind !== 'user') return deps.repos.create(id);
  const cap = deps.quota.repoCreate(identity);
  const outcome = await deps.repos.createOwned(id, identity.userId, cap?.when ?? null);
  if (outcome === 'created') return true;
  if (outcome === 'refused' && cap) throw quotaError(cap.refusal);
  // Taken meanwhile (another isolate of the hosted build): by this spelling, or by another one (409).
  if (await deps.repos.exists(id)) return false;
  throw new HttpError(409, REPO_EXISTS);
}

const REPO_EXISTS = 'repo already exists';

/** Creations of ids that differ only in letter case are serialised together. */
const creationKey = (id: string) => id.replace(/[A-Z]/g, (ch) => ch.toLowerCase());

/**
 * `POST /v1/repos`: creates the repository with the user as owner; 409 when it exists — with an owner or
 * without one. Only the very first user adopts ownerless repositories (at sign-in); after that an operator
 * gives one an owner.
 */
export async function createRepo(deps: Deps, user: UserIdentity, id: string): Promise<void> {
  await deps.repos.creation.run(creationKey(id), async () => {
    if (!(await createChecked(deps, user, id))) throw new HttpError(409, REPO_EXISTS);
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
    if ((await roleIn(deps, id, identity.userId)) === null) throw new HttpError(403, 'not a member of this repo');
  });
}

/**
 * A push's first check, before its body is read: into an existing repository only members may push
 * (403 before any 400 about the body). A missing one is created later, by repoForPush, once the body
 * has been validated.
 */
export async function precheckPush(c: Context<AppEnv>, id: string): Promise<void> {
  if (await c.get('deps').repos.exists(id)) await authorizeRepo(c, 'repo.push', id);
}

/**
 * Before a push: a missing repository is created (a real pusher becomes its owner); an existing one
 * requires membership. Returns whether this call created it.
 */
export async function repoForPush(c: Context<AppEnv>, id: string): Promise<{ identity: Identity; created: boolean }> {
  const deps = c.get('deps');
  return deps.repos.creation.run(creationKey(id), async () => {
    if (await deps.repos.exists(id)) {
      const { identity } = await authorizeRepo(c, 'repo.push', id);
      return { identity, created: false };
    }
    const identity = c.get('identity')!;
    const created = await createChecked(deps, identity, id);
    if (!created) await authorizeRepo(c, 'repo.push', id);
    return { identity, created };
  });
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
        summary = await deps.repos.summary(e.id);
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
  if (!removed) throw new HttpError(404, 'repo not found');
  deps.live.deleted(id);
}

/** `GET /v1/repos/:id/export`: the repository as a git bundle, streamed; 409 while it has no commit to bundle. */
export async function exportBundle(deps: Deps, id: string, opts: StreamOptions = {}): Promise<ReadableStream<Uint8Array>> {
  const bundle = await deps.repos.exportBody(id, opts);
  if (!bundle) throw new HttpError(409, 'repo is empty: nothing to export');
  return bundle;
}
