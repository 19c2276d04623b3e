/**
 * The server's admin command (`npm run admin -- <command>`; in the container `node dist/admin.mjs
 * <command>`): users, tokens and repository owners, written straight into the server's data root through
 * the same lib/ modules the server uses. Exit codes: 0 done, 1 refused, 2 bad usage. Errors go to stderr as
 * `error: <message>`, or `{"error": "<message>"}` with --json.
 */
import { CommanderError } from 'commander';
import { AdminError, openContext } from './context.ts';
import { buildProgram, type Runner } from './program.ts';

/** Runs the admin command with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<number> {
  const jsonArg = argv.includes('--json');
  const fail = (message: string) =>
    process.stderr.write(jsonArg ? `${JSON.stringify({ error: message })}\n` : `error: ${message}\n`);
  const run: Runner = async (json, fn) => {
    const ctx = await openContext(env, cwd);
    try {
      const out = await fn(ctx);
      if (json) {
        process.stdout.write(`${JSON.stringify(out.json)}\n`);
      } else {
        process.stdout.write(`${out.text}\n`);
        if (out.note) process.stderr.write(`${out.note}\n`);
      }
    } finally {
      await ctx.close();
    }
  };
  try {
    await buildProgram(run, jsonArg).parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2; // help and version: 0; usage: 2
    if (e instanceof AdminError) {
      fail(e.message);
      return e.exitCode;
    }
    fail(`unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 1;
  }
}

// A closed pipe (`admin user list | head`) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

process.exitCode = await main(process.argv.slice(2));
