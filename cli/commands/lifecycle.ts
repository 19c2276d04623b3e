/**
 * `kr export`, `kr repos import`, `kr repos delete`, `kr members role`: a repository's lifecycle. Deleting asks for the
 * repository id to be typed (on a terminal or through a pipe) unless `--yes` or `--confirm <id>` says so on
 * the command line, and offers an export first: there is no undo.
 */
import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { ApiError, type Api } from '../../client/api.ts';
import { checkRepoId, configPath, connect, repoOf } from '../../client/config.ts';
import { refused, usageError } from '../../client/errors.ts';
import { clean, note, out, printJson } from '../../client/output.ts';
import { findProject } from '../../client/project.ts';

interface Common {
  repo?: string;
  json?: boolean;
}

/** The code of an export's refusal of a repository without a commit (docs/api.md "Repositories", the export route). */
const EMPTY_REPO = 'repo_empty';

/**
 * Writes the repository's git bundle to `file` (default `<repo>.bundle` here), through a temporary file
 * renamed into place; an existing file is kept unless `force`. Returns the path and the size.
 */
async function writeBundle(api: Api, repo: string, file: string | undefined, force: boolean): Promise<{ file: string; bytes: number }> {
  const target = resolve(file ?? `${repo}.bundle`);
  if (!force && existsSync(target)) throw refused(`${target} exists already: give another file (or --force to replace it)`, 'exists');
  const bundle = await api.exportRepo(repo);
  const tmp = join(dirname(target), `.${basename(target)}.${process.pid}.tmp`);
  try {
    await writeFile(tmp, bundle);
    await rename(tmp, target);
  } catch (e) {
    await rm(tmp, { force: true });
    throw refused(`cannot write ${target}: ${(e as Error).message}`);
  }
  return { file: target, bytes: bundle.byteLength };
}

/** `kr export`: the current repository (or --repo) as a git bundle file. */
export async function exportRepo(opts: Common & { output?: string; force?: boolean }): Promise<void> {
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const { file, bytes } = await writeBundle(session.api, repo, opts.output, opts.force === true);
  if (opts.json) return printJson({ repo, file, bytes });
  out(`Exported ${repo} (${bytes} bytes) to ${file}.`);
  out(`It holds every page and the whole history: git clone ${JSON.stringify(file)} ${repo}`);
}

/**
 * `kr repos import <id> <file>`: the git bundle `file` (git's own `git bundle create`, or a `kr export`)
 * becomes the history of repository `id`, a new one (you become its owner) or your empty one. The file is
 * streamed, never read whole.
 */
export async function reposImport(id: string, file: string, opts: { json?: boolean; branch?: string }): Promise<void> {
  checkRepoId(id);
  const path = resolve(file);
  let bytes: number;
  try {
    const s = await stat(path);
    if (!s.isFile()) throw new Error('not a file');
    bytes = s.size;
  } catch (e) {
    throw usageError(`cannot read ${path}: ${(e as Error).message}`);
  }
  const session = await connect();
  const body = Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>;
  const res = await session.api.importRepo(id, body, { bytes, branch: opts.branch });
  if (opts.json) return printJson(res);
  out(`Imported ${path} into ${clean(res.id)}: ${res.commits} commit${res.commits === 1 ? '' : 's'}, ${res.pages} page${res.pages === 1 ? '' : 's'} at head ${clean(res.head)}.`);
}

/** Lines read from stdin (a terminal or a pipe), one per question; null once the input has ended. */
function questions(): { ask(question: string): Promise<string | null>; close(): void } {
  const rl = createInterface({ input: process.stdin, terminal: false });
  const lines = rl[Symbol.asyncIterator]();
  return {
    async ask(question) {
      process.stderr.write(question);
      const next = await lines.next();
      if (next.done) process.stderr.write('\n');
      return next.done ? null : String(next.value);
    },
    close: () => rl.close(),
  };
}

