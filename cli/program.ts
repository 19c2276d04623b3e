/**
 * The command tree of `kr` (commander). Every command has `--help` with examples; every read command has
 * `--json`. Command implementations are loaded on demand (`import()` inside each action).
 */
import { Command, Option } from 'commander';
import { checkRepoId, setRequestTimeout } from '../client/options.ts';
import { colourEnabled, paint, terminalSafe } from '../client/output.ts';

import { VERSION } from '../client/version.ts';

export { VERSION };

type Opts = Record<string, unknown>;

/** Each command's `--help` ends with examples. */
function examples(cmd: Command, lines: string[]): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

/** An action: positional arguments, then the options merged with the global ones (`--repo`). */
function act(cmd: Command, run: (args: string[], opts: Opts) => Promise<void>): Command {
  return cmd.action(async (...params: unknown[]) => {
    const self = params[params.length - 1] as Command;
    const positional = params.slice(0, params.length - 2).flatMap((a) => (Array.isArray(a) ? a : [a])) as string[];
    await run(positional, self.optsWithGlobals());
  });
}

const json = () => new Option('--json', 'print machine-readable JSON');
const typeOpt = () => new Option('-t, --type <type>', 'page type when a slug exists under several').choices(['concept', 'entity', 'analysis', 'source']);

const setup = () => import('./commands/setup.ts');
const sync = () => import('./commands/sync.ts');
const inspect = () => import('./commands/inspect.ts');
const team = () => import('./commands/team.ts');
const mcpCmd = () => import('./commands/mcp.ts');
const searchCmd = () => import('./commands/search.ts');
const linksCmd = () => import('./commands/links.ts');
const lifecycle = () => import('./commands/lifecycle.ts');
const watchCmd = () => import('./commands/watch.ts');
const webhooksCmd = () => import('./commands/webhooks.ts');

/**
 * The top-level command `argv` names, when only global options (`-r`/`--repo`, `--timeout`, with their
 * values) come before it; else undefined (no command, an option commander must read, `--`).
 */
export function commandNamed(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '-r' || arg === '--repo' || arg === '--timeout') i++;
    else if (!arg.startsWith('--repo=') && !arg.startsWith('--timeout=')) return arg.startsWith('-') ? undefined : arg;
  }
  return undefined;
}

/**
 * The command tree. Given the command line (`argv`), only the top-level command it names is built (building
 * every command and its help costs a start several milliseconds); the whole tree otherwise (`kr --help`,
 * `kr help`, an unknown command, which commander answers with the closest names).
 */
