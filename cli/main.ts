/**
 * `kr`, the command-line client of the Knowledge Repository Service (run through cli/kr.mjs): parses the
 * command line and maps outcomes to exit codes: 0 success, 1 a refused request, 2 bad usage. Errors go to
 * stderr as `error: <message>`, or, when the command was given `--json`, as one JSON object
 * `{"error": "<message>", "code": "<code>"}` (codes: client/errors.ts).
 */
import { CommanderError } from 'commander';
import { CliError } from '../client/errors.ts';
import { colourEnabled, jsonText, paint, terminalSafe } from '../client/output.ts';
import { buildProgram } from './program.ts';

/** Whether the command line asks for JSON (options end at `--`). */
export function wantsJson(argv: string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).includes('--json');
}

/** Runs kr with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const json = wantsJson(argv);
  const program = buildProgram({ jsonErrors: json, argv });
  const fail = (message: string, code: string, exitCode: number): number => {
    if (json) process.stderr.write(jsonText({ error: message, code }) + '\n');
    else process.stderr.write(terminalSafe(`${paint(process.stderr).red('error:')} ${message}`, colourEnabled(process.stderr)) + '\n');
    return exitCode;
  };
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.exitCode === 0) return 0; // help and version
      // Commander printed its message already, unless JSON errors were asked for (then it printed nothing).
      if (json) fail(e.message.replace(/^error: /, ''), 'usage', 2);
      return 2;
    }
    if (e instanceof CliError) return fail(e.message, e.code, e.exitCode);
    return fail(`unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`, 'internal', 1);
  }
}

// A closed pipe (`kr log | head`) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

// Not a top-level await: the client package runs this module as a CommonJS script (scripts/client-package.mjs).
void main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
