/** `kr login`, `kr remote set|set-repo|get`, `kr init`. */
import { Api, ApiError } from '../../client/api.ts';
import {
  checkRepoId,
  configPath,
  credentialsPath,
  currentRepo,
  loadConfig,
  loadCredentials,
  normaliseServerUrl,
  requestTimeout,
  saveConfig,
  saveCredentials,
  type CredentialsFile,
} from '../../client/config.ts';
import { CliError, refused, usageError } from '../../client/errors.ts';
import { findProject, initProject, KR_DIR, LAYOUT_DIRS, loadState, Project, type StateFile } from '../../client/project.ts';
import { clean, note, out, printJson, promptSecret, readStdin, warn } from '../../client/output.ts';
import { join, relative } from 'node:path';

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

/**
 * How to get a token for `server`, in words. Without an identity provider the only tokens are
 * the ones the server's operator mints with the admin command on the server host.
 */
export async function howToGetToken(server: string): Promise<string[]> {
  const idp = await new Api({ baseUrl: server, token: null, timeoutMs: Math.min(requestTimeout(), 10_000) }).hasIdentityProvider();
  if (idp === false) {
    return [
      `${server} has no identity provider, so there is no sign-in page: a token comes from the server's operator,`,
      'who runs the admin command on the server host (once per person; "user add" only if the account is new):',
      '  npm run admin -- user add <your email>        # in the server\'s checkout',
      '  npm run admin -- token <your email>           # prints a krp_... token, once',
      'or, for the container:',
      '  docker exec <container> node dist/admin.mjs user add <your email>',
      '  docker exec <container> node dist/admin.mjs token <your email>',
      `Then: kr login --server ${server} --token krp_...   (or --token - to read it from stdin)`,
    ];
  }
  const lines = [
    idp === true
      ? `${server} signs people in through its identity provider: sign in on the dashboard to get a token,`
      : `Get a token for ${server} from its dashboard,`,
    'or ask the server\'s operator for one (on the server host: npm run admin -- token <your email>).',
    `Then: kr login --server ${server} --token <token>   (or --token - to read it from stdin)`,
    `Or let the dashboard hand one over: kr login --server ${server} --browser [--dashboard <its URL>]`,
  ];
  return lines;
}

type Identity = { kind: 'user'; email: string; name: string } | { kind: 'legacy' };

export interface LoginOptions {
  server?: string;
  token?: string;
  /** `--browser`: get a token through the dashboard (cli/browser-login.ts). */
  browser?: boolean;
  /** `--dashboard <url>`, with `--browser`. */
  dashboard?: string;
  json?: boolean;
}

export async function login(opts: LoginOptions): Promise<void> {
  if (opts.browser && opts.token !== undefined) throw usageError('--browser and --token exclude each other: the browser hands over the token');
  if (opts.dashboard !== undefined && !opts.browser) throw usageError('--dashboard goes with --browser');
  const config = await loadConfig();
  const previous = await existingCredentials();
  const raw = opts.server ?? previous?.server_url ?? config.server_url;
  if (!raw) throw usageError('no server URL: pass --server <url> (or run "kr remote set <url>" first)');
  const server = normaliseServerUrl(raw);

  if (opts.browser) {
    const { browserLogin, dashboardBase } = await import('../browser-login.ts');
    const dashboard = dashboardBase(opts.dashboard);
    let identity: Identity | undefined;
    await browserLogin({
      dashboard,
      accept: async (token) => {
        identity = await checkAndSave(server, token, `the dashboard at ${dashboard} may be signed in to another server`);
      },
    });
    report(server, identity!, opts.json);
    return;
  }

  let token: string;
  if (opts.token === '-') token = (await readStdin()).split('\n')[0]!.trim();
  else if (opts.token !== undefined) token = opts.token.trim();
  else if (process.stdin.isTTY) {
    for (const line of await howToGetToken(server)) note(line);
    token = (await promptSecret(`Token for ${server} (input hidden): `)).trim();
  } else {
    const how = await howToGetToken(server);
    throw usageError(`no token given: pass --token <token>, or --token - to read it from stdin\n${how.join('\n')}`);
  }
  if (token === '') throw usageError('the token is empty');
  report(server, await checkAndSave(server, token), opts.json);
}

/**
 * Every login's one check and save: the token is verified against the server before it is saved
 * (GET /v1/me for a user's session or PAT, GET /v1/repos for the legacy shared key).
 */
async function checkAndSave(server: string, token: string, refusedHint?: string): Promise<Identity> {
  const api = new Api({ baseUrl: server, token, timeoutMs: requestTimeout() });
  const failed = async (e: unknown): Promise<CliError> => {
    if (e instanceof ApiError && e.code === 'token_invalid') {
      const how = await howToGetToken(server);
      return new CliError(
        `login failed: ${server} does not accept this token (invalid token: unknown, expired or revoked)${refusedHint ? `; ${refusedHint}` : ''}\n${how.join('\n')}`,
        1,
        'token_invalid',
      );
    }
    return new CliError(`login failed: ${(e as Error).message}`, 1, e instanceof CliError ? e.code : 'refused');
  };
  let identity: Identity;
  try {
    const me = await api.me();
    identity = { kind: 'user', email: me.email, name: me.name };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 401 || e.message !== 'session required') throw await failed(e);
    try {
      await api.repos();
    } catch (e2) {
      throw await failed(e2);
    }
    identity = { kind: 'legacy' };
  }
  await saveCredentials({ server_url: server, token });
  return identity;
}

