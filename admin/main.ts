/**
 * The server's admin command (`npm run admin -- <command>`; in the container `node dist/admin.mjs
 * <command>`): users, tokens and repository owners, written straight into the server's data root (or the
 * hosted build's D1, `--target`) through the same lib/ modules the server uses. Exit codes: 0 done, 1
 * refused, 2 bad usage. Errors go to stderr as `error: <message>`, or `{"error": "<message>"}` with --json.
 *
 * Nothing user-controlled reaches the terminal raw: text output is cleaned by the commands, error messages
 * here, and JSON escapes C0 controls itself and C1 controls (which some terminals also obey) below.
 */
import { CommanderError } from 'commander';
import { clean } from '../client/output.ts';
import { AdminError } from './context.ts';
import { openContext } from './open.ts';
import { buildProgram, type Runner } from './program.ts';

/** One line of JSON: the value, with U+007F..U+009F escaped too (still the same JSON value). */
function jsonLine(value: unknown): string {
  // eslint-disable-next-line no-control-regex
  return `${JSON.stringify(value).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}\n`;
}

/** Runs the admin command with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<number> {
  const jsonArg = argv.includes('--json');
  // A refusal is one line; a stack keeps its lines, each cleaned.
  const fail = (message: string, lines = false) =>
    process.stderr.write(
      jsonArg ? jsonLine({ error: message }) : `error: ${lines ? message.split('\n').map(clean).join('\n') : clean(message)}\n`,
    );
  const run: Runner = async ({ json, ...target }, fn) => {
    const ctx = await openContext(env, cwd, target);
    try {
      const out = await fn(ctx);
      if (json) {
        process.stdout.write(jsonLine(out.json));
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
    fail(`unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, true);
    return 1;
  }
}

// A closed pipe (`admin user list | head`) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

process.exitCode = await main(process.argv.slice(2));
