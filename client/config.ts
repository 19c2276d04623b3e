/**
 * User-level settings (docs/cli.md "Every command", the files):
 *  - `config.json`: defaults only: `server_url`, and `repo`, the repository of folders not linked to one
 *    (the current repository belongs to the project folder, `.kr/state.json`);
 *  - `credentials.json`: `server_url`, `token`, created with mode 0600 (readable only by its owner).
 * Both live in `$XDG_CONFIG_HOME/kr/` when XDG_CONFIG_HOME is set to an absolute path, else in
 * `~/.config/kr/` (HOME is respected). The credentials file's URL wins over the config's, so a token is
 * only ever sent to the server it was issued for.
 */
import { chmod, mkdir, readFile, rename, stat, writeFile, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { CliError, refused, usageError } from './errors.ts';
import { Api } from './api.ts';
import { warn } from './output.ts';
import { checkRepoId, requestTimeout } from './options.ts';

// The command line's own checks live in options.ts (no zod: `kr --version` and `kr --help` load only that).
export { checkRepoId, repoIdProblem, requestTimeout, setRequestTimeout } from './options.ts';

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'kr');
  return join(homedir(), '.config', 'kr');
}

export const configPath = (): string => join(configDir(), 'config.json');
export const credentialsPath = (): string => join(configDir(), 'credentials.json');

const ConfigFile = z.object({ server_url: z.string().optional(), repo: z.string().optional() }).passthrough();
export type ConfigFile = z.infer<typeof ConfigFile>;

const CredentialsFile = z
  .object({
    server_url: z.string({ error: '"server_url" is not a string' }).optional(),
    token: z.string({ error: 'no "token" in the file' }).min(1, 'the "token" is empty'),
  })
  .passthrough();
export type CredentialsFile = z.infer<typeof CredentialsFile>;

const errnoOf = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | null)?.code;
const reasonOf = (e: unknown): string => {
  const code = errnoOf(e);
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'EISDIR') return 'it is a directory';
  return e instanceof Error ? e.message : String(e);
};

/** Writes JSON through a temporary file and a rename, so a crash never leaves half a file. */
export async function writeJsonAtomic(path: string, value: unknown, mode = 0o644): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
  try {
    await writeFile(tmp, JSON.stringify(value, null, 2) + '\n', { mode, flag: 'wx' });
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

export async function loadConfig(): Promise<ConfigFile> {
  const path = configPath();
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') return {};
    throw refused(`cannot read config file ${path}: ${reasonOf(e)}`);
  }
  try {
    const parsed = ConfigFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error('expected {"server_url"?: string, "repo"?: string}');
    return parsed.data;
  } catch (e) {
    throw refused(`cannot read config file ${path}: ${reasonOf(e)}`);
  }
}

export async function saveConfig(update: Partial<ConfigFile>): Promise<ConfigFile> {
  const next = { ...(await loadConfig()), ...update };
  await writeJsonAtomic(configPath(), next, 0o644);
  return next;
}

/**
 * The credentials, or a clear refusal: a missing file means "not logged in", any other failure (permission,
 * not JSON, no token) means "unreadable". A file others can read is used, with a warning.
 */
export async function loadCredentials(): Promise<CredentialsFile> {
  const path = credentialsPath();
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if (errnoOf(e) === 'ENOENT') {
      throw refused(`not logged in: no credentials file at ${path} (run "kr login")`, 'not_logged_in');
    }
    throw refused(`cannot read credentials file ${path}: ${reasonOf(e)} (run "kr login" again)`);
  }
  let creds: CredentialsFile;
  try {
    const parsed = CredentialsFile.safeParse(JSON.parse(text));
    if (!parsed.success) throw new Error(parsed.error.issues[0]?.message ?? 'unexpected content');
    creds = parsed.data;
  } catch (e) {
    throw refused(`cannot read credentials file ${path}: ${reasonOf(e)} (run "kr login" again)`);
  }
  try {
    const st = await stat(path);
    if (process.platform !== 'win32' && (st.mode & 0o077) !== 0) {
      warn(`${path} is readable by other users; run: chmod 600 ${path}`);
    }
  } catch {
    // stat after a successful read: nothing useful to add
  }
  return creds;
}

