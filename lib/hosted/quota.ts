import type { Clock } from '../clock.ts';
import type { Config } from '../config.ts';
import type { Database } from '../db/database.ts';
import { Billing } from '../db/billing.ts';
import { unlimitedQuota, type QuotaPolicy } from '../quota.ts';

/**
 * The hosted build's plan caps (SPEC.md "Errors" 402, API.md "Hosted build only"):
 * - creating a repository: a user who is not subscribed may own at most SERVICE_PLAN_FREE_REPOS; the
 *   legacy key owns nothing and is never capped;
 * - a first join: a repository none of whose owners is subscribed holds at most SERVICE_PLAN_FREE_MEMBERS
 *   members, owners included. The cap is the owners' plan, never the joiner's; re-joins never get here
 *   (lib/membership.ts asks only for first joins).
 * A cancelled subscription caps new actions only: nothing already owned or joined is taken away.
 */
export function planQuota(deps: { config: Config; db: Database; clock: Clock }): QuotaPolicy {
  const { config } = deps;
  const billing = new Billing(deps.db, deps.clock);
  return {
    async checkRepoCreate(identity) {
      if (identity.kind !== 'user') return null;
      const { subscribed, reposOwned } = await billing.planUsage(identity.userId);
      if (subscribed || reposOwned < config.planFreeRepos) return null;
      return {
        code: 'quota_repos',
        message: `repository limit reached for your plan (${config.planFreeRepos})`,
        limit: config.planFreeRepos,
        upgradeUrl: config.billingUpgradeUrl,
      };
    },
    async checkJoin(repoId) {
      const { ownerSubscribed, members } = await billing.repoUsage(repoId);
      if (ownerSubscribed || members < config.planFreeMembers) return null;
      return {
        code: 'quota_members',
        message: `member limit reached for this repository's plan (${config.planFreeMembers})`,
        limit: config.planFreeMembers,
        upgradeUrl: config.billingUpgradeUrl,
      };
    },
  };
}

/** The quota of a build: plan caps when hosted (SERVICE_HOSTED=1 on Node, always on Workers), else none. */
export function quotaFor(deps: { config: Config; db: Database; clock: Clock }): QuotaPolicy {
  return deps.config.hosted ? planQuota(deps) : unlimitedQuota;
}
