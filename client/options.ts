/**
 * The checks every command line goes through before any command runs (cli/program.ts's preAction hook):
 * `--repo` and `--timeout`. Kept apart from config.ts, which loads the wire schemas (zod), so that
 * `kr --version` and `kr --help` start without them.
 */
import { usageError } from './errors.ts';
import { stripRepoId } from '../lib/core/page/path.ts';

/** Every request's time limit unless `--timeout` says otherwise. */
export const DEFAULT_TIMEOUT_MS = 30_000;

const REPO_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Why a repository id is refused, in words, naming what the server would make of it: the server strips an
 * id down to `[A-Za-z0-9_-]` on its legacy paths (docs/api.md "Repositories"), so `team;x` would silently be `teamx`, another
 * repository. kr never sends such an id; it names the one it would become instead.
 */
export function repoIdProblem(id: string, rule = 'letters, digits, _ and -, at most 64', from?: string): string {
  const head = `invalid repository id ${JSON.stringify(id)}${from ? ` in ${from}` : ''} (${rule})`;
  if (!/[^A-Za-z0-9_-]/.test(id)) return head;
  const stripped = stripRepoId(id);
  if (stripped !== null) return `${head}: the server would strip it to ${JSON.stringify(stripped)}, another repository; if you mean ${stripped}, give that`;
  const left = id.replace(/[^A-Za-z0-9_-]/g, '');
  return left === '' ? `${head}: nothing of it would be left once stripped to those characters` : `${head}: even with the other characters stripped it is ${left.length} characters long`;
}

/** `id`, or bad usage when the server would not take it as it is (`from`: the file it was read from). */
export function checkRepoId(id: string, from?: string): string {
  if (!REPO_ID.test(id)) throw usageError(repoIdProblem(id, undefined, from));
  return id;
}

let requestTimeoutMs = DEFAULT_TIMEOUT_MS;

/** `--timeout <seconds>`: a positive number of seconds (fractions allowed), else bad usage. */
export function setRequestTimeout(raw: string | undefined): void {
  if (raw === undefined) {
    requestTimeoutMs = DEFAULT_TIMEOUT_MS;
    return;
  }
  const n = Number(raw);
  if (!/^\s*[0-9]*\.?[0-9]+\s*$/.test(raw) || !(n > 0) || n > 86_400) {
    throw usageError(`--timeout must be a number of seconds greater than zero (at most 86400), not ${JSON.stringify(raw)}`);
  }
  requestTimeoutMs = Math.max(1, Math.round(n * 1000));
}

export const requestTimeout = (): number => requestTimeoutMs;
