import type { Context } from 'hono';
import type { Identity, UserIdentity } from '../auth/identity.ts';
import type { Role } from '../db/members.ts';
import { refuse } from '../core/errors.ts';
import { R, type Refusal } from '../core/refusals.ts';
import { roleIn } from './membership.ts';
import type { AppEnv } from '../framework/route.ts';

/**
 * Who may do what: the one place that knows the roles (docs/concepts.md "Members and roles") and what the
 * legacy key may do ("Credentials": every membership and owner check passes, but it is nobody). Handlers
 * name the action; nothing else re-implements a check.
 */

export type Action =
  // Account-scoped
  | 'limits.read'
  | 'me.read'
  | 'pat.mint'
  | 'pat.list'
  | 'pat.revoke'
  | 'repo.list'
  | 'repo.create' // POST /v1/repos
  | 'repo.create.legacy' // POST /v1/repos/:id
  | 'repo.join'
  // Account-scoped, hosted build only: a real user's own plan
  | 'billing.read'
  | 'billing.checkout'
  // Hosted build only: users whose email is in SERVICE_ADMIN_EMAILS
  | 'admin.read'
  | 'admin.write'
  // Repository-scoped: any member
  | 'repo.read' // pages, pull, history, timeline, diff, evolution
  | 'repo.push'
  | 'members.list'
  | 'activity.read'
  | 'events.read' // GET /v1/repos/:id/events
  | 'webhook.list'
  // Repository-scoped: owners only
  | 'invite.mint'
  | 'invite.list'
  | 'invite.revoke'
  | 'member.remove'
  | 'member.role'
  | 'repo.export'
  | 'repo.import' // an existing repository only; a missing one is created by the import (lib/usecases/open-repo.ts)
  | 'repo.delete'
  | 'webhook.manage'; // create, delete, test, deliveries

export type Decision = { allow: true } | { allow: false; refusal: Refusal };

const ALLOW: Decision = { allow: true };
const deny = (refusal: Refusal): Decision => ({ allow: false, refusal });

const SESSION_REQUIRED = deny(R.session_required);
const USER_REQUIRED = deny(R.user_session_required);
const NOT_MEMBER = deny(R.not_a_member);
const ADMIN_ONLY = deny(R.admin_only);

/** Actions for the service's admins only: a named person, so never the legacy key. */
export const ADMIN_ACTIONS: ReadonlySet<Action> = new Set<Action>(['admin.read', 'admin.write']);

/** Whether a user's email is in the admin list (SERVICE_ADMIN_EMAILS, lowercased), ignoring case. */
export const isAdmin = (email: string, admins: readonly string[]): boolean => admins.includes(email.toLowerCase());

/** Actions that need the caller's role in the repository. */
export const REPO_SCOPED: ReadonlySet<Action> = new Set<Action>([
  'repo.read',
  'repo.push',
  'members.list',
  'activity.read',
  'invite.mint',
  'invite.list',
  'invite.revoke',
  'member.remove',
  'member.role',
  'repo.export',
  'repo.import',
  'repo.delete',
  'events.read',
  'webhook.list',
  'webhook.manage',
]);

const OWNER_ONLY: Partial<Record<Action, Refusal>> = {
  'invite.mint': R.owner_only_invites,
  'invite.list': R.owner_only_invites,
  'invite.revoke': R.owner_only_invites,
  'member.remove': R.owner_only_remove,
  'repo.export': R.owner_only_export,
  'repo.import': R.owner_only_import,
  'member.role': R.owner_only_roles,
  'repo.delete': R.owner_only_delete,
  'webhook.manage': R.owner_only_webhooks,
};

/** Under the legacy key: the shared admin passes every membership and owner check, but has no user. */
const LEGACY_TABLE: Record<Action, Decision> = {
  'limits.read': ALLOW,
  'me.read': SESSION_REQUIRED,
  'pat.mint': USER_REQUIRED,
  'pat.list': USER_REQUIRED,
  'pat.revoke': USER_REQUIRED,
  'repo.list': ALLOW,
  'repo.create': USER_REQUIRED,
  'repo.create.legacy': ALLOW,
  'repo.join': USER_REQUIRED,
  'billing.read': USER_REQUIRED,
  'billing.checkout': USER_REQUIRED,
  'admin.read': ADMIN_ONLY,
  'admin.write': ADMIN_ONLY,
  'repo.read': ALLOW,
  'repo.push': ALLOW,
  'members.list': ALLOW,
  'activity.read': ALLOW,
  'invite.mint': USER_REQUIRED,
  'invite.list': ALLOW,
  'invite.revoke': ALLOW,
  'member.remove': ALLOW,
  'member.role': ALLOW,
  'repo.export': ALLOW,
  'repo.import': ALLOW,
  'repo.delete': ALLOW,
  'events.read': ALLOW,
  'webhook.list': ALLOW,
  'webhook.manage': ALLOW,
};

/**
 * The decision for an identity, an action and — for repository-scoped actions — the caller's role in
 * that repository (null = not a member, or the repository does not exist). Admin actions need the admin
 * list (config.adminEmails); without it nobody is an admin.
 */
export function decide(identity: Identity, action: Action, role: Role | null = null, admins: readonly string[] = []): Decision {
  if (identity.kind === 'legacy') return LEGACY_TABLE[action];
  if (ADMIN_ACTIONS.has(action)) return isAdmin(identity.email, admins) ? ALLOW : ADMIN_ONLY;
  if (!REPO_SCOPED.has(action)) return ALLOW;
  if (role === null) return NOT_MEMBER;
  const ownerOnly = OWNER_ONLY[action];
  if (ownerOnly && role !== 'owner') return deny(ownerOnly);
  return ALLOW;
}

/** The identity the auth middleware resolved; 401 if none (the middleware normally answered already). */
export function identityOf(c: Context<AppEnv>): Identity {
  const id = c.get('identity');
  if (!id) throw refuse(R.missing_authorization);
  return id;
}

/** Throws the decision's HttpError unless the identity may perform an account-scoped action. */
export function authorize(c: Context<AppEnv>, action: Action): Identity {
  if (REPO_SCOPED.has(action)) throw new Error(`${action} is repository-scoped: use authorizeRepo`);
  const identity = identityOf(c);
  const admins = ADMIN_ACTIONS.has(action) ? c.get('deps').config.adminEmails : [];
  const d = decide(identity, action, null, admins);
  if (!d.allow) throw refuse(d.refusal);
  return identity;
}

/** As authorize, for actions that need a real user; returns it typed. */
export function authorizeUser(c: Context<AppEnv>, action: Action): UserIdentity {
  const identity = authorize(c, action);
  if (identity.kind !== 'user') throw refuse(R.user_session_required);
  return identity;
}

/**
 * Looks up the caller's role in `repoId` and throws unless the action is allowed. Returns the identity
 * and the role (null under the legacy key).
 */
export async function authorizeRepo(
  c: Context<AppEnv>,
  action: Action,
  repoId: string,
): Promise<{ identity: Identity; role: Role | null }> {
  const identity = identityOf(c);
  const role = identity.kind === 'user' ? await roleIn(c.get('deps'), repoId, identity.userId) : null;
  const d = decide(identity, action, role);
  if (!d.allow) throw refuse(d.refusal);
  return { identity, role };
}
