/** `kr repos`, `kr invite`, `kr join`, `kr members`, `kr pats`. */
import { REPO_ID_PATTERN } from '../../lib/core/page/path.ts';
import { checkRepoId, configPath, connect, currentRepo, repoIdProblem, repoOf, saveConfig, saveCredentials } from '../../client/config.ts';
import { CliError, refused, usageError } from '../../client/errors.ts';
import { ApiError } from '../../client/api.ts';
import { clean, note, out, paint, printJson, shortSha, table, utc } from '../../client/output.ts';
import { findProject } from '../../client/project.ts';
import { intOption } from './inspect.ts';
import { linkFolder } from './setup.ts';

interface Common {
  repo?: string;
  json?: boolean;
}


/**
 * A repository the user just created or joined becomes the current one where it can (the
 * current repository belongs to the project folder): inside a folder not linked yet, the folder is linked
 * to it; outside any folder it becomes the default that `kr init` links new folders to; a folder linked to
 * another repository keeps it.
 */
async function adopt(id: string): Promise<void> {
  const project = await findProject();
  if (project && (project.state.repo === undefined || project.state.repo === id)) {
    await linkFolder(project, id);
  } else if (project) {
    note(`This folder stays linked to ${project.state.repo}. For ${id}: mkdir ${id} && cd ${id} && kr init --repo ${id}`);
  } else {
    await saveConfig({ repo: id });
    out(`${id} is now your default repository (${configPath()}): "kr init" in a new project folder links the folder to it.`);
  }
}

export async function reposList(opts: Common): Promise<void> {
  const session = await connect();
  const { repos } = await session.api.repos();
  if (opts.json) return printJson({ repos });
  if (repos.length === 0) return out('No repositories yet ("kr repos create <id>" makes one).');
  const current = currentRepo(session.config, opts.repo, await findProject())?.id;
  out(
    table(
      repos.map((r) => [
        r.id === current ? `* ${r.id}` : `  ${r.id}`,
        r.role ?? '-',
        String(r.page_count),
        r.last_commit ? `${shortSha(r.last_commit.sha)} ${clean(r.last_commit.time)} ${clean(r.last_commit.email)}` : '-',
      ]),
      ['  ID', 'ROLE', 'PAGES', 'LAST COMMIT'],
    ),
  );
}

export async function reposCreate(id: string, opts: Common): Promise<void> {
  // The create route's id pattern (docs/concepts.md "Repositories").
  if (!REPO_ID_PATTERN.test(id)) throw usageError(repoIdProblem(id, 'must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}'));
  const session = await connect();
  const res = await session.api.createRepo(id);
  checkRepoId(res.id);
  if (opts.json) {
    printJson(res);
    await quietly(() => adopt(res.id));
    return;
  }
  out(`Created repository ${clean(res.id)}; you are its owner.`);
  await adopt(res.id);
}

/** Runs `fn` with stdout silenced (so --json output stays one JSON document). */
async function quietly(fn: () => Promise<void>): Promise<void> {
  const write = process.stdout.write;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    await fn();
  } finally {
    process.stdout.write = write;
  }
}

export async function inviteCreate(opts: Common & { label?: string }): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const res = await session.api.createInvite(repo, opts.label);
  if (opts.json) return printJson(res);
  const p = paint();
  out(`Invite key ${clean(res.key.id)} for ${repo}${res.key.label ? ` (${clean(res.key.label)})` : ''}, expires ${utc(res.key.expires_at)}.`);
  out(`Token (shown only this once; share it privately):`);
  out(`  ${p.bold(clean(res.token))}`);
  out(`The invitee runs: kr join ${clean(res.token)}`);
}

export async function inviteList(opts: Common): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const { keys } = await session.api.listInvites(repo);
  const now = Math.floor(Date.now() / 1000);
  const rows = keys.map((k) => ({ ...k, status: k.expires_at > now ? ('active' as const) : ('expired' as const) }));
  if (opts.json) return printJson({ keys: rows });
  if (rows.length === 0) return out('No invite keys ("kr invite create" mints one).');
  out(table(rows.map((k) => [k.id, k.label || '-', utc(k.expires_at), k.status]), ['KEY ID', 'LABEL', 'EXPIRES (UTC)', 'STATUS']));
}

export async function inviteRevoke(keyId: string, opts: Common): Promise<void> {
  if (keyId.startsWith('kri_')) {
    throw usageError('that is an invite token; revoking takes the key id (the first column of "kr invite list")');
  }
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  await session.api.revokeInvite(repo, keyId);
  if (opts.json) return printJson({ revoked: keyId });
  out(`Revoked invite key ${clean(keyId)}.`);
}

