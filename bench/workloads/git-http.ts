import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Rng } from '../content.ts';
import { pushBody, type PushResponse } from '../http.ts';
import { sq, timedSteps } from '../git.ts';
import { REPO_ROOT } from '../procs.ts';
import { round, summarize } from '../stats.ts';
import { atMost, limitSide, ratioOf } from '../targets.ts';
import { growthPage } from './growth.ts';
import { createRepo, repoDir, type Row, type Side, type Workload } from './types.ts';

/**
 * W14 git over HTTP: `git clone` of a repository of 10,000 pages (2,000 at small scale) from the
 * service's git routes, against `git clone` of the same bare repository served by git itself (`git
 * http-backend`, git's smart-HTTP server, behind a small node:http CGI process of its own on loopback), in the
 * same run, alternating; W14·fetch, `git fetch` of one new commit pushed through the API, from each server into
 * a clone of its own; W14·mem, the server's peak RSS above its RSS before a clone of W9's large repository
 * (100,000 pages at full scale). Every git command runs in bash, timed with $EPOCHREALTIME (bench/git.ts).
 */

const REPO = 'w14';
const CLONE_TARGET = 1.5;
const FETCH_TARGET_MS = 50;
const MEM_TARGET_MIB = 64;

/** git's own smart-HTTP server over the server's repositories, in a process of its own; its URL. */
async function startReference(root: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'bench', 'http-backend.ts'), root], {
    cwd: REPO_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve(line.trim());
    });
    child.on('exit', (code) => reject(new Error(`http-backend reference exited ${code}`)));
  });
  return { url, child };
}

const side = (label: string, command: string, ms: number[], extra: Record<string, unknown> = {}): Side => {
  const s = summarize(ms);
  return { label, command, unit: 'ms', median: round(s.median, 1), p95: round(s.p95, 1), n: ms.length, extra };
};

/** Steps that clone `url` (bare, quiet) into a fresh directory, for timedSteps. */
const cloneStep = (url: string, dest: string) => `rm -rf ${sq(dest)}\ngit -c protocol.version=2 clone -q --bare ${sq(url)} ${sq(dest)}`;

