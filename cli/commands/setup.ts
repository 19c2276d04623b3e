/** `kr login`, `kr remote set|set-repo|get`, `kr init`. */
import { Api, ApiError } from '../api.ts';
import {
  checkRepoId,
  configPath,
  credentialsPath,
  loadConfig,
  loadCredentials,
  normaliseServerUrl,
  saveConfig,
  saveCredentials,
  type CredentialsFile,
} from '../config.ts';
import { CliError, usageError } from '../errors.ts';
import { initProject, KR_DIR, LAYOUT_DIRS } from '../project.ts';
import { note, out, printJson, promptSecret, readStdin, warn } from '../output.ts';
import { relative } from 'node:path';

const isLoopback = (url: string): boolean => {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '[::1]' || /^127\./.test(host);
};

async function existingCredentials(): Promise<CredentialsFile | null> {
  try {
    return await loadCredentials();
  } catch {
    return null;
  }
}

export async function login(opts: { server?: string; token?: string; json?: boolean }): Promise<void> {
  const config = await loadConfig();
  const previous = await existingCredentials();
  const raw = opts.server ?? previous?.server_url ?? config.server_url;
  if (!raw) throw usageError('no server URL: pass --server <url> (or run "kr remote set <url>" first)');
  const server = normaliseServerUrl(raw);

  let token: string;
  if (opts.token === '-') token = (await readStdin()).split('\n')[0]!.trim();
  else if (opts.token !== undefined) token = opts.token.trim();
  else if (process.stdin.isTTY) token = (await promptSecret(`Token for ${server} (input hidden): `)).trim();
  else throw usageError('no token given: pass --token <token>, or --token - to read it from stdin');
  if (token === '') throw usageError('the token is empty');

  // Verify before saving: /v1/me for a user (session or PAT), /v1/repos for the legacy shared key.
  const api = new Api({ baseUrl: server, token });
  let identity: { kind: 'user'; email: string; name: string } | { kind: 'legacy' };
  try {
    const me = await api.me();
    identity = { kind: 'user', email: me.email, name: me.name };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401 || e.message !== 'session required') {
      throw new CliError(`login failed: ${(e as Error).message}`, 1);
    }
    try {
      await api.repos();
    } catch (e2) {
      throw new CliError(`login failed: ${(e2 as Error).message}`, 1);
    }
    identity = { kind: 'legacy' };
  }
  await saveCredentials({ server_url: server, token });
  if (new URL(server).protocol === 'http:' && !isLoopback(server)) {
    warn(`${server} is plain HTTP: the token crosses the network unencrypted unless a TLS proxy fronts it (use https://)`);
  }
  if (opts.json) {
    printJson({ server_url: server, identity: identity.kind === 'user' ? { email: identity.email, name: identity.name } : 'legacy' });
    return;
  }
  if (identity.kind === 'user') out(`Logged in to ${server} as ${identity.email}.`);
  else {
    out(`Logged in to ${server} with the legacy shared key.`);
    note('Note: the shared key has no identity: joining, invites and access tokens need a user token.');
  }
  out(`Credentials saved to ${credentialsPath()} (readable only by you).`);
}

export async function remoteSet(url: string): Promise<void> {
  const server = normaliseServerUrl(url);
  await saveConfig({ server_url: server });
  out(`Server set to ${server} (in ${configPath()}).`);
  const creds = await existingCredentials();
  if (creds?.server_url && creds.server_url !== server) {
    warn(`your credentials are for ${creds.server_url}, and their URL takes precedence; run "kr login --server ${server}" to switch`);
  }
}

export async function remoteSetRepo(id: string): Promise<void> {
  checkRepoId(id);
  await saveConfig({ repo: id });
  out(`Repository set to ${id}.`);
}

export async function remoteGet(opts: { json?: boolean }): Promise<void> {
  const config = await loadConfig();
  let creds: CredentialsFile | null = null;
  let credsProblem: string | null = null;
  try {
    creds = await loadCredentials();
  } catch (e) {
    credsProblem = (e as Error).message;
  }
  const server = creds?.server_url || config.server_url || null;
  const from = creds?.server_url ? 'credentials' : config.server_url ? 'config' : null;
  if (opts.json) {
    printJson({
      server_url: server,
      server_url_from: from,
      repo: config.repo ?? null,
      logged_in: creds !== null,
      config_file: configPath(),
      credentials_file: credentialsPath(),
    });
    return;
  }
  out(`server:      ${server ?? '(not set)'}${from ? `  (from ${from === 'credentials' ? credentialsPath() : configPath()})` : ''}`);
  out(`repository:  ${config.repo ?? '(not set)'}`);
  out(`logged in:   ${creds ? 'yes' : `no (${credsProblem})`}`);
  if (creds?.server_url && config.server_url && creds.server_url !== config.server_url) {
    note(`(the config names ${config.server_url}; the credentials' URL wins)`);
  }
}

export async function init(): Promise<void> {
  const { root, created } = await initProject(process.cwd());
  const where = relative(process.cwd(), root) || '.';
  if (created) {
    out(`Initialised a kr project in ${where}/${KR_DIR}/:`);
    for (const d of Object.values(LAYOUT_DIRS)) out(`  ${KR_DIR}/${d}/`);
    out(`Next: "kr pull" to fetch the repository's pages, or write pages and "kr push".`);
  } else {
    out(`Already a kr project: ${where}/${KR_DIR}/ (layout folders checked).`);
  }
}
