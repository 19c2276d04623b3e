import type { Identity, UserIdentity } from './auth/identity.ts';
import { HttpError } from './http/errors.ts';

/**
 * The quota seam. Repository creation (all three paths) and joining ask it first; the self-hosted build
 * plugs in `unlimitedQuota`, the hosted build its plan caps. A refusal is a 402 with SPEC.md's body and
 * is raised before anything is written.
 */
export interface QuotaRefusal {
  code: 'quota_repos' | 'quota_members';
  message: string;
  limit: number;
  upgradeUrl: string;
}

export interface QuotaPolicy {
  /** May this identity create one more repository? */
  checkRepoCreate(identity: Identity): Promise<QuotaRefusal | null>;
  /** May this user join this repository (a first join; re-joins never count)? */
  checkJoin(repoId: string, user: UserIdentity): Promise<QuotaRefusal | null>;
}

export const unlimitedQuota: QuotaPolicy = {
  checkRepoCreate: async () => null,
  checkJoin: async () => null,
};

export function quotaError(r: QuotaRefusal): HttpError {
  return new HttpError(402, r.message, { code: r.code, limit: r.limit, upgrade_url: r.upgradeUrl });
}
