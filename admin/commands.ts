/**
 * The admin commands themselves. Each takes the opened target and returns what to print: `text` for a
 * person (stdout), `json` for a script (--json), and an optional `note` that only a person sees (stderr,
 * so that `token` prints nothing but the token on stdout).
 *
 * Names, emails and issuers come from identity providers, labels and ids from users: every such value is
 * passed through `clean` before it reaches `text` or `note`, so that control characters (an escape
 * sequence retitling the terminal, a newline forging a row) are shown as `?`. `json` carries them as they
 * are, escaped by JSON (admin/main.ts).
 */
import { clean } from '../client/output.ts';
import { ADMIN_ISSUER, type User } from '../lib/db/users.ts';
import { isSafeRepoId } from '../lib/core/page/path.ts';
import { AdminError, type AdminContext } from './context.ts';

export interface Output {
  text: string;
  json: unknown;
  note?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
// An address as people type them: RFC 5322 atoms in the local part, host-name labels in the domain.
const EMAIL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** The email, lowercased; AdminError when it is not an address. */
export function checkEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) throw new AdminError(`invalid email: ${JSON.stringify(raw)}`);
  return email;
}

/** RFC 3339 UTC, whole seconds (as the API writes times). */
export const utc = (seconds: number): string => new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Rows in columns two spaces apart, every cell cleaned; the last column is not padded. */
function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows.map((r) => r.map(clean))];
  const width = header.map((_, c) => Math.max(...all.map((r) => [...(r[c] ?? '')].length)));
  return all
    .map((r) => r.map((cell, c) => (c === r.length - 1 ? cell : cell.padEnd(width[c]!))).join('  '))
    .join('\n');
}

/**
 * The user an argument names: a user id, or an email (any case). Several accounts may share an email
 * (one per identity provider, and one made here): then the id must be given.
 */
async function findUser(ctx: AdminContext, arg: string): Promise<User> {
  if (UUID.test(arg)) {
    const user = await ctx.users.byId(arg.toLowerCase());
    if (!user) throw new AdminError(`no user with id ${arg}`);
    return user;
  }
  const email = arg.trim().toLowerCase();
  const found = await ctx.users.byEmail(email);
  if (found.length === 0) throw new AdminError(`no user with email ${clean(email)} (see: user list)`);
  if (found.length > 1) {
    const which = found.map((u) => `${u.id} (${clean(u.issuer)})`).join(', ');
    throw new AdminError(`several accounts have the email ${clean(email)}: ${which}; give the user id instead`);
  }
  return found[0]!;
}

const userJson = (u: User) => ({
  id: u.id,
  email: u.email,
  name: u.name,
  issuer: u.issuer,
  created_at: u.created_at,
  ...(u.disabled_at !== undefined ? { disabled_at: u.disabled_at } : {}),
});

// --- users ------------------------------------------------------------------------------------------------

/**
 * `user add <email> [--name]`: a user of the admin issuer, subject the lowercased email. Refused when any
 * account (of any issuer) already has the email. The very first user of the service adopts every
 * repository that has no owner, exactly as the first sign-in through the identity provider does.
 */
export async function userAdd(ctx: AdminContext, rawEmail: string, opts: { name?: string }): Promise<Output> {
  const email = checkEmail(rawEmail);
  const name = opts.name ?? '';
  // Only needed while no user exists; whether this is the first user is decided again inside the batch.
  const repoIds = (await ctx.users.any()) ? [] : await ctx.repos.list();
  const res = await ctx.users.addUnlessEmailTaken({ issuer: ADMIN_ISSUER, subject: email, email, name }, repoIds, ctx.members);
  if (!res.created) {
    const u = res.existing;
    throw new AdminError(`user ${email} already exists (id ${u.id}, issuer ${clean(u.issuer)})`);
  }
  const { user, adopted } = res;
  const lines = [`added ${user.email}${user.name ? ` (${clean(user.name)})` : ''}, user id ${user.id}`];
  if (adopted.length > 0) lines.push(`first user: now owner of ${adopted.length} ownerless repositor${adopted.length === 1 ? 'y' : 'ies'}: ${adopted.join(', ')}`);
  return { text: lines.join('\n'), json: { id: user.id, email: user.email, name: user.name } };
}

/** `user list`: every user, oldest first. */
export async function userList(ctx: AdminContext): Promise<Output> {
  const users = await ctx.users.list();
  const text =
    users.length === 0
      ? 'no users'
      : table(
          ['EMAIL', 'NAME', 'ISSUER', 'STATUS', 'CREATED', 'ID'],
          users.map((u) => [u.email, u.name || '-', u.issuer, u.disabled_at === undefined ? 'active' : 'disabled', utc(u.created_at), u.id]),
        );
  return { text, json: { users: users.map(userJson) } };
}