export async function saveCredentials(creds: CredentialsFile): Promise<void> {
  await writeJsonAtomic(credentialsPath(), creds, 0o600);
}

/**
 * A server URL as typed → its normalised base (`http(s)://host[:port][/prefix]`, no trailing slash). A URL
 * without a scheme (`localhost:8080`, `10.0.0.5:8080/kr`) means `http://`.
 */
export function normaliseServerUrl(raw: string): string {
  let url: URL;
  const typed = raw.trim();
  try {
    url = new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(typed) ? typed : `http://${typed}`);
  } catch {
    throw usageError(`not a URL: ${raw} (expected e.g. https://kr.example.com)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw usageError(`unsupported URL scheme ${url.protocol} (expected http or https)`);
  }
  if (url.username || url.password) throw usageError('the server URL must not carry a user name or password');
  if (url.search || url.hash) throw usageError('the server URL must not carry a query or fragment');
  return url.toString().replace(/\/+$/, '');
}

export interface Session {
  api: Api;
  serverUrl: string;
  /** Where the URL came from. */
  serverFrom: 'credentials' | 'config';
  config: ConfigFile;
}

/** Every request's time limit, from the global `--timeout <seconds>` (set before a command runs). */
/** Credentials + server URL, or a refusal: what every command that talks to the server starts with. */
export async function connect(): Promise<Session> {
  const creds = await loadCredentials();
  const config = await loadConfig();
  const serverUrl = creds.server_url || config.server_url;
  if (!serverUrl) {
    throw refused('no server URL set: run "kr remote set <url>" or "kr login --server <url>"', 'no_server');
  }
  let base: string;
  try {
    base = normaliseServerUrl(serverUrl);
  } catch (e) {
    throw refused(`invalid server URL ${serverUrl} in ${creds.server_url ? credentialsPath() : configPath()}: ${(e as Error).message}`);
  }
  return {
    api: new Api({ baseUrl: base, token: creds.token, timeoutMs: requestTimeout() }),
    serverUrl: base,
    serverFrom: creds.server_url ? 'credentials' : 'config',
    config,
  };
}

/** Where the repository of a command comes from. */
export type RepoSource = 'flag' | 'project' | 'default';

/** The part of a project folder the repository rule reads (client/project.ts Project). */
export interface LinkedFolder {
  state: { repo?: string };
  krDir: string;
}

/**
 * The repository a command works on: `--repo`, else the one the project folder is linked to
 * (`.kr/state.json`), else the global default (`repo` in config.json: still read, so a configuration
 * from before folders carried their repository keeps working). null when none applies.
 */
export function currentRepo(config: ConfigFile, flag: string | undefined, project: LinkedFolder | null): { id: string; from: RepoSource } | null {
  if (flag !== undefined) return { id: checkRepoId(flag), from: 'flag' };
  if (project?.state.repo) return { id: checkRepoId(project.state.repo, join(project.krDir, 'state.json')), from: 'project' };
  if (config.repo) return { id: checkRepoId(config.repo, configPath()), from: 'default' };
  return null;
}

/** {@link currentRepo}, or a refusal that says how to name one. */
export function repoOf(session: Session, flag: string | undefined, project: LinkedFolder | null = null): string {
  const found = currentRepo(session.config, flag, project);
  if (found) return found.id;
  throw refused(
    project
      ? `no repository for this folder: run "kr init --repo <id>" here (it links the folder), or pass --repo <id>; "kr repos" lists yours`
      : `no repository: pass --repo <id>, or work in a project folder linked to one ("kr init --repo <id>"); "kr repos" lists yours`,
    'no_repo',
  );
}

export { CliError };
