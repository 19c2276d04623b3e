/**
 * The command tree of the server's admin command (commander, in the style of cli/program.ts). Every
 * command takes `--json`, and `--target` (with `--database-id`) anywhere on the line; each action opens
 * the target only once its arguments parsed.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { TARGETS, type AdminContext, type TargetOptions } from './context.ts';
import * as commands from './commands.ts';
import type { Output } from './commands.ts';

/** How a command runs: its output form and its target. */
export interface RunOptions extends TargetOptions {
  json: boolean;
}

/** Runs a command against the opened target and prints its output. */
export type Runner = (opts: RunOptions, fn: (ctx: AdminContext) => Promise<Output>) => Promise<void>;

const MAX_TEXT = 200;

/** `--name` and `--label`: at most 200 characters, no control characters (as the API's labels). */
function text(what: string) {
  return (value: string): string => {
    const v = value.trim();
    if ([...v].length > MAX_TEXT) throw new InvalidArgumentError(`${what} too long (max ${MAX_TEXT})`);
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f]/.test(v)) throw new InvalidArgumentError(`${what} must not contain control characters`);
    return v;
  };
}

/** `--days`: an integer from 1 to 366, as `expires_in_days` of POST /v1/pats. */
function days(value: string): number {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > 366) {
    throw new InvalidArgumentError('must be an integer from 1 to 366');
  }
  return Number(value);
}

/** `--database-id`: a D1 database id (a UUID, as `wrangler d1 create` prints it). */
function databaseId(value: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)) throw new InvalidArgumentError('must be a D1 database id (a UUID)');
  return value;
}

function examples(cmd: Command, lines: string[]): Command {
  return cmd.addHelpText('after', `\nExamples:\n${lines.map((l) => `  $ ${l}`).join('\n')}\n`);
}

const json = () => new Option('--json', 'print JSON (errors too, as {"error"} on stderr)');
type Opts = { json?: boolean; name?: string; label?: string; days?: number };

/** The run options of the command being run: its own --json, the program's --target and --database-id. */
function runOptions(cmd: Command): RunOptions {
  const o = cmd.optsWithGlobals<{ json?: boolean; target: TargetOptions['target']; databaseId?: string }>();
  return { json: !!o.json, target: o.target, ...(o.databaseId !== undefined ? { databaseId: o.databaseId } : {}) };
}

/**
 * The program; `jsonErrors` (the command line has --json) turns commander's own usage errors into
 * `{"error"}` lines too. Settings made here are inherited by every subcommand.
 */
export function buildProgram(run: Runner, jsonErrors = false): Command {
  const program = new Command('admin')
    .description(
      "The server's admin command: users, tokens and repository owners, straight on the server's data " +
        '(SERVICE_DATA_ROOT, or the hosted build\'s D1 with --target). Safe while the server runs; needs no identity provider and no running server.',
    )
    .exitOverride()
    .configureOutput({
      outputError: (str, write) =>
        write(jsonErrors ? `${JSON.stringify({ error: str.replace(/^error:\s*/, '').trim() })}\n` : str),
    });
  if (!jsonErrors) program.showHelpAfterError('(run with --help for usage)');
  program
    .addOption(
      new Option('--target <target>', "which build's data: the Node server's data root, npm run dev:worker's D1 and Durable Objects, or a deployed Worker's D1")
        .choices(TARGETS)
        .default('node'),
    )
    .addOption(
      new Option('--database-id <id>', "worker-remote: the D1 database (default: wrangler.toml's database_id of the DB binding)").argParser(databaseId),
    );
  program.addHelpText(
    'after',
    `
Run it from a checkout as \`npm run --silent admin -- <command>\`, in the container as
\`docker exec <container> node dist/admin.mjs <command>\`.

Users are given as an email or a user id. Exit codes: 0 done, 1 refused (not found, already exists,
invalid email or repository id, disabled user), 2 bad usage.

Targets: node (default) works on SERVICE_DATA_ROOT; worker-local on the same data root as
\`npm run dev:worker\` keeps it (running or not); worker-remote on a deployed Worker's D1 through the
Cloudflare API, with CLOUDFLARE_ACCOUNT_ID and CLOUDFLARE_API_TOKEN set.

Examples:
  $ npm run --silent admin -- user add alice@example.com --name Alice
  $ npm run --silent admin -- token alice@example.com --label laptop
  $ npm run --silent admin -- repo owner acme bob@example.com
  $ npm run --silent admin -- --target worker-local token alice@example.com
  $ npm run --silent admin -- --target worker-remote user list`,
  );

  const user = program.command('user').description('add, list, disable and enable users');
  examples(
    user
      .command('add')
      .description('add a user (no identity provider needed); the very first user of the service becomes owner of every repository without one')
      .argument('<email>', "the user's email")
      .option('--name <name>', 'display name (commit author name)', text('name'))
      .addOption(json())
      .action(async (email: string, o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.userAdd(ctx, email, { name: o.name }))),
    ['admin user add alice@example.com --name "Alice Martin"', 'admin user add bob@example.com --json'],
  );
  examples(
    user
      .command('list')
      .description('every user, oldest first: email, name, issuer (admin or the identity provider), status, id')
      .addOption(json())
      .action(async (_o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.userList(ctx))),
    ['admin user list', 'admin user list --json'],
  );
  examples(
    user
      .command('disable')
      .description('disable a user: every session and access token of theirs stops working at once, and signing in is refused')
      .argument('<user>', 'email or user id')
      .addOption(json())
      .action(async (who: string, _o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.userDisable(ctx, who))),
    ['admin user disable bob@example.com'],
  );
  examples(
    user
      .command('enable')
      .description("enable a disabled user again (their unexpired sessions and access tokens work again)")
      .argument('<user>', 'email or user id')
      .addOption(json())
      .action(async (who: string, _o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.userEnable(ctx, who))),
    ['admin user enable bob@example.com'],
  );

  examples(
    program
      .command('token')
      .description('mint a personal access token (krp_...) for a user and print it, once; it works like one made with POST /v1/pats')
      .argument('<user>', 'email or user id')
      .option('--label <text>', 'label shown by kr pats list (default "admin")', text('label'))
      .option('--days <n>', 'expire after n days, 1 to 366 (default: no expiry)', days)
      .addOption(json())
      .action(async (who: string, o: Opts, cmd: Command) =>
        run(runOptions(cmd), (ctx) => commands.token(ctx, who, { label: o.label, days: o.days })),
      ),
    ['admin token alice@example.com', 'admin token bob@example.com --label laptop --days 90 --json'],
  );

  const repo = program.command('repo').description('list repositories, give one an owner');
  examples(
    repo
      .command('owner')
      .description('make a user an owner of a repository (added, or promoted from member): how a repository without an owner gets one')
      .argument('<repo>', 'repository id (exact)')
      .argument('<user>', 'email or user id')
      .addOption(json())
      .action(async (id: string, who: string, _o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.repoOwner(ctx, id, who))),
    ['admin repo owner acme alice@example.com'],
  );
  examples(
    repo
      .command('list')
      .description('every repository: owners (emails), members (owners included), pages at head')
      .addOption(json())
      .action(async (_o: Opts, cmd: Command) => run(runOptions(cmd), (ctx) => commands.repoList(ctx))),
    ['admin repo list', 'admin repo list --json'],
  );
  return program;
}