/**
 * `kr repos delete <id>`: deletes the repository on the server, for everyone. Without --yes or --confirm,
 * offers an export first (to <id>.bundle) and asks for the id to be typed; an answer that is not the id, or
 * the end of the input, deletes nothing.
 */
export async function reposDelete(
  id: string,
  opts: { json?: boolean; yes?: boolean; confirm?: string; export?: string },
): Promise<void> {
  checkRepoId(id);
  if (opts.confirm !== undefined && opts.confirm !== id) {
    throw usageError(`--confirm must repeat the repository id exactly (${JSON.stringify(id)}), not ${JSON.stringify(opts.confirm)}`);
  }
  const session = await connect();
  const interactive = opts.yes !== true && opts.confirm === undefined;
  let exported: string | undefined;
  const exportTo = async (file: string | undefined) => {
    try {
      exported = (await writeBundle(session.api, id, file, false)).file;
      note(`Exported ${id} to ${exported}.`);
    } catch (e) {
      // Nothing to lose in a repository without a commit.
      if (!(e instanceof ApiError) || e.refusal !== EMPTY_REPO) throw e;
      note(`${id} has no commit yet: nothing to export.`);
    }
  };
  if (opts.export !== undefined) await exportTo(opts.export);
  if (interactive) {
    const q = questions();
    try {
      note(`Deleting ${id} removes its pages, its whole history, its members, invite keys and activity, for everyone. There is no undo.`);
      if (opts.export === undefined) {
        const answer = await q.ask(`Export it first to ${id}.bundle? [Y/n] `);
        if (answer === null) throw refused(`not deleted: no answer (type the id when asked, or pass --confirm ${id})`, 'not_confirmed');
        if (!/^\s*n(o)?\s*$/i.test(answer)) await exportTo(undefined);
      }
      const typed = await q.ask(`Type the repository id to delete it (${id}): `);
      if (typed === null || typed.trim() !== id) {
        throw refused(`not deleted: ${typed === null ? 'no answer' : `${JSON.stringify(clean(typed.trim()))} is not ${JSON.stringify(id)}`}`, 'not_confirmed');
      }
    } finally {
      q.close();
    }
  }
  try {
    await session.api.deleteRepo(id);
  } catch (e) {
    // The server says the same whether the repository exists or not (docs/concepts.md "Members and roles").
    if (e instanceof ApiError && e.status === 403 && e.refusal === 'not_a_member') {
      throw new ApiError(`not a member of this repo: ${id} does not exist, or you do not belong to it ("kr repos" lists yours)`, 403, e.body);
    }
    throw e;
  }
  if (opts.json) return printJson({ deleted: id, ...(exported ? { exported } : {}) });
  out(`Deleted repository ${id}: its pages, history, members, invite keys and activity are gone.`);
  const project = await findProject();
  if (project?.state.repo === id) note(`This folder is linked to ${id}: its pages stay in ${project.krDir} as they were last pulled.`);
  else if (!project && session.config.repo === id) note(`${id} was your default repository (${configPath()}): "kr remote set-repo <id>" picks another.`);
}

/** `kr members role <email> <owner|member>`: an owner gives a member another role. */
export async function membersRole(email: string, role: string, opts: Common): Promise<void> {
  if (role !== 'owner' && role !== 'member') throw usageError(`the role must be owner or member, not ${JSON.stringify(role)}`);
  const session = await connect();
  const repo = repoOf(session, opts.repo, await findProject());
  const { members } = await session.api.members(repo);
  const wanted = email.trim().toLowerCase();
  const member = members.find((m) => m.email.toLowerCase() === wanted);
  if (!member) throw refused(`${clean(email)} is not a member of ${repo}`, 'not_found');
  const res = await session.api.setRole(repo, member.user_id, role);
  if (opts.json) return printJson(res);
  const as = role === 'owner' ? 'an owner' : 'a member';
  out(member.role === role ? `${clean(res.email)} already is ${as} of ${repo}.` : `${clean(res.email)} is now ${as} of ${repo}.`);
}
