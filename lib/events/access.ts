import type { Deps } from '../framework/deps.ts';
import { resolveToken } from '../auth/resolve.ts';
import { HttpError } from '../core/errors.ts';
import { CREDENTIAL_LOST, type LostCredentials } from './hub.ts';
import type { StreamGrant } from './stream.ts';

/**
 * Whether an open event stream's caller may still read its repository (docs/api.md "Live events"): its token is
 * resolved again as on any request — a revoked or expired PAT, an expired session, a disabled or deleted user
 * all fail — and a user must still be a member. Asked at each ping, on both builds (on Workers the
 * repository's Durable Object asks D1, where accounts, tokens and membership live).
 */

export const MEMBERSHIP_LOST = 'no longer a member of this repo';

export type AccessDeps = Pick<Deps, 'config' | 'clock' | 'users' | 'pats' | 'members'>;

/** Why `grant` may no longer read `repoId`, or null while it may. Other failures (the database) throw. */
export async function accessLost(deps: AccessDeps, repoId: string, grant: StreamGrant): Promise<string | null> {
  if (grant.token === null) return null;
  let identity;
  try {
    identity = await resolveToken(deps, grant.token);
  } catch (e) {
    if (e instanceof HttpError && e.status === 401) return CREDENTIAL_LOST;
    throw e;
  }
  if (identity.kind !== 'user') return null;
  if (grant.userId !== null && identity.userId !== grant.userId) return CREDENTIAL_LOST;
  return (await deps.members.roleOf(repoId, identity.userId)) === null ? MEMBERSHIP_LOST : null;
}

/**
 * Which of the users and PATs of open streams may no longer read anything: the users disabled or deleted,
 * the PATs revoked (directly, by cascade, or by the admin command in another process). Two lookups by id,
 * cheap enough for the hub to ask every second, so that such streams end within 2 s even when nothing told
 * this process (docs/api.md "Live events").
 */
export async function credentialsLost(
  deps: Pick<AccessDeps, 'users' | 'pats'>,
  users: readonly string[],
  pats: readonly string[],
): Promise<LostCredentials> {
  const active = users.length > 0 ? await deps.users.activeIds(users) : new Set<string>();
  const stored = pats.length > 0 ? await deps.pats.existingIds(pats) : new Set<string>();
  return { users: new Set(users.filter((u) => !active.has(u))), pats: new Set(pats.filter((p) => !stored.has(p))) };
}
