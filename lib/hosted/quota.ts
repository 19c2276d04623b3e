import type { Config } from '../framework/config.ts';
import { memberCapCondition, repoCapCondition } from '../db/billing.ts';
import { unlimitedQuota, type QuotaPolicy } from '../usecases/quota.ts';

/**
 * The hosted build's plan caps (docs/errors.md "402 Plan caps (hosted build)", docs/limits.md "Hosted build"):
 * - creating a repository: a user who is not subscribed may own at most SERVICE_PLAN_FREE_REPOS; the
 *   legacy key owns nothing and is never capped;
 * - a first join: a repository none of whose owners is subscribed holds at most SERVICE_PLAN_FREE_MEMBERS
 *   members, owners included. The cap is the owners' plan, never the joiner's; re-joins never get here
 *   (lib/usecases/membership.ts asks only for first joins);
 * - a promotion to owner: the promoted user then owns one more repository, so the repository cap is theirs
 *   (not the promoter's): a user who is not subscribed and already owns SERVICE_PLAN_FREE_REPOS is refused.
 *   Demotions, and promoting a subscribed user (which lifts the repository's member cap), are never capped.
 * Each cap is a condition the writing statement evaluates (lib/db/billing.ts), so racing creations or
 * joins never pass it. A cancelled subscription caps new actions only: nothing already owned or joined is
 * taken away.
 */
export function planQuota(config: Config): QuotaPolicy {
  return {
    repoCreate(user) {
      return {
        when: repoCapCondition(user.userId, config.planFreeRepos),
        refusal: {
          code: 'quota_repos',
          message: `repository limit reached for your plan (${config.planFreeRepos})`,
          limit: config.planFreeRepos,
          upgradeUrl: config.billingUpgradeUrl,
        },
      };
    },
    promote(userId) {
      return {
        when: repoCapCondition(userId, config.planFreeRepos),
        refusal: {
          code: 'quota_repos',
          message: `repository limit reached for the new owner's plan (${config.planFreeRepos})`,
          limit: config.planFreeRepos,
          upgradeUrl: config.billingUpgradeUrl,
        },
      };
    },
    join(repoId) {
      return {
        when: memberCapCondition(repoId, config.planFreeMembers),
        refusal: {
          code: 'quota_members',
          message: `member limit reached for this repository's plan (${config.planFreeMembers})`,
          limit: config.planFreeMembers,
          upgradeUrl: config.billingUpgradeUrl,
        },
      };
    },
  };
}

/** The quota of a build: plan caps when hosted (SERVICE_HOSTED=1 on Node, always on Workers), else none. */
export function quotaFor(config: Config): QuotaPolicy {
  return config.hosted ? planQuota(config) : unlimitedQuota;
}