export async function join(token: string, opts: Common): Promise<void> {
  if (!token.startsWith('kri_')) throw usageError('not an invite token (invite tokens start with kri_)');
  const session = await connect(); // stops without credentials or without a server URL
  const res = await session.api.join(token).catch((e: unknown) => {
    throw memberCapRefusal(e) ?? e;
  });
  checkRepoId(res.repo_id);
  if (opts.json) {
    printJson(res);
    await quietly(() => adopt(res.repo_id));
    return;
  }
  out(`Joined ${res.repo_id} as ${clean(res.role)}.`);
  await adopt(res.repo_id);
  out(`Next: "kr init" in your project folder (if not done yet), then "kr pull".`);
}

/**
 * A join refused at the repository's member cap (402 `quota_members`), said to the joiner: the cap is the
 * owners' plan, so the upgrade link is no use to them; they are told to ask an owner, named when the server
 * says who they are. Null for any other failure.
 */
export function memberCapRefusal(e: unknown): CliError | null {
  if (!(e instanceof ApiError) || e.status !== 402 || e.body?.code !== 'quota_members') return null;
  const limit = typeof e.body.limit === 'number' ? ` (${e.body.limit})` : '';
  const owners = Array.isArray(e.body.owners) ? e.body.owners.filter((o): o is string => typeof o === 'string' && o !== '').map((o) => clean(o)) : [];
  const whom =
    owners.length === 0
      ? 'an owner'
      : owners.length <= 5
        ? `an owner (${orList(owners)})`
        : `an owner (${owners.slice(0, 5).join(', ')} or one of ${owners.length - 5} others)`;
  return refused(`this repository is at its plan's member limit${limit}; ask ${whom} to upgrade`, 'quota_members');
}

/** "a", "a or b", "a, b or c". */
function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

export async function membersList(opts: Common): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const { members } = await session.api.members(repo);
  if (opts.json) return printJson({ members });
  out(table(members.map((m) => [m.email, m.role, utc(m.added_at), m.user_id]), ['EMAIL', 'ROLE', 'JOINED (UTC)', 'USER ID']));
}

export async function membersRemove(email: string, opts: Common): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const { members } = await session.api.members(repo);
  const wanted = email.trim().toLowerCase();
  const member = members.find((m) => m.email.toLowerCase() === wanted);
  if (!member) throw refused(`${clean(email)} is not a member of ${repo}`);
  await session.api.removeMember(repo, member.user_id);
  if (opts.json) return printJson({ removed: { user_id: member.user_id, email: member.email } });
  out(`Removed ${clean(member.email)} from ${repo}. Their past commits keep their name and email.`);
}

export async function patsCreate(opts: Common & { label?: string; expiresInDays?: string; save?: boolean }): Promise<void> {
  const days = intOption('expires-in-days', opts.expiresInDays);
  if (days !== undefined && days > 366) throw usageError('--expires-in-days must be at most 366');
  const session = await connect();
  const res = await session.api.createPat({ ...(opts.label !== undefined ? { label: opts.label } : {}), ...(days ? { expires_in_days: days } : {}) });
  if (opts.save) await saveCredentials({ server_url: session.serverUrl, token: res.token });
  if (opts.json) return printJson(res);
  out(`Personal access token ${clean(res.pat.id)}${res.pat.label ? ` (${clean(res.pat.label)})` : ''}${res.pat.expires_at ? `, expires ${utc(res.pat.expires_at)}` : ', no expiry'}.`);
  if (opts.save) out('Saved as your credentials: kr now uses it.');
  else {
    out('Token (shown only this once):');
    out(`  ${clean(res.token)}`);
  }
}

export async function patsList(opts: Common): Promise<void> {
  const session = await connect();
  const { pats } = await session.api.listPats();
  if (opts.json) return printJson({ pats });
  if (pats.length === 0) return out('No personal access tokens.');
  out(
    table(
      pats.map((t) => [t.id, t.label || '-', utc(t.created_at), t.expires_at ? utc(t.expires_at) : 'never', t.last_used_at ? utc(t.last_used_at) : '-']),
      ['ID', 'LABEL', 'CREATED (UTC)', 'EXPIRES (UTC)', 'LAST USED (UTC)'],
    ),
  );
}

export async function patsRevoke(id: string, opts: Common): Promise<void> {
  if (id.startsWith('krp_')) throw usageError('that is a token; revoking takes the token id (the first column of "kr pats list")');
  const session = await connect();
  await session.api.revokePat(id);
  if (opts.json) return printJson({ revoked: id });
  out(`Revoked personal access token ${clean(id)}.`);
}