function report(server: string, identity: Identity, json: boolean | undefined): void {
  if (new URL(server).protocol === 'http:' && !isLoopback(server)) {
    warn(`${server} is plain HTTP: the token crosses the network unencrypted unless a TLS proxy fronts it (use https://)`);
  }
  if (json) {
    printJson({ server_url: server, identity: identity.kind === 'user' ? { email: identity.email, name: identity.name } : 'legacy' });
    return;
  }
  if (identity.kind === 'user') out(`Logged in to ${server} as ${clean(identity.email)}.`);
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

/**
 * `kr remote set-repo <id>`: inside a project folder, links the folder to the repository (refused once it
 * has synced with another one); outside any, sets the default for folders not linked yet.
 */
export async function remoteSetRepo(id: string): Promise<void> {
  checkRepoId(id);
  const project = await findProject();
  if (project) {
    await linkFolder(project, id);
    return;
  }
  await saveConfig({ repo: id });
  out(`Default repository set to ${id} (in ${configPath()}): used where a folder is not linked to one; "kr init" links a new folder to it.`);
}

/** Links a project folder to a repository: the folder's current repository from now on. */
export async function linkFolder(project: Project, id: string): Promise<void> {
  const where = relative(process.cwd(), project.krDir) || KR_DIR;
  if (project.state.repo === id) {
    out(`This folder (${where}) is already linked to ${id}.`);
    return;
  }
  if (project.state.repo !== undefined && project.synced) {
    throw refused(
      `this folder (${where}) is linked to ${project.state.repo} and has synced with it; a folder keeps its repository. ` +
        `For ${id}, use another folder: mkdir ${id} && cd ${id} && kr init --repo ${id} (or pass --repo ${id} to a read command)`,
      'repo_mismatch',
    );
  }
  project.state.repo = id;
  await project.save();
  out(`This folder (${where}) is now linked to ${id}: commands run in it use ${id}.`);
}

export async function remoteGet(opts: { repo?: string; json?: boolean }): Promise<void> {
  const config = await loadConfig();
  const project = await findProject();
  const current = currentRepo(config, opts.repo, project);
  const repoFrom =
    current?.from === 'project' ? join(project!.krDir, 'state.json') : current?.from === 'default' ? configPath() : current?.from === 'flag' ? '--repo' : null;
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
      repo: current?.id ?? null,
      repo_from: current?.from ?? null,
      default_repo: config.repo ?? null,
      project: project?.root ?? null,
      logged_in: creds !== null,
      config_file: configPath(),
      credentials_file: credentialsPath(),
    });
    return;
  }
  out(`server:      ${server === null ? '(not set)' : clean(server)}${from ? `  (from ${from === 'credentials' ? credentialsPath() : configPath()})` : ''}`);
  out(`repository:  ${current ? `${current.id}  (${current.from === 'project' ? 'this folder' : current.from === 'default' ? 'the default' : 'from --repo'}: ${repoFrom})` : '(none: "kr init --repo <id>" links this folder)'}`);
  if (current?.from !== 'default' && config.repo) out(`default:     ${clean(config.repo)}  (${configPath()}; for folders not linked to a repository)`);
  out(`logged in:   ${creds ? 'yes' : `no (${credsProblem})`}`);
  if (creds?.server_url && config.server_url && creds.server_url !== config.server_url) {
    note(`(the config names ${clean(config.server_url)}; the credentials' URL wins)`);
  }
}

/**
 * `kr init [--repo <id>]`: the layout, and the folder's link to a repository: `--repo`, else the default
 * of config.json (if any; else the folder is linked by the first command given a repository).
 */
export async function init(opts: { repo?: string; mcp?: boolean; tool?: string } = {}): Promise<void> {
  if (opts.repo !== undefined) checkRepoId(opts.repo);
  if (opts.mcp !== false && opts.tool !== undefined) (await import('./mcp.ts')).parseTools(opts.tool, []);
  const { root, created } = await initProject(process.cwd());
  const where = relative(process.cwd(), root) || '.';
  if (created) {
    out(`Initialised a kr project in ${where}/${KR_DIR}/:`);
    for (const d of Object.values(LAYOUT_DIRS)) out(`  ${KR_DIR}/${d}/`);
  } else {
    out(`Already a kr project: ${where}/${KR_DIR}/ (layout folders checked).`);
  }
  const state: StateFile = await loadState(root);
  const project = new Project(root, state);
  const repo = opts.repo ?? (state.repo === undefined ? (await loadConfig()).repo : undefined);
  if (repo !== undefined) await linkFolder(project, repo);
  else if (state.repo === undefined) note('This folder is not linked to a repository yet: "kr init --repo <id>" links it ("kr repos" lists yours).');
  // The coding agents' MCP configuration (docs/agents.md), unless --no-mcp.
  if (opts.mcp !== false) await (await import('./mcp.ts')).installConfig({ tool: opts.tool, quiet: true });
  // docs/cli.md "What to commit", in two lines.
  out(`Commit: the pages under ${KR_DIR}/wiki and ${KR_DIR}/raw, ${KR_DIR}/.gitignore, and the agents' configuration (it runs "kr mcp", nothing machine-specific).`);
  out(`Do not commit: ${KR_DIR}/state.json, caches and locks (per person; ${KR_DIR}/.gitignore keeps them out of git).`);
  if (created) out(`Next: "kr pull" to fetch the repository's pages, or write pages and "kr push".`);
}