export const w14: Workload = {
  id: 'W14',
  title: 'git over HTTP',
  // W14·mem clones W9's large repository.
  needs: ['W9'],
  async seed(ctx) {
    await createRepo(ctx, REPO);
    const api = ctx.newApi(1);
    const rng = new Rng(1401);
    const pages = ctx.scale.w14Pages;
    try {
      for (let start = 0; start < pages; start += ctx.scale.w9Batch) {
        const files = [];
        for (let i = start; i < Math.min(pages, start + ctx.scale.w9Batch); i++) files.push(growthPage(rng, i));
        const r = await api.json<PushResponse>('POST', `/v1/repos/${REPO}/sync/push`, pushBody(`seed ${REPO} ${start}`, files));
        if (r.data.pushed.length !== files.length) throw new Error(`W14 seed: pushed ${r.data.pushed.length} of ${files.length}`);
      }
    } finally {
      api.close();
    }
  },
  async measure(ctx) {
    const { w14Pages, w14Reps, w14FetchReps } = ctx.scale;
    const ref = await startReference(join(ctx.dataRoot, 'repos'));
    const scratch = join(ctx.work, 'w14');
    const ours = `${ctx.server().url.replace('://', `://kr:${ctx.apiKey}@`)}/v1/repos/${REPO}.git`;
    const theirs = `${ref.url}/${REPO}.git`;
    try {
      // Clones, alternating: ours, git's, ours, …
      const steps: string[] = [];
      for (let i = 0; i < w14Reps + 1; i++) steps.push(cloneStep(ours, join(scratch, 'ours.git')), cloneStep(theirs, join(scratch, 'theirs.git')));
      const cloned = await timedSteps(join(scratch, 'x'), steps, scratch);
      const oursMs = cloned.ms.filter((_, i) => i % 2 === 0).slice(1);
      const theirsMs = cloned.ms.filter((_, i) => i % 2 === 1).slice(1);
      const packOf = async (dir: string) =>
        (await timedSteps(join(dir), [`echo "R $(du -sk ${sq(join(dir, 'objects/pack'))} | cut -f1)"`], scratch)).values[0];
      const oursKb = Number(await packOf(join(scratch, 'ours.git')));
      const theirsKb = Number(await packOf(join(scratch, 'theirs.git')));
      ctx.log(`W14: clones done (ours p50 ${round(summarize(oursMs).median, 1)} ms, git's ${round(summarize(theirsMs).median, 1)} ms)`);

      // Fetches of one new commit: a clone from each server, then push one page through the API and fetch it
      // into both, in turn.
      await timedSteps(join(scratch, 'x'), [cloneStep(ours, join(scratch, 'f-ours.git')), cloneStep(theirs, join(scratch, 'f-theirs.git'))], scratch);
      const api = ctx.api();
      const rng = new Rng(1402);
      const fetchOurs: number[] = [];
      const fetchTheirs: number[] = [];
      // The server's part alone: the same one-commit fetch as one request (want the new head, have the old one).
      const requestMs: number[] = [];
      const pkt = (text: string) => `${(Buffer.byteLength(text) + 4).toString(16).padStart(4, '0')}${text}`;
      const timeRequest = async (want: string, have: string) => {
        const t = performance.now();
        const res = await fetch(`${ctx.server().url}/v1/repos/${REPO}.git/git-upload-pack`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ctx.apiKey}`, 'git-protocol': 'version=2' },
          body: `${pkt('command=fetch\n')}0001${pkt('no-progress\n')}${pkt(`want ${want}\n`)}${pkt(`have ${have}\n`)}${pkt('done\n')}0000`,
        });
        const bytes = (await res.arrayBuffer()).byteLength;
        if (res.status !== 200 || bytes < 32) throw new Error(`W14: fetch request → ${res.status}, ${bytes} bytes`);
        return performance.now() - t;
      };
      let previous = (await api.json<{ commits: Array<{ sha: string }> }>('GET', `/v1/repos/${REPO}/timeline?limit=1`)).data.commits[0]!.sha;
      const fetchStep = (dir: string) => `git --git-dir ${sq(dir)} -c protocol.version=2 fetch -q origin '+refs/heads/*:refs/heads/*'`;
      for (let i = 0; i < w14FetchReps + 1; i++) {
        const page = growthPage(rng, i * 37);
        const r = await api.json<PushResponse>('POST', `/v1/repos/${REPO}/sync/push`, pushBody(`W14 fetch ${i}`, [page]));
        if (r.data.pushed.length !== 1) throw new Error('W14: the one-page push changed nothing');
        const requested = await timeRequest(r.data.new_head, previous);
        previous = r.data.new_head;
        const order = i % 2 === 0 ? ['ours', 'theirs'] : ['theirs', 'ours'];
        const t = await timedSteps(join(scratch, 'x'), order.map((w) => fetchStep(join(scratch, `f-${w}.git`))), scratch);
        if (i === 0) continue;
        requestMs.push(requested);
        order.forEach((w, k) => (w === 'ours' ? fetchOurs : fetchTheirs).push(t.ms[k]!));
      }
      const check = await timedSteps(
        join(scratch, 'x'),
        [`echo "R $(git --git-dir ${sq(join(scratch, 'f-ours.git'))} rev-parse main) $(git --git-dir ${sq(repoDir(ctx, REPO))} rev-parse main)"`],
        scratch,
      );
      const [a, b] = check.values[0]!.split(' ');
      if (a !== b) throw new Error(`W14: the fetched head ${a} is not the server's ${b}`);

      const clone = side(`git clone --bare of ${w14Pages.toLocaleString('en-US')} pages from kr (v2)`, `git -c protocol.version=2 clone -q --bare ${REPO_URL_NOTE}`, oursMs, { pack_kib: oursKb });
      const refClone = side(`the same from git http-backend on loopback`, `git -c protocol.version=2 clone -q --bare http://127.0.0.1:‹port›/${REPO}.git`, theirsMs, { pack_kib: theirsKb });
      const ratio = ratioOf(clone.median, refClone.median);
      const rows: Row[] = [
        {
          id: 'W14',
          title: `git clone, ${w14Pages.toLocaleString('en-US')} pages`,
          ours: clone,
          reference: refClone,
          ratio,
          ratioBasis: 'p50/p50',
          target: { text: `p50 ≤ ${CLONE_TARGET}× git's`, met: atMost(ratio, CLONE_TARGET) },
          notes: ['The same bare repository, served by each; clones alternate. git http-backend sends deltas (a smaller pack); kr sends whole objects.'],
        },
      ];
      const request = summarize(requestMs);
      const fetchSide = side('git fetch of one new commit from kr', `git fetch (after a one-page push through the API)`, fetchOurs, {
        server_request_ms: { p50: round(request.median, 1), p95: round(request.p95, 1), n: requestMs.length },
      });
      rows.push({
        id: 'W14·fetch',
        title: `git fetch of one new commit, ${w14Pages.toLocaleString('en-US')} pages`,
        ours: fetchSide,
        reference: side('the same from git http-backend', 'git fetch from git http-backend on loopback, same commit', fetchTheirs),
        ratio: ratioOf(fetchSide.median, summarize(fetchTheirs).median),
        ratioBasis: 'p50/p50 (the target is absolute)',
        target: { text: `p50 ≤ ${FETCH_TARGET_MS} ms`, met: fetchSide.median <= FETCH_TARGET_MS },
        notes: [`git client wall time, process start and its requests included; the fetch request alone (want the new head, have the old): p50 ${round(request.median, 1)} ms, p95 ${round(request.p95, 1)} ms.`],
      });

      // W14·mem: a clone of W9's large repository, the server's peak RSS above its RSS before.
      const large = `w9-${ctx.scale.w9Pages[1]}`;
      const largeUrl = `${ctx.server().url.replace('://', `://kr:${ctx.apiKey}@`)}/v1/repos/${large}.git`;
      const above: number[] = [];
      const ms: number[] = [];
      for (let i = 0; i < 2; i++) {
        const before = ctx.resetPeak().rssKb;
        const t = await timedSteps(join(scratch, 'x'), [cloneStep(largeUrl, join(scratch, 'large.git'))], scratch);
        above.push((ctx.server().memory().peakKb - before) / 1024);
        ms.push(t.ms[0]!);
      }
      const worst = Math.max(...above);
      rows.push({
        id: 'W14·mem',
        title: `git clone of ${ctx.scale.w9Pages[1].toLocaleString('en-US')} pages, peak RSS above the server's RSS before it`,
        ours: {
          label: `highest of ${above.length} clones`,
          command: '/proc/‹server pid›/status: VmRSS before, VmHWM reset before and read after git clone --bare',
          unit: 'MiB',
          median: round(worst, 1),
          p95: round(worst, 1),
          n: above.length,
          extra: { each_mib: above.map((x) => round(x, 1)), clone_ms: ms.map((x) => round(x, 0)) },
        },
        reference: limitSide('the target', MEM_TARGET_MIB, 'MiB'),
        ratio: ratioOf(worst, MEM_TARGET_MIB),
        ratioBasis: 'MiB / limit',
        target: { text: `≤ ${MEM_TARGET_MIB} MiB`, met: worst <= MEM_TARGET_MIB },
        notes: [],
      });
      return rows;
    } finally {
      ref.child.stdin!.end();
      ref.child.kill();
    }
  },
};

const REPO_URL_NOTE = `http://kr:‹key›@127.0.0.1:‹port›/v1/repos/${REPO}.git`;
