/**
 * Runs the `kr` executable (node + cli/kr.mjs, exactly what the package's `bin` points at) as a child
 * process, with HOME pointed at a temp dir and no XDG_CONFIG_HOME, so the user's real configuration is
 * never read or written.
 *
 *   const alice = await krUser(root, 'alice');            // <root>/alice/home and <root>/alice/project
 *   const r = await alice.kr('login', '--server', url, '--token', token);
 *   expect(r.code).toBe(0);
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const KR_ENTRY = fileURLToPath(new URL('../../cli/kr.mjs', import.meta.url));

export interface KrResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KrRunOptions {
  home: string;
  cwd: string;
  env?: Record<string, string | undefined>;
  /** Written to stdin, then closed (stdin is never a terminal). */
  input?: string;
}

export function runKr(args: string[], opts: KrRunOptions): Promise<KrResult> {
  const env: Record<string, string> = {};
  for (const k of ['PATH', 'TMPDIR', 'SystemRoot', 'LANG']) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  env.HOME = opts.home;
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [KR_ENTRY, ...args], { cwd: opts.cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

export interface KrUser {
  name: string;
  home: string;
  project: string;
  /** Runs kr in the user's project folder. */
  kr(...args: string[]): Promise<KrResult>;
  /** Runs kr with extra options (cwd, env, input). */
  krWith(opts: Partial<KrRunOptions>, ...args: string[]): Promise<KrResult>;
  /** Writes `<project>/.kr/<page path>`. */
  write(pagePath: string, text: string): Promise<void>;
  read(pagePath: string): Promise<string>;
  configDir: string;
}

export async function krUser(root: string, name: string): Promise<KrUser> {
  const home = join(root, name, 'home');
  const project = join(root, name, 'project');
  await mkdir(home, { recursive: true });
  await mkdir(project, { recursive: true });
  return {
    name,
    home,
    project,
    configDir: join(home, '.config', 'kr'),
    kr: (...args) => runKr(args, { home, cwd: project }),
    krWith: (opts, ...args) => runKr(args, { home, cwd: project, ...opts }),
    async write(pagePath, text) {
      const file = join(project, '.kr', ...pagePath.split('/'));
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, text);
    },
    read: (pagePath) => readFile(join(project, '.kr', ...pagePath.split('/')), 'utf8'),
  };
}

/** A readable assertion message: the command's output. */
export const show = (r: KrResult): string => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
