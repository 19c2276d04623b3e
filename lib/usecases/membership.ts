import type { Identity, UserIdentity } from '../auth/identity.ts';
import type { Role } from '../db/members.ts';
import type { Deps } from '../framework/deps.ts';
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { quotaError } from './quota.ts';
import type { MemberChange } from '../../schema/wire/events.ts';

/**
 * Joining and leaving: redeeming an invite key, removing a member, changing a member's role. The role rules of
 * docs/concepts.md "Members and roles" and "Invite keys" live here; who may call them is lib/usecases/policy.ts's business.
 */

/**
 * Who made a change, as the activity feed names them: a real user, or null for the legacy key. Each change a
 * real user makes is recorded as a `member` row of the feed in the batch that makes it (the legacy key's
 * never are), and announced as a live `member` event once made.
 */
const actorOf = (identity: Identity): { userId: string; email: string } | null =>
  identity.kind === 'user' ? { userId: identity.userId, email: identity.email } : null;

/**
 * Redeems an invite key: the caller becomes a member, or keeps the role they have (idempotent; an owner
 * stays owner). Unknown or revoked → 404, expired → 410; a key minted before the caller was removed from
 * the repository → 403. A first join is within the quota policy's cap, or 402 (naming the repository's
 * owners) and nothing written.
 */
export async function redeemInvite(deps: Deps, user: UserIdentity, token: string): Promise<{ repoId: string; role: Role }> {
  const found = await deps.invites.find(token);
  if (!found || !(await deps.repos.exists(found.repoId))) throw refuse(R.invite_key_not_recognized);
  if (found.expired) throw refuse(R.invite_key_expired);
  const current = await deps.members.roleOf(found.repoId, user.userId);
  if (current) return { repoId: found.repoId, role: current };
  // A removed member stays removed: only a key minted after the removal readmits them.
  if (await deps.invites.excludes(found.key.id, user.userId)) throw refuse(R.removed_from_repo);
  const cap = deps.quota.join(found.repoId);
  const record = deps.activity.memberRecord(found.repoId, actorOf(user), { user_id: user.userId, email: user.email, change: 'joined', role: 'member' });
  // With a cap, it is checked by the insert itself: racing first joins never pass it together.
  const joined = cap
    ? await deps.members.addIf(found.repoId, user.userId, 'member', cap.when, record)
    : await deps.members.add(found.repoId, user.userId, 'member', record);
  if (!joined) {
    // The cap is the owners' plan: the joiner is told whom to ask (the upgrade link is of no use to them).
    const owners = (await deps.members.list(found.repoId)).filter((m) => m.role === 'owner').map((m) => m.email);
    throw quotaError({ ...cap!.refusal, owners });
  }
  if (joined.added) await announceMember(deps, found.repoId, { userId: user.userId, email: user.email }, 'joined', joined.role);
  return { repoId: found.repoId, role: joined.role };
}

/**
 * The user's role in a repository. A repository that has no owner at all but names this user as its
 * creator (a crash came between creating it and recording its owner) is claimed by them here.
 */
export async function roleIn(deps: Pick<Deps, 'members' | 'repos'>, repoId: string, userId: string): Promise<Role | null> {
  const role = await deps.members.roleOf(repoId, userId);
  if (role !== null) return role;
  if (!(await deps.repos.exists(repoId)) || (await deps.repos.creatorOf(repoId)) !== userId) return null;
  // Atomic: claims only while the repository has no owner. Then the role as it stands now — the
  // request that created the repository may have recorded its owner a moment ago.
  await deps.members.claimIfOwnerless(repoId, userId);
  return deps.members.roleOf(repoId, userId);
}

/**
 * Removes a member (`actor`: who asked): 404 when the target is not one, 409 for the last owner. The
 * `member` event that follows ends the removed user's event streams of the repository at once.
 */
export async function removeMember(deps: Deps, actor: Identity, repoId: string, userId: string): Promise<void> {
  const user = await deps.users.byId(userId);
  const record = deps.activity.memberRecord(repoId, actorOf(actor), { user_id: userId, email: user?.email ?? '', change: 'removed' });
  const result = await deps.members.remove(repoId, userId, record);
  if (result === 'not_member') throw refuse(R.member_not_found);
  if (result === 'last_owner') throw refuse(R.last_owner);
  await announceMember(deps, repoId, { userId, email: user?.email ?? '' }, 'removed');
}

/**
 * The `member` event of a membership change that has been made (docs/api.md "Live events"): `joined` (with the
 * role held), `removed`, or `role` (with the new role; for the route that changes roles). The change stands
 * whatever happens here: an event that cannot be recorded is logged, not answered as a failure.
 */
export async function announceMember(
  deps: Pick<Deps, 'live' | 'log'>,
  repoId: string,
  user: { userId: string; email: string },
  change: MemberChange,
  role?: Role,
): Promise<void> {
  try {
    await deps.live.member(repoId, {
      repo_id: repoId,
      user_id: user.userId,
      email: user.email,
      change,
      ...(role !== undefined && change !== 'removed' ? { role } : {}),
    });
  } catch (e) {
    deps.log.warn('member_event', { repo: repoId, user: user.userId, change, error: e instanceof Error ? e.message : String(e) });
  }
}

/**
 * Gives a member the role `role` (docs/api.md "Members and invite keys", the role route): 404 when the target
 * is not a member, 409 when it would demote the last owner, and on the hosted build 402 when it would make
 * an owner of a user at their plan's repository cap (lib/hosted/quota.ts). Giving the role they have changes
 * nothing and is answered the same. Atomic (lib/db/members.ts setRole): owners demoting each other at once
 * never leave the repository without one.
 */
export async function changeRole(
  deps: Deps,
  /** Who asked: the activity row's actor. */
  actor: Identity,
  repoId: string,
  userId: string,
  role: Role,
): Promise<{ user_id: string; email: string; role: Role }> {
  const cap = role === 'owner' ? deps.quota.promote(userId) : null;
  // The member's email for the activity row, read first: the row goes in with the change itself.
  const user = actor.kind === 'user' ? await deps.users.byId(userId) : null;
  const record = deps.activity.memberRecord(repoId, actorOf(actor), { user_id: userId, email: user?.email ?? '', change: 'role', role });
  const result = await deps.members.setRole(repoId, userId, role, cap?.when ?? null, record);
  switch (result.outcome) {
    case 'not_member':
      throw refuse(R.member_not_found);
    case 'last_owner':
      throw refuse(R.last_owner);
    case 'refused':
      throw quotaError(cap!.refusal);
    case 'changed': // the role moved: a `member` event follows
      await announceMember(deps, repoId, { userId, email: result.email }, 'role', role);
      return { user_id: userId, email: result.email, role };
    case 'unchanged': // the member already held it
      return { user_id: userId, email: result.email, role };
  }
}