/** `user disable <user>`: every session and PAT of the user is refused from the next request on. */
export async function userDisable(ctx: AdminContext, arg: string): Promise<Output> {
  const user = await findUser(ctx, arg);
  const after = await ctx.users.setDisabled(user.id, Math.floor(ctx.clock.now() / 1000));
  if (!after?.disabled_at) throw new AdminError(`no user with id ${user.id}`);
  const json = { id: after.id, email: after.email, disabled_at: after.disabled_at };
  if (user.disabled_at !== undefined) return { text: `${clean(after.email)} was already disabled (since ${utc(after.disabled_at)})`, json };
  return { text: `disabled ${clean(after.email)}: their sessions and access tokens no longer work, and they cannot sign in`, json };
}

/** `user enable <user>`: undoes `disable`; the user's unexpired sessions and PATs work again. */
export async function userEnable(ctx: AdminContext, arg: string): Promise<Output> {
  const user = await findUser(ctx, arg);
  const after = await ctx.users.setDisabled(user.id, null);
  if (!after) throw new AdminError(`no user with id ${user.id}`);
  const json = { id: after.id, email: after.email };
  if (user.disabled_at === undefined) return { text: `${clean(after.email)} is not disabled`, json };
  return { text: `enabled ${clean(after.email)}`, json };
}

// --- tokens -----------------------------------------------------------------------------------------------

/** `token <user> [--label] [--days]`: a PAT minted exactly as `POST /v1/pats` mints one, shown once. */
export async function token(ctx: AdminContext, arg: string, opts: { label?: string; days?: number }): Promise<Output> {
  const user = await findUser(ctx, arg);
  if (user.disabled_at !== undefined) throw new AdminError(`${clean(user.email)} is disabled (user enable ${clean(user.email)} first)`);
  const { pat, token } = await ctx.pats.create(user.id, {
    label: opts.label ?? 'admin',
    ...(opts.days !== undefined ? { expiresInDays: opts.days } : {}),
  });
  const expiry = pat.expires_at !== undefined ? `expires ${utc(pat.expires_at)}` : 'does not expire';
  return {
    text: token,
    json: { token, ...(pat.expires_at !== undefined ? { expires_at: pat.expires_at } : {}) },
    note: `personal access token for ${clean(user.email)} (label ${clean(JSON.stringify(pat.label))}, ${expiry}); it is shown only this once`,
  };
}

// --- repositories -----------------------------------------------------------------------------------------

/** The exact repository id, or AdminError naming the case variant that exists instead. */
async function existingRepo(ctx: AdminContext, repo: string): Promise<string> {
  if (!isSafeRepoId(repo)) throw new AdminError(`invalid repo id: ${JSON.stringify(repo)} (1 to 64 of A-Z a-z 0-9 _ -)`);
  if (await ctx.repos.exists(repo)) return repo;
  const variant = await ctx.repos.caseVariant(repo);
  if (variant !== null) throw new AdminError(`repository ${repo} not found; ${variant} exists (ids are exact: use ${variant})`);
  throw new AdminError(`repository ${repo} not found (see: repo list)`);
}

/**
 * `repo owner <repo> <user>`: makes the user an owner: a new row, or a member promoted. Besides the very
 * first user's adoption, the only way an ownerless repository gets an owner.
 */
export async function repoOwner(ctx: AdminContext, repoArg: string, arg: string): Promise<Output> {
  const repo = await existingRepo(ctx, repoArg);
  const user = await findUser(ctx, arg);
  if (user.disabled_at !== undefined) throw new AdminError(`${clean(user.email)} is disabled (user enable ${clean(user.email)} first)`);
  const before = await ctx.members.makeOwner(repo, user.id);
  const json = { repo, user_id: user.id, email: user.email, role: 'owner', ...(before !== null ? { previous_role: before } : {}) };
  const text =
    before === 'owner'
      ? `${clean(user.email)} is already an owner of ${repo}`
      : `${clean(user.email)} is now an owner of ${repo}${before === 'member' ? ' (was a member)' : ''}`;
  return { text, json };
}

/**
 * `repo list`: every repository, its owners' emails, its member count (owners included), its pages at head.
 * Against a deployed Worker the page counts are unknown (null, `?`): they live in Durable Objects.
 */
export async function repoList(ctx: AdminContext): Promise<Output> {
  const repos = [];
  for (const id of await ctx.repos.list()) {
    const members = await ctx.members.list(id);
    repos.push({
      id,
      owners: members.filter((m) => m.role === 'owner').map((m) => m.email),
      members: members.length,
      page_count: await ctx.repos.pageCount(id),
    });
  }
  const text =
    repos.length === 0
      ? 'no repositories'
      : table(
          ['ID', 'OWNERS', 'MEMBERS', 'PAGES'],
          repos.map((r) => [r.id, r.owners.length > 0 ? r.owners.join(',') : '(none)', String(r.members), r.page_count === null ? '?' : String(r.page_count)]),
        );
  const unknown = repos.some((r) => r.page_count === null);
  return {
    text,
    json: { repos },
    ...(unknown
      ? { note: "PAGES ?: a repository's pages live in its Durable Object, which only the deployed Worker reads (GET /v1/admin/repos lists them)" }
      : {}),
  };
}
