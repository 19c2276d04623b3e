/**
 * A long-running `kr` command (`kr watch`) as a child process, as test/helpers/cli.ts runs the short ones
 * (node + cli/kr.mjs, HOME in the user's temp dir): its output is read line by line as it comes, a test waits
 * for the line it expects (bounded by the test's own timeout, never by a clock of its own), and ends it with a
 * signal.
 *
 *   const w = startKr(bob, 'watch');
 *   await w.line(/^\d\d:\d\d:\d\d alice@example.com pushed 1 page\(s\)/);
 *   w.signal('SIGTERM');
 *   expect((await w.exit).code).toBe(0);
 */
import { spawn } from 'node:child_process';
import { KR_ENTRY, type KrUser } from './cli.ts';

export interface KrProcess {
  /** Complete stdout lines so far. */
  readonly stdout: string[];
  /** Complete stderr lines so far. */
  readonly stderr: string[];
  /** The first stdout line from index `from` on that matches (waits for it); rejects if the process ends first. */
  line(re: RegExp, from?: number): Promise<string>;
  /** The same on stderr. */
  errLine(re: RegExp, from?: number): Promise<string>;
  signal(sig: NodeJS.Signals): void;
  /** Resolves when the process has ended: its exit code (null when a signal killed it) and signal. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it printed, for assertion messages. */
  show(): string;
}

export function startKr(user: KrUser, ...args: string[]): KrProcess {
  const env: Record<string, string> = { HOME: user.home };
  for (const k of ['PATH', 'TMPDIR', 'SystemRoot', 'LANG']) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  const child = spawn(process.execPath, [KR_ENTRY, ...args], { cwd: user.project, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  const stderr: string[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const reader = (into: string[]) => {
    let partial = '';
    return (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop()!;
      into.push(...parts);
      wake();
    };
  };
  child.stdout.setEncoding('utf8').on('data', reader(stdout));
  child.stderr.setEncoding('utf8').on('data', reader(stderr));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('close', (code, signal) => {
      ended = true;
      wake();
      resolve({ code, signal });
    }),
  );
  const show = () => `--- stdout\n${stdout.join('\n')}\n--- stderr\n${stderr.join('\n')}`;
  const waitIn = (lines: string[], re: RegExp, from: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = () => {
        const hit = lines.slice(from).find((l) => re.test(l));
        if (hit !== undefined) {
          waiters.delete(check);
          resolve(hit);
        } else if (ended) {
          waiters.delete(check);
          reject(new Error(`kr ${args.join(' ')} ended without a line matching ${re}\n${show()}`));
        }
      };
      waiters.add(check);
      check();
    });
  return {
    stdout,
    stderr,
    line: (re, from = 0) => waitIn(stdout, re, from),
    errLine: (re, from = 0) => waitIn(stderr, re, from),
    signal: (sig) => {
      if (!ended) child.kill(sig);
    },
    exit,
    show,
  };
}
