import type { Deps } from '../framework/deps.ts';
import { mapBounded } from '../util/bounded.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { billingOf } from './billing.ts';
import type { AdminRepo, AdminStats, AdminUser } from '../../schema/wire/hosted.ts';

/**
 * The admin routes (docs/api.md "Hosted build: admin"). Repositories and page counts come from `deps.repos`
 * (git and its index: files on Node, Durable Objects on Workers), never from SQL on the index tables;
 * accounts, membership and subscriptions from the relational database.
 */

/** Page counts read at once. */
const SUMMARY_CONCURRENCY = 8;

async function pageCounts(deps: Deps, ids: string[]): Promise<number[]> {
  return mapBounded(ids, SUMMARY_CONCURRENCY, async (id) => (await deps.repos.open(id).summary()).pageCount);
}

/** `GET /v1/admin/stats`: users, repositories, subscribed users, pages at head across every repository. */
export async function adminStats(deps: Deps): Promise<AdminStats> {
  const [ids, counts] = await Promise.all([deps.repos.list(), billingOf(deps).counts()]);
  const pages = (await pageCounts(deps, ids)).reduce((a, b) => a + b, 0);
  return { users: counts.users, repos: ids.length, subscribed_users: counts.subscribedUsers, pages };
}

/** `GET /v1/admin/users`: every user, oldest first. */
export async function adminUsers(deps: Deps): Promise<AdminUser[]> {
  return billingOf(deps).users();
}

/**
 * `GET /v1/admin/repos`: every repository, sorted by id, with its owners' emails (oldest first), its
 * member count (owners included) and its page count.
 */
export async function adminRepos(deps: Deps): Promise<AdminRepo[]> {
  const [ids, memberships] = await Promise.all([deps.repos.list(), billingOf(deps).memberships()]);
  const sorted = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const byRepo = new Map<string, { owners: string[]; members: number }>();
  for (const m of memberships) {
    const entry = byRepo.get(m.repoId) ?? { owners: [], members: 0 };
    entry.members++;
    if (m.role === 'owner') entry.owners.push(m.email);
    byRepo.set(m.repoId, entry);
  }
  const pages = await pageCounts(deps, sorted);
  return sorted.map((id, i) => ({
    id,
    owners: byRepo.get(id)?.owners ?? [],
    members: byRepo.get(id)?.members ?? 0,
    page_count: pages[i]!,
  }));
}

/** `POST /v1/admin/users/:id/subscription`: 404 `user not found`. */
export async function setSubscription(deps: Deps, userId: string, subscribed: boolean): Promise<void> {
  if (!(await billingOf(deps).setSubscribed(userId, subscribed))) throw refuse(R.user_not_found);
}
