import type { UserIdentity } from '../auth/identity.ts';
import type { Stmt } from '../db/sql.ts';
import { refuseWith, type HttpError } from '../core/errors.ts';
import { R } from '../core/refusals.ts';

/**
 * The quota seam. Repository creation (all three paths), joining and promotion to owner ask it first; the self-hosted build
 * plugs in `unlimitedQuota`, the hosted build its plan caps. A cap is not checked ahead of the write: it is
 * an SQL condition the write itself evaluates (the owner row of a new repository, the member row of a first
 * join), so however many requests race, the cap holds (docs/concepts.md "The hosted build"). A refusal is a 402
 * with the body of docs/errors.md "402 Plan caps (hosted build)" and writes nothing.
 */
export interface QuotaRefusal {
  code: 'quota_repos' | 'quota_members';
  message: string;
  limit: number;
  upgradeUrl: string;
  /**
   * The emails of the repository's owners, for a refused join: the joiner cannot lift the cap (it is the
   * owners' plan), so they are told whom to ask. The 402 body carries them as `owners`.
   */
  owners?: string[];
}

/** A cap as the write that could pass it sees it. */
export interface QuotaGuard {
  /**
   * An SQL condition over the database of accounts (members, subscriptions) that holds while one more
   * row is within the cap; the writing statement inserts its row only where it holds.
   */
  when: Stmt;
  /** What the caller is told when it does not hold. */
  refusal: QuotaRefusal;
}

export interface QuotaPolicy {
  /** The cap on the repositories this user owns, or null. (The legacy key owns nothing: it is never asked.) */
  repoCreate(user: UserIdentity): QuotaGuard | null;
  /** The cap on the members of this repository, for a first join (re-joins never count), or null. */
  join(repoId: string): QuotaGuard | null;
  /** The cap on the repositories this user owns, for making them an owner of one more (a promotion), or null. */
  promote(userId: string): QuotaGuard | null;
}

export const unlimitedQuota: QuotaPolicy = {
  repoCreate: () => null,
  join: () => null,
  promote: () => null,
};

/** The 402 of a cap: its `code` is the cap's (`quota_repos`, `quota_members`), as every error body's code. */
export function quotaError(r: QuotaRefusal): HttpError {
  return refuseWith(R[r.code], {
    extra: {
    limit: r.limit,
    upgrade_url: r.upgradeUrl,
    ...(r.owners ? { owners: r.owners } : {}),
    },
  }, r.message);
}
