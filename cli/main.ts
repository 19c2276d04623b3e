/**
 * `kr`, the command-line client of the Knowledge Repository Service (run through cli/kr.mjs): parses the
 * command line and maps outcomes to exit codes: 0 success, 1 a refused request, 2 bad usage.
 */
import { CommanderError } from 'commander';
import { CliError } from './errors.ts';
import { paint } from './output.ts';
import { buildProgram } from './program.ts';

/** Runs kr with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2; // help and version: 0; usage: 2
    const p = paint(process.stderr);
    if (e instanceof CliError) {
      process.stderr.write(`${p.red('error:')} ${e.message}\n`);
      return e.exitCode;
    }
    process.stderr.write(`${p.red('error:')} unexpected failure: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    return 1;
  }
}

// A closed pipe (`kr log | head`) is not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0);
  throw e;
});

process.exitCode = await main(process.argv.slice(2));
