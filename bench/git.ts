import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The reference side: the plain `git` command on the service's own bare repositories.
 *
 * Timed commands run inside one `bash` process per series, each step timed with bash's $EPOCHREALTIME
 * (microseconds) around the git invocations, the way a shell script runs them. They are not spawned
 * from this Node process: a fork from a Node process costs in proportion to its memory (3–40 ms per
 * spawn here, against about 1.5 ms from bash), which would be measuring the harness, not git.
 */

export const AUTHOR_ENV = {
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.invalid',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.invalid',
};

const gitEnv = (): NodeJS.ProcessEnv => ({ ...process.env, ...AUTHOR_ENV, GIT_CONFIG_NOSYSTEM: '1', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' });

/** `-c name=value` pairs put before every git command (`--git-fsync` sets durable object and ref writes). */
let globalConfig: string[] = [];
export function setGitConfig(pairs: string[]): void {
  globalConfig = pairs.flatMap((p) => ['-c', p]);
}

function run(cmd: string, args: string[], input?: string | Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: gitEnv() });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`${cmd} ${args.join(' ').slice(0, 200)} exited ${code}: ${Buffer.concat(err).toString('utf8').slice(0, 800)}`));
      else resolve(Buffer.concat(out));
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(input);
  });
}

/** Untimed `git --git-dir <dir> <args>` (set-up and checks only). */
export async function gitText(gitDir: string, args: string[], input?: string): Promise<string> {
  return (await run('git', [...globalConfig, '--git-dir', gitDir, ...args], input)).toString('utf8').trim();
}

/** bash single-quoting. */
export const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Runs `steps` (bash snippets using `"${G[@]}"` for `git --git-dir <gitDir>`) one after another in one
 * bash process and returns the time of each, in ms. A step may print `R <value>` lines, returned in
 * order as `values`.
 */
export async function timedSteps(
  gitDir: string,
  steps: string[],
  scratch: string,
  config: string[] = [],
): Promise<{ ms: number[]; values: string[] }> {
  await mkdir(scratch, { recursive: true });
  const cfg = [...globalConfig, ...config.flatMap((p) => ['-c', p])];
  const script = [
    'set -euo pipefail',
    `G=(git ${cfg.map(sq).join(' ')} --git-dir ${sq(gitDir)})`,
    ...steps.map((s) => `s=$EPOCHREALTIME\n${s}\ne=$EPOCHREALTIME\necho "T $s $e"`),
  ].join('\n');
  const file = join(scratch, `steps-${Date.now()}-${Math.random().toString(36).slice(2)}.sh`);
  await writeFile(file, `${script}\n`);
  const out = (await run('bash', [file])).toString('utf8');
  const ms: number[] = [];
  const values: string[] = [];
  for (const line of out.split('\n')) {
    if (line.startsWith('T ')) {
      const [, s, e] = line.split(' ') as [string, string, string];
      ms.push(elapsedMs(s, e));
    } else if (line.startsWith('R ')) values.push(line.slice(2));
  }
  if (ms.length !== steps.length) throw new Error(`timed steps: ${ms.length} timings for ${steps.length} steps`);
  return { ms, values };
}

/** Difference of two $EPOCHREALTIME values ("seconds.micros"), in ms, without float rounding trouble. */
function elapsedMs(start: string, end: string): number {
  const [s1, u1] = start.split('.') as [string, string];
  const [s2, u2] = end.split('.') as [string, string];
  return (Number(s2) - Number(s1)) * 1000 + (Number(u2) - Number(u1)) / 1000;
}

/** Times `args` run `reps` times (after `warmup` untimed runs), stdout of the last run kept in `outFile`. */
export async function timedGit(
  gitDir: string,
  args: string[],
  reps: number,
  scratch: string,
  opts: { inputFile?: string; warmup?: number } = {},
): Promise<{ ms: number[]; output: Buffer }> {
  const outFile = join(scratch, `out-${Date.now()}-${Math.random().toString(36).slice(2)}`);
  const cmd = `"\${G[@]}" ${args.map(sq).join(' ')}${opts.inputFile ? ` < ${sq(opts.inputFile)}` : ''} > ${sq(outFile)}`;
  const warmup = opts.warmup ?? 1;
  const { ms } = await timedSteps(gitDir, Array.from({ length: warmup + reps }, () => cmd), scratch);
  return { ms: ms.slice(warmup), output: await readFile(outFile) };
}

/** git's own durable mode: loose objects and refs fsynced (git ≥ 2.36). */
export const GIT_FSYNC_CONFIG = ['core.fsync=committed', 'core.fsyncMethod=fsync'];

/** `cp -r` of a bare repository, for reference runs that move refs. */
export async function copyRepo(src: string, dest: string): Promise<string> {
  await cp(src, dest, { recursive: true });
  return dest;
}

interface Entry {
  /** As ls-tree and mktree write it: 100644, 040000. */
  mode: string;
  type: 'blob' | 'tree';
  oid: string;
}

const sha1 = (...parts: Buffer[]) => {
  const h = createHash('sha1');
  for (const p of parts) h.update(p);
  return h.digest('hex');
};

const blobOid = (content: Buffer) => sha1(Buffer.from(`blob ${content.length}\0`), content);

/** A tree's id as git computes it (entries in git's order: a tree's name sorts as if it ended in '/'). */
function treeOid(entries: Map<string, Entry>): string {
  const sorted = [...entries].sort(([a, ea], [b, eb]) =>
    Buffer.compare(Buffer.from(ea.type === 'tree' ? `${a}/` : a), Buffer.from(eb.type === 'tree' ? `${b}/` : b)),
  );
  const body = Buffer.concat(
    sorted.flatMap(([name, e]) => [Buffer.from(`${e.type === 'tree' ? '40000' : e.mode} ${name}\0`), Buffer.from(e.oid, 'hex')]),
  );
  return sha1(Buffer.from(`tree ${body.length}\0`), body);
}