export function buildProgram(opts: { jsonErrors?: boolean; argv?: readonly string[] } = {}): Command {
  const only = opts.argv === undefined ? undefined : commandNamed(opts.argv);
  const want = (name: string): boolean => only === undefined || only === name;
  const program = new Command('kr')
    .description('Command-line client of the Knowledge Repository Service: sync project knowledge pages with a shared repository.')
    .version(VERSION, '-V, --version')
    .option('-r, --repo <id>', "repository to use instead of this folder's (or the default one)")
    .option('--timeout <seconds>', 'time limit of every request (default 30)')
    .exitOverride()
    .showHelpAfterError(opts.jsonErrors ? false : '(run with --help for usage)')
    .configureOutput({
      // With --json, main prints usage errors as JSON instead.
      outputError: (str, write) => (opts.jsonErrors ? undefined : write(terminalSafe(paint(process.stderr).red(str), colourEnabled(process.stderr)))),
    });
  program.hook('preAction', (_self, action) => {
    const global = action.optsWithGlobals();
    setRequestTimeout(global.timeout as string | undefined);
    // Every command that takes --repo: an id the server would strip is refused before anything is sent.
    if (global.repo !== undefined) checkRepoId(global.repo as string);
  });
  program.addHelpText(
    'after',
    `
Exit codes: 0 success, 1 refused request (server error, not logged in, conflict), 2 bad usage.
With --json, errors are one JSON object on stderr: {"error": "...", "code": "..."}.
Files: .kr/ at the project root: pages, and state.json (the folder's repository and what was synced);
       ~/.config/kr/config.json (defaults: server_url, repo), ~/.config/kr/credentials.json (server_url, token;
       mode 0600). XDG_CONFIG_HOME is honoured; NO_COLOR turns colour off.

Examples:
  $ kr login --server kr.example.com:8080 --token krp_...
  $ kr repos create acme && kr init && kr push
  $ kr join kri_... && kr init && kr pull
  $ kr diff decision-log --local
  $ kr --repo acme show wiki/concepts/decision-log.md`,
  );

  // --- setup --------------------------------------------------------------------------------------------
  if (want('login')) {
    examples(
      act(
        program
          .command('login')
          .description('save a token for a server, after checking it (GET /v1/me; the legacy key: GET /v1/repos); without a token, says how to get one; --browser gets one through the dashboard')
          .option('-s, --server <url>', 'server URL; host:port alone means http:// (default: the one already configured)')
          .option('--token <token>', 'token to save: a personal access token (krp_...), a session token or the legacy key; "-" reads it from stdin; asked for on a terminal when omitted')
          .option(
            '--browser',
            'get the token through the dashboard instead: opens <dashboard>/cli-login (the URL is printed too), where you allow it; ' +
              'the dashboard mints a personal access token labelled with this host and hands it to a listener on 127.0.0.1 (at most 5 minutes)',
          )
          .option('--dashboard <url>', 'with --browser: the dashboard\'s address (default: $KR_DASHBOARD_URL, else http://localhost:5173)')
          .addOption(json())
          .addHelpText(
            'after',
            '\nWith --browser: KR_DASHBOARD_URL is the default dashboard; KR_BROWSER, when set, is the command that opens the URL\n' +
              '(else xdg-open, open or the Windows shell). The URL is printed on stderr too. The browser hands the token to\n' +
              '127.0.0.1, so it must run on this machine (over SSH, forward the printed port with ssh -L). Cancel exits 1.',
          ),
        async (_a, o) => (await setup()).login(o as never),
      ),
      [
        'kr login --server https://kr.example.com',
        'kr login --server localhost:8080 --token krp_abc...',
        'pass show kr | kr login --token -',
        'kr login --server https://api.kr.example.com --browser --dashboard https://kr.example.com',
      ],
    );
  }

  if (want('remote')) {
    const remote = program.command('remote').description("show or change the server URL and the repository (this folder's, or the default)");
    examples(
      act(remote.command('set').argument('<url>', 'server URL').description('set the server URL (config.json)'), async ([url], _o) =>
        (await setup()).remoteSet(url!),
      ),
      ['kr remote set https://kr.example.com'],
    );
    examples(
      act(
        remote
          .command('set-repo')
          .argument('<id>', 'repository id')
          .description("link this project folder to a repository (refused once it synced with another); outside a folder: the default (config.json)"),
        async ([id], _o) => (await setup()).remoteSetRepo(id!),
      ),
      ['kr remote set-repo acme'],
    );
    examples(
      act(remote.command('get').description('show the server URL (and which file it comes from) and the repository').addOption(json()), async (_a, o) =>
        (await setup()).remoteGet(o as never),
      ),
      ['kr remote get', 'kr remote get --json'],
    );
    examples(remote, ['kr remote set https://kr.example.com', 'kr remote set-repo acme', 'kr remote get']);
  }

  if (want('init')) {
    examples(
      act(
        program
          .command('init')
          .description('create .kr/ (wiki/concepts, wiki/entities, wiki/analyses, raw/sessions, state.json) here, linked to --repo (or the default repository); and the coding agents\' MCP configuration')
          .option('--tool <agents>', 'agents to configure for "kr mcp": claude (.mcp.json, the default), cursor, codex; comma-separated')
          .option('--no-mcp', 'do not write any MCP configuration'),
        async (_a, o) => (await setup()).init(o as never),
      ),
      ['kr init', 'kr init --repo acme && kr pull', 'kr init --tool cursor,codex', 'kr init --no-mcp'],
    );
  }

  // --- sync ---------------------------------------------------------------------------------------------
  if (want('push')) {
    examples(
      act(
        program
          .command('push')
          .description(
            'send new and changed pages, and delete on the server the pages deleted here (each based on the version you last pulled); ' +
              'a page that changed on the server meanwhile is merged section by section (the merged page is written here), ' +
              'conflicts are reported, your files stay as they are',
          )
          .argument('[paths...]', 'slugs, page files, tracked page paths or folders (default: every page)')
          .addOption(typeOpt())
          .option('-m, --message <text>', 'commit message')
          .option('-n, --dry-run', 'only list what would be pushed')
          .option('--no-merge', 'no section merge: a page that changed on the server since you pulled it is a conflict')
          .addOption(json()),
        async (paths, o) => (await sync()).push(paths, o as never),
      ),
      ['kr push', 'kr push decision-log -m "record the decision"', 'kr push --type concept', 'kr push .kr/wiki/entities --dry-run', 'kr push --no-merge'],
    );
  }
  if (want('rm')) {
    examples(
      act(
        program
          .command('rm')
          .description('delete pages on the server (one commit) and here; refused for a page that changed on the server since you pulled it')
          .argument('<pages...>', 'slugs, page files or tracked page paths')
          .addOption(typeOpt())
          .option('-m, --message <text>', 'commit message')
          .option('-n, --dry-run', 'only list what would be deleted')
          .option('-f, --force', 'delete even a page with local changes that were never pushed')
          .addOption(json()),
        async (paths, o) => (await sync()).rm(paths, o as never),
      ),
      ['kr rm old-idea', 'kr rm old-idea --type concept -m "superseded"', 'kr rm wiki/concepts/old-idea.md --dry-run'],
    );
  }
  if (want('pull')) {
    examples(
      act(
        program
          .command('pull')
          .description('fetch what changed on the server into .kr/ (deletions too); your unpushed edits are kept and reported')
          .option('--full', 'fetch every page, not only what changed since the last pull')
          .addOption(json()),
        async (_a, o) => (await sync()).pull(o as never),
      ),
      ['kr pull', 'kr pull --full'],
    );
  }
  if (want('status')) {
    examples(
      act(
        program
          .command('status')
          .description('when this folder last pulled and pushed; pages that are new, modified, deleted here, behind the server, or in conflict; files that are skipped, and why')
          .addOption(json()),
        async (_a, o) => (await sync()).status(o as never),
      ),
      ['kr status', 'kr status --json'],
    );
  }
  if (want('resolve')) {
    examples(
      act(
        program
          .command('resolve')
          .description('after merging a conflict by hand: base your file on the server\'s current version, so the next push goes through')
          .argument('<slug>', 'page slug')
          .addOption(typeOpt())
          .option('--theirs', "discard your version and take the server's")
          .addOption(json()),
        async ([slug], o) => (await sync()).resolveConflict(slug!, o as never),
      ),
      ['kr resolve decision-log && kr push', 'kr resolve decision-log --theirs'],
    );
  }

  if (want('watch')) {
    examples(
      act(
        program
          .command('watch')
          .description(
            'keep this folder in sync as changes happen: pulls once, then again on each push to the repository (as "kr pull": your unpushed edits are kept), ' +
              'one line per change; reconnects by itself and misses nothing; runs until Ctrl-C',
          )
          .option('--json', 'one JSON object per line for each change'),
        async (_a, o) => (await watchCmd()).watch(o as never),
      ),
      ['kr watch', 'kr watch --json', 'kr --repo acme watch'],
    );
  }

  // --- inspect (no local checkout needed: --repo and page paths) -----------------------------------------
  if (want('pages')) {
    examples(
      act(program.command('pages').description('the pages on the server, with the last commit of each').addOption(json()), async (_a, o) =>
        (await inspect()).pages(o as never),
      ),
      ['kr pages', 'kr --repo acme pages --json'],
    );
  }
  if (want('show')) {
    examples(
      act(
        program
          .command('show')
          .description("print a page as the server has it now")
          .argument('<page>', 'slug (looked up in the local page folders) or page path (wiki/concepts/x.md)')
          .addOption(typeOpt())
          .addOption(json()),
        async ([page], o) => (await inspect()).show(page!, o as never),
      ),
      ['kr show decision-log', 'kr --repo acme show wiki/concepts/decision-log.md'],
    );
  }
  if (want('log')) {
    examples(
      act(
        program
          .command('log')
          .description('activity of the repository: actor email, action, UTC time (newest first); --detail adds what each did (a push: its commit, message and merged pages)')
          .option('-n, --limit <n>', 'how many events (at most 500)')
          .option('--offset <n>', 'skip this many events')
          .option('--no-pulls', 'leave pulls out (pushes and imports only)')
          .option('--detail', 'a fourth column: a push\'s commit, message and merged pages; an import\'s counts; a pull\'s client')
          .addOption(json()),
        async (_a, o) => (await inspect()).log(o as never),
      ),
      ['kr log', 'kr log --no-pulls --detail', 'kr log --limit 200 --json'],
    );
  }
  if (want('timeline')) {
    examples(
      act(
        program.command('timeline').description('commits of the repository with the pages they touched (newest first)').option('-n, --limit <n>', 'how many commits').addOption(json()),
        async (_a, o) => (await inspect()).timeline(o as never),
      ),
      ['kr timeline', 'kr timeline -n 10'],
    );
  }
  if (want('history')) {
    examples(
      act(
        program
          .command('history')
          .description('commits that touched a page (newest first)')
          .argument('<page>', 'slug (looked up in the local page folders) or page path (wiki/concepts/x.md)')
          .addOption(typeOpt())
          .option('-n, --limit <n>', 'how many commits')
          .addOption(json()),
        async ([slug], o) => (await inspect()).history(slug!, o as never),
      ),
      ['kr history decision-log', 'kr history acme --type entity', 'kr --repo acme history wiki/concepts/decision-log.md'],
    );
  }
  if (want('diff')) {
    examples(
      act(
        program
          .command('diff')
          .description('section diff of a page: between two commits on the server, or (--local) your file against the server copy')
          .argument('<page>', 'slug (looked up in the local page folders) or page path (wiki/concepts/x.md)')
          .addOption(typeOpt())
          .option('--from <sha>', 'older commit (default: the previous commit that touched the page; for its first commit, the empty page)')
          .option('--to <sha>', 'newer commit (default: the last commit that touched the page)')
          .option('--blame', 'name the commit that introduced each heading')
          .option('--local', 'compare your file with the server copy, in-process (not with --from, --to or --blame)')
          .addOption(json()),
        async ([slug], o) => (await inspect()).diff(slug!, o as never),
      ),
      ['kr diff decision-log', 'kr diff decision-log --from 1a2b3c4 --to 5d6e7f8', 'kr diff decision-log --blame', 'kr diff decision-log --local', 'kr diff acme --type entity --json'],
    );
  }
  if (want('evolution')) {
    examples(
      act(
        program
          .command('evolution')
          .description('how a page changed, commit by commit, section by section (newest first)')
          .argument('<page>', 'slug (looked up in the local page folders) or page path (wiki/concepts/x.md)')
          .addOption(typeOpt())
          .option('-n, --limit <n>', 'how many commits (at most 200)')
          .option('--blame', 'name the commit that introduced each heading')
          .addOption(json()),
        async ([slug], o) => (await inspect()).evolution(slug!, o as never),
      ),
      ['kr evolution decision-log', 'kr evolution decision-log -n 5 --json'],
    );
  }

  if (want('links')) {
    examples(
      act(
        program
          .command('links')
          .description('what a page links to ([[slug]], [[type/slug]], relative .md links) and the pages that link to it, as the server resolves them now')
          .argument('<page>', 'slug (looked up in the local page folders) or page path (wiki/concepts/x.md)')
          .addOption(typeOpt())
          .addOption(json()),
        async ([page], o) => (await linksCmd()).links(page!, o as never),
      ),
      ['kr links decision-log', 'kr --repo acme links wiki/entities/postgres.md --json'],
    );
  }

  // --- search -------------------------------------------------------------------------------------------
  if (want('search')) {
    examples(
      act(
        program
          .command('search')
          .description('full-text search on the server: every repository you belong to, or one with --repo (numbered by rank, best first; case and accents ignored)')
          .argument('<query...>', 'words (all required), "exact phrase", prefix*, -excluded (put -- before a query that starts with -)')
          .option('--type <type>', 'only pages of this type (frontmatter type, exactly)')
          .option('--tag <tag>', 'only pages with this tag (exactly)')
          .option('-n, --limit <n>', 'how many results (at most 100)')
          .option('--offset <n>', 'skip this many results')
          .addOption(json()),
        async (words, o) => (await searchCmd()).search(words, o as never),
      ),
      ['kr search decision log', `kr search '"rollout plan"' --repo acme`, 'kr search migr* --type concept --tag infra', 'kr search -- cache -redis --json'],
    );
  }

  // --- agent tool server (docs/agents.md) -----------------------------------------------------------------
  if (want('mcp')) {
    const mcp = program.command('mcp').description('the agent tool server for coding agents (MCP over stdio), and its configuration');
    examples(
      act(mcp.command('serve', { isDefault: true }).description('serve kr\'s tools to a coding agent on stdin/stdout (the default; agents start it)'), async () =>
        (await mcpCmd()).serve(),
      ),
      ['kr mcp'],
    );
    examples(
      act(
        mcp
          .command('install')
          .description('write the MCP configuration of coding agents for this project')
          .option('--tool <agents>', 'claude (.mcp.json, the default), cursor (.cursor/mcp.json), codex (.codex/config.toml); comma-separated')
          .addOption(json()),
        async (_a, o) => (await mcpCmd()).installConfig(o as never),
      ),
      ['kr mcp install', 'kr mcp install --tool cursor,codex'],
    );
    examples(
      act(
        mcp.command('uninstall').description("remove kr from the agents' MCP configuration").option('--tool <agents>', 'only these agents (default: all)').addOption(json()),
        async (_a, o) => (await mcpCmd()).uninstallConfig(o as never),
      ),
      ['kr mcp uninstall', 'kr mcp uninstall --tool codex'],
    );
    examples(
      act(mcp.command('status').description('which agents are configured to run kr mcp here').addOption(json()), async (_a, o) => (await mcpCmd()).status(o as never)),
      ['kr mcp status', 'kr mcp status --json'],
    );
    examples(mcp, ['kr mcp', 'kr mcp install --tool claude', 'kr mcp status']);
  }

  // --- team ---------------------------------------------------------------------------------------------
  if (want('repos')) {
    const repos = program.command('repos').description('your repositories');
    examples(
      act(repos.command('list', { isDefault: true }).description('list the repositories you belong to (the default)').addOption(json()), async (_a, o) =>
        (await team()).reposList(o as never),
      ),
      ['kr repos', 'kr repos list --json'],
    );
    examples(
      act(repos.command('create').argument('<id>', 'repository id: [A-Za-z0-9][A-Za-z0-9_-]{0,63}').description('create a repository; you become its owner').addOption(json()), async ([id], o) =>
        (await team()).reposCreate(id!, o as never),
      ),
      ['kr repos create acme'],
    );
    examples(
      act(
        repos
          .command('delete')
          .argument('<id>', 'the repository to delete')
          .description('delete a repository on the server, for everyone: pages, history, members, invite keys, activity (owners only; no undo). Offers an export first and asks you to type the id')
          .option('-y, --yes', 'do not ask (no export is offered: see --export)')
          .option('--confirm <id>', 'the id again: delete without asking')
          .option('--export <file>', 'first write the repository\'s git bundle to this file (nothing is deleted if that fails)')
          .addOption(json()),
        async ([id], o) => (await lifecycle()).reposDelete(id!, o as never),
      ),
      ['kr repos delete acme', 'kr repos delete acme --export acme.bundle --confirm acme', 'kr repos delete old-notes --yes --json'],
    );
    examples(
      act(
        repos
          .command('import')
          .argument('<id>', 'the repository: a new one (you become its owner) or your empty one')
          .argument('<file>', 'a git bundle: "git bundle create <file> HEAD main", or a "kr export"')
          .description('bring a git history in: every commit of the bundle\'s branch, with its shas, authors, dates and messages (checked whole by the server first; nothing is kept if it is refused)')
          .option('-b, --branch <name>', "the bundle's branch to import (default: its HEAD, else its only branch, else main)")
          .addOption(json()),
        async ([id, file], o) => (await lifecycle()).reposImport(id!, file!, o as never),
      ),
      ['kr repos import acme docs.bundle', 'kr repos import wiki wiki.bundle --branch master --json'],
    );
    examples(repos, ['kr repos', 'kr repos create acme', 'kr repos import acme docs.bundle', 'kr repos delete acme']);
  }

  if (want('export')) {
    examples(
      act(
        program
          .command('export')
          .description('the repository as a git bundle file: every page and the whole history (owners only); "git clone <file>" restores it')
          .option('-o, --output <file>', 'where to write it (default: <repo>.bundle here)')
          .option('-f, --force', 'replace the file if it exists')
          .addOption(json()),
        async (_a, o) => (await lifecycle()).exportRepo(o as never),
      ),
      ['kr export', 'kr --repo acme export -o backups/acme.bundle'],
    );
  }

  if (want('invite')) {
    const invite = program.command('invite').description('invite keys of the current repository (owners only); alone, lists them');
    examples(
      act(invite.command('create').description('mint an invite key (valid 7 days); the token is shown once').option('-l, --label <text>', 'a note on who it is for').addOption(json()), async (_a, o) =>
        (await team()).inviteCreate(o as never),
      ),
      ['kr invite create --label "for bob"'],
    );
    examples(
      act(invite.command('list', { isDefault: true }).description('key id, label, expiry (UTC), active/expired (the default)').addOption(json()), async (_a, o) =>
        (await team()).inviteList(o as never),
      ),
      ['kr invite list'],
    );
    examples(
      act(invite.command('revoke').argument('<key-id>', 'the key id from "kr invite list" (not the token)').description('revoke an invite key').addOption(json()), async ([id], o) =>
        (await team()).inviteRevoke(id!, o as never),
      ),
      ['kr invite revoke 6f1c2a9e-...'],
    );
    examples(invite, ['kr invite', 'kr invite create --label bob', 'kr invite revoke <key-id>']);
  }

  if (want('join')) {
    examples(
      act(
        program.command('join').argument('<invite-token>', 'the kri_... token you were given').description('redeem an invite token; its repository becomes your current one').addOption(json()),
        async ([tokenArg], o) => (await team()).join(tokenArg!, o as never),
      ),
      ['kr join kri_AbC...'],
    );
  }

  if (want('members')) {
    const members = program.command('members').description('members of the current repository');
    examples(
      act(members.command('list', { isDefault: true }).description('email, role, join time (the default)').addOption(json()), async (_a, o) =>
        (await team()).membersList(o as never),
      ),
      ['kr members', 'kr members --json'],
    );
    examples(
      act(members.command('remove').argument('<email>', 'the member\'s email (any case)').description('remove a member (owners only)').addOption(json()), async ([email], o) =>
        (await team()).membersRemove(email!, o as never),
      ),
      ['kr members remove bob@example.com'],
    );
    examples(
      act(
        members
          .command('role')
          .argument('<email>', "the member's email (any case)")
          .argument('<role>', 'owner or member')
          .description("change a member's role (owners only); the last owner stays one")
          .addOption(json()),
        async ([email, role], o) => (await lifecycle()).membersRole(email!, role!, o as never),
      ),
      ['kr members role bob@example.com owner', 'kr members role alice@example.com member'],
    );
    examples(members, ['kr members', 'kr members remove bob@example.com', 'kr members role bob@example.com owner']);
  }

  if (want('pats')) {
    const pats = program.command('pats').description('your personal access tokens');
    examples(
      act(
        pats
          .command('create')
          .description('mint a personal access token (shown once)')
          .option('-l, --label <text>', 'what it is for')
          .option('--expires-in-days <n>', 'lifetime in days, 1 to 366')
          .option('--save', 'store it as your credentials instead of printing it')
          .addOption(json()),
        async (_a, o) => (await team()).patsCreate(o as never),
      ),
      ['kr pats create --label laptop --save', 'kr pats create --label ci --expires-in-days 90'],
    );
    examples(
      act(pats.command('list', { isDefault: true }).description('list your tokens (the default)').addOption(json()), async (_a, o) => (await team()).patsList(o as never)),
      ['kr pats list'],
    );
    examples(
      act(pats.command('revoke').argument('<id>', 'token id from "kr pats list"').description('revoke a token').addOption(json()), async ([id], o) =>
        (await team()).patsRevoke(id!, o as never),
      ),
      ['kr pats revoke 0c9e...'],
    );
    examples(pats, ['kr pats create --save', 'kr pats list', 'kr pats revoke <id>']);
  }

  if (want('webhooks')) {
    const webhooks = program
      .command('webhooks')
      .description("the current repository's webhooks: an HTTPS POST to your URL on each push or member change, signed with a secret (owners add and remove; members list)");
    examples(
      act(
        webhooks
          .command('add')
          .argument('<url>', 'where to deliver (https://; the server refuses private and loopback addresses unless configured otherwise)')
          .option('--events <kinds>', 'which events: push, member, or both comma-separated (default both)')
          .description('add a webhook (owners); its signing secret is printed once')
          .addOption(json()),
        async ([url], o) => (await webhooksCmd()).add(url!, o as never),
      ),
      ['kr webhooks add https://ci.example.com/kr-hook', 'kr webhooks add https://chat.example.com/hook --events push --json'],
    );
    examples(
      act(webhooks.command('list', { isDefault: true }).description('id, events, creation time, URL (the default; no secrets)').addOption(json()), async (_a, o) =>
        (await webhooksCmd()).list(o as never),
      ),
      ['kr webhooks', 'kr webhooks list --json'],
    );
    examples(
      act(webhooks.command('test').argument('<id>', 'webhook id from "kr webhooks list"').description('deliver a ping event to the webhook now').addOption(json()), async ([id], o) =>
        (await webhooksCmd()).test(id!, o as never),
      ),
      ['kr webhooks test 3f2a...'],
    );
    examples(
      act(
        webhooks
          .command('deliveries')
          .argument('<id>', 'webhook id')
          .description("the latest deliveries, newest first: event, status (pending, delivered, failed), attempts, the receiver's last HTTP status or the error")
          .option('-n, --limit <n>', 'how many (default 50, at most 200)')
          .addOption(json()),
        async ([id], o) => (await webhooksCmd()).deliveries(id!, o as never),
      ),
      ['kr webhooks deliveries 3f2a...', 'kr webhooks deliveries 3f2a... --limit 5 --json'],
    );
    examples(
      act(webhooks.command('remove').argument('<id>', 'webhook id').description('remove a webhook (owners)').addOption(json()), async ([id], o) =>
        (await webhooksCmd()).remove(id!, o as never),
      ),
      ['kr webhooks remove 3f2a...'],
    );
    examples(webhooks, ['kr webhooks add https://ci.example.com/kr-hook', 'kr webhooks', 'kr webhooks test <id>', 'kr webhooks deliveries <id>', 'kr webhooks remove <id>']);
  }

  if (only !== undefined && !program.commands.some((c) => c.name() === only)) return buildProgram({ jsonErrors: opts.jsonErrors });
  return program;
}
