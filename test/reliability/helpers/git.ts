/** The plain `git` command against bare repositories, asynchronously (so checks of many repositories overlap). */
import { execFile, spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

export function git(gitdir: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')} in ${gitdir} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** `git` with `input` on its standard input; resolves with its standard output. */
export function gitWithInput(gitdir: string, input: Uint8Array, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile('git', ['--git-dir', gitdir, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`git ${args.join(' ')} in ${gitdir} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
    child.stdin!.end(input);
  });
}

/** `git fsck --strict`; rejects with git's output on any problem. */
export async function fsckStrict(gitdir: string): Promise<void> {
  await git(gitdir, 'fsck', '--strict', '--no-dangling', '--no-progress');
}

/** Every commit reachable from main (empty for a repository with no commit yet). */
export async function revList(gitdir: string): Promise<string[]> {
  const head = await git(gitdir, 'rev-parse', '--verify', '--quiet', 'refs/heads/main').catch(() => '');
  if (head.trim() === '') return [];
  return (await git(gitdir, 'rev-list', 'refs/heads/main')).split('\n').filter(Boolean);
}

/** Contents of `<rev>:<path>` objects through one `git cat-file --batch` (null for a missing object). */
export function catFiles(gitdir: string, specs: string[]): Promise<Array<Buffer | null>> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, 'cat-file', '--batch'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`git cat-file exited ${code}`));
      const buf = Buffer.concat(chunks);
      const out: Array<Buffer | null> = [];
      let at = 0;
      for (let i = 0; i < specs.length; i++) {
        const nl = buf.indexOf(0x0a, at);
        const header = buf.subarray(at, nl).toString('utf8');
        at = nl + 1;
        if (header.endsWith(' missing') || header.endsWith(' ambiguous')) {
          out.push(null);
          continue;
        }
        const size = Number(header.split(' ')[2]);
        out.push(buf.subarray(at, at + size));
        at += size + 1;
      }
      resolve(out);
    });
    child.stdin.end(specs.map((s) => `${s}\n`).join(''));
  });
}

/** The `<id>.git` directories under `<dataRoot>/repos`. */
export async function repoDirs(dataRoot: string): Promise<string[]> {
  return (await readdir(join(dataRoot, 'repos')).catch(() => [] as string[])).filter((n) => n.endsWith('.git')).sort();
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!, i);
      }
    }),
  );
  return out;
}