const depth = (p: string) => (p === '' ? 0 : p.split('/').length);

/**
 * Commits through plumbing only, as a script would without a working tree, one commit per step:
 * `git hash-object -w --stdin` (one file) or `--stdin-paths` (several), one `git mktree` per changed tree
 * level (deepest first), `git commit-tree <tree> -p <head> -m <msg>`, `git update-ref refs/heads/main
 * <new> <old>` (check-and-set). Untimed preparation: the trees of `main` are read once with
 * `ls-tree -r -t`; contents and each `mktree` input are written to scratch files beforehand (the
 * service, too, receives the content in the request). The tree ids are computed here as well, which lets
 * the inputs be prepared up front and checks git's answer: the script prints each new root tree id.
 */
export class PlumbingCommitter {
  private readonly dirs = new Map<string, Map<string, Entry>>();
  private readonly steps: string[] = [];
  private readonly expectedRoots: string[] = [];
  private seq = 0;

  private constructor(
    readonly gitDir: string,
    private readonly scratch: string,
    private readonly config: string[],
  ) {}

  /** `config`: extra `name=value` settings for the timed commands (e.g. core.fsync). */
  static async open(gitDir: string, scratch: string, config: string[] = []): Promise<PlumbingCommitter> {
    const c = new PlumbingCommitter(gitDir, scratch, config);
    await mkdir(scratch, { recursive: true });
    c.dirs.set('', new Map());
    const head = await gitText(gitDir, ['rev-parse', '--verify', 'refs/heads/main']);
    const listing = await gitText(gitDir, ['ls-tree', '-r', '-t', '-z', 'refs/heads/main']);
    for (const rec of listing.split('\0')) {
      if (!rec) continue;
      const tab = rec.indexOf('\t');
      const [mode, type, oid] = rec.slice(0, tab).split(' ') as [string, 'blob' | 'tree', string];
      const path = rec.slice(tab + 1);
      c.put(path, { mode, type, oid });
      if (type === 'tree' && !c.dirs.has(path)) c.dirs.set(path, new Map());
    }
    if (treeOid(c.dirs.get('')!) !== (await gitText(gitDir, ['rev-parse', 'refs/heads/main^{tree}']))) {
      throw new Error('plumbing reference: tree ids computed here differ from git');
    }
    c.steps.push(`h=${head}`);
    return c;
  }

  private put(path: string, e: Entry): void {
    const slash = path.lastIndexOf('/');
    const dir = slash < 0 ? '' : path.slice(0, slash);
    let m = this.dirs.get(dir);
    if (!m) this.dirs.set(dir, (m = new Map()));
    m.set(path.slice(slash + 1), e);
  }

  /** Prepares one commit of `files` (its inputs written to scratch, untimed). */
  async plan(files: Array<{ path: string; content: string }>, message: string): Promise<void> {
    const n = this.seq++;
    const base = join(this.scratch, `c${n}`);
    const lines: string[] = [];
    const bodies = files.map((f) => Buffer.from(f.content));
    if (files.length === 1) {
      await writeFile(`${base}.blob`, bodies[0]!);
      lines.push(`b=$("\${G[@]}" hash-object -w --stdin < ${sq(`${base}.blob`)})`);
    } else {
      await mkdir(base, { recursive: true });
      const paths = await Promise.all(
        bodies.map(async (b, i) => {
          const p = join(base, `${i}.md`);
          await writeFile(p, b);
          return p;
        }),
      );
      await writeFile(`${base}.paths`, `${paths.join('\n')}\n`);
      lines.push(`"\${G[@]}" hash-object -w --stdin-paths < ${sq(`${base}.paths`)} > /dev/null`);
    }
    const dirty = new Set<string>(['']);
    files.forEach((f, i) => {
      this.put(f.path, { mode: '100644', type: 'blob', oid: blobOid(bodies[i]!) });
      for (let p = f.path; p.includes('/'); ) {
        p = p.slice(0, p.lastIndexOf('/'));
        dirty.add(p);
        if (!this.dirs.has(p)) this.dirs.set(p, new Map());
      }
    });
    // Deepest first, so each parent lists its children's new tree ids: one mktree per level.
    const order = [...dirty].sort((a, b) => depth(b) - depth(a));
    let root = '';
    for (const [i, d] of order.entries()) {
      const entries = this.dirs.get(d)!;
      let input = '';
      for (const [name, e] of entries) input += `${e.mode} ${e.type} ${e.oid}\t${name}\n`;
      await writeFile(`${base}.tree${i}`, input);
      const oid = treeOid(entries);
      lines.push(`t=$("\${G[@]}" mktree < ${sq(`${base}.tree${i}`)})`);
      if (d === '') root = oid;
      else this.put(d, { mode: '040000', type: 'tree', oid });
    }
    lines.push(`c=$("\${G[@]}" commit-tree "$t" -p "$h" -m ${sq(message)})`);
    lines.push('"${G[@]}" update-ref refs/heads/main "$c" "$h"');
    lines.push('h=$c');
    this.steps.push(lines.join('\n'));
    this.expectedRoots.push(root);
  }

  /** Runs every planned commit, in order, in one bash process; returns the time of each commit. */
  async run(): Promise<number[]> {
    const steps = this.steps.map((s, i) => (i === 0 ? s : `${s}\necho "R $t"`));
    const { ms, values } = await timedSteps(this.gitDir, steps, this.scratch, this.config);
    if (values.join() !== this.expectedRoots.join()) throw new Error('plumbing reference: git made other trees than expected');
    // Step 0 only sets the starting head.
    return ms.slice(1);
  }
}
