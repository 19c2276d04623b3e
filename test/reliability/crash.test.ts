import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { tempDir } from '../helpers/env.ts';
import { call, logProblems, spawnServer, type ServerProc } from './helpers/server-process.ts';
import { catFiles, fsckStrict, git, pool, repoDirs, revList } from './helpers/git.ts';
import { rng, seedFor } from './helpers/prng.ts';

/**
 * Crash safety of a real server process: under concurrent HTTP push load (legacy key and a user's PAT,
 * existing repositories and one created by its first push in each cycle; enough pushes to one repository
 * at once that they are committed in groups), the process is killed with
 * SIGKILL at a random moment, CYCLES times. After each kill, before any recovery:
 *  - every repository the cycle wrote to passes `git fsck --strict` as the kill left it;
 *  - every push that had been answered 200 is in `git rev-list main`, with exactly the content sent;
 * and after each restart:
 *  - the server serves again (`/health`, the PAT still resolves), its recovery left no lock or temp file,
 *    `git fsck --strict` passes on every repository again;
 *  - through the API (pull, timeline — i.e. the derived index, re-levelled with git after the crash)
 *    every acknowledged page and commit is there.
 * At the end, the activity feed holds a push event for every acknowledged PAT push.
 */

const CYCLES = Number(process.env.RELIABILITY_KILL_CYCLES ?? 20);
const WORKERS = 6;
/**
 * More workers pushing to crash-a only, all the time: pushes queue behind its writer and are committed as
 * groups (lib/repo/repo-store.ts), so kills land in the middle of a group — some of its pushes built, its
 * objects half written, its branch move or its database batch not yet made.
 */
const GROUP_WORKERS = 4;
const SEED = seedFor('crash', 0xc0ffee);

interface Ack {
  repo: string;
  sha: string;
  path: string;
  content: string;
  viaPat: boolean;
  cycle: number;
}

let idp: IdpStandIn;
let dir: { path: string; cleanup: () => Promise<void> };
let server: ServerProc | null = null;
let pat = '';
const dataRoot = () => join(dir.path, 'data');
const gitdir = (repo: string) => join(dataRoot(), 'repos', `${repo}.git`);
const figures = { statuses: new Map<number, number>(), cycles: 0, acked: 0, ackedViaPat: 0, unacknowledged: 0, killDelaysMs: [] as number[], startMs: [] as number[] };

/** Polls `done` every 20 ms until it holds; fails with `what` after `ms`. */
async function waitFor(done: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function start(): Promise<ServerProc> {
  const t0 = performance.now();
  const s = await spawnServer({
    dataRoot: dataRoot(),
    env: { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer },
  });
  figures.startMs.push(Math.round(performance.now() - t0));
  return s;
}

beforeAll(async () => {
  idp = await startIdp();
  dir = await tempDir('kr-crash-');
  server = await start();
  const idToken = await idp.signIdToken({ sub: 'pusher', email: 'pusher@example.test', name: 'Pusher' });
  const session = (await (await call(server.url, '/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } })).json()) as {
    access_token: string;
  };
  const minted = await call(server.url, '/v1/pats', { method: 'POST', token: session.access_token, json: { label: 'crash' } });
  expect(minted.status).toBe(201);
  pat = ((await minted.json()) as { token: string }).token;
  expect((await call(server.url, '/v1/repos', { method: 'POST', token: pat, json: { id: 'crash-a' } })).status).toBe(201);
  expect((await call(server.url, '/v1/repos/crash-b', { method: 'POST' })).status).toBe(201);
}, 120_000);

afterAll(async () => {
  await server?.kill();
  await idp?.close();
  await dir?.cleanup();
});

/**
 * One worker: pushes until `stop()` is true. Each push writes a page no other push writes (so its content
 * can be checked for ever after) and overwrites the worker's shared page; every third push also deletes
 * the previous shared page of a sibling path.
 */
async function worker(cycle: number, w: number, r: ReturnType<typeof rng>, stop: () => boolean, acks: Ack[], problems: string[]) {
  const viaPat = w % 3 === 2;
  const repos = w >= WORKERS ? ['crash-a'] : viaPat ? ['crash-a', `crash-new-${cycle}`] : ['crash-a', 'crash-b'];
  for (let n = 0; !stop(); n++) {
    const repo = r.pick(repos);
    const path = `log/c${cycle}/w${w}-${n}.md`;
    const content = `---\ncycle: ${cycle}\n---\n## Push ${n}\n${r.str(r.int(0, 2000))}\n`;
    const files: Array<Record<string, unknown>> = [
      { path, content },
      { path: `shared/w${w}.md`, content: `## Latest\nc${cycle} n${n}\n` },
    ];
    if (n % 3 === 2) files.push({ path: `shared/w${w}-old.md`, delete: true });
    else files.push({ path: `shared/w${w}-old.md`, content: `old ${n}\n` });
    let res: Response;
    try {
      res = await call(server!.url, `/v1/repos/${repo}/sync/push`, {
        method: 'POST',
        token: viaPat ? pat : undefined,
        json: { files, message: `c${cycle} w${w} n${n}`, author_name: `Worker ${w}` },
      });
    } catch {
      figures.unacknowledged++;
      continue; // the kill landed: this push may or may not be in the history
    }
    let text = '';
    try {
      text = await res.text();
    } catch {
      figures.unacknowledged++;
      continue; // killed while the answer was in flight: not acknowledged
    }
    figures.statuses.set(res.status, (figures.statuses.get(res.status) ?? 0) + 1);
    if (res.status === 200) {
      const body = JSON.parse(text) as { new_head: string; pushed: Array<{ path: string; sha: string; unchanged?: boolean }> };
      const mine = body.pushed.find((p) => p.path === path);
      if (!mine || mine.unchanged || mine.sha !== body.new_head) problems.push(`push answered 200 without committing ${path}: ${text}`);
      else acks.push({ repo, sha: body.new_head, path, content, viaPat, cycle });
    } else {
      // Every answer but 200 is a failure: even a kill landing between creating the new repository
      // and recording its owner leaves the creator (kept in the repository's config) able to claim it.
      problems.push(`push to ${repo} answered ${res.status}: ${text}`);
    }
  }
}

/** fsck --strict on each of `repos` (all of them when omitted). */
async function fsckAll(label: string, repos?: string[]) {
  const dirs = repos ? repos.map((r) => `${r}.git`) : await repoDirs(dataRoot());
  await pool(dirs, 2, async (d) => {
    await fsckStrict(join(dataRoot(), 'repos', d)).catch((e: Error) => {
      throw new Error(`${label}: ${e.message}`);
    });
  });
}

/** Every acknowledged push to `repos` is in the repository's history, with exactly the content sent. */
async function verifyAcked(acks: Ack[], repos: string[], label: string) {
  await pool(repos, 2, async (repo) => {
    const list = acks.filter((a) => a.repo === repo);
    if (list.length === 0) return;
    const history = new Set(await revList(gitdir(repo)));
    const missing = list.filter((a) => !history.has(a.sha));
    expect(missing.map((a) => `${a.sha} ${a.path}`), `${label}: acknowledged pushes missing from ${repo}`).toEqual([]);
    const blobs = await catFiles(gitdir(repo), list.map((a) => `${a.sha}:${a.path}`));
    list.forEach((a, i) => expect(blobs[i]?.toString('utf8'), `${label}: ${a.sha}:${a.path}`).toBe(a.content));
  });
}

/** Through the restarted server: pages at head and the commit index hold every acknowledged push. */
async function verifyServed(acks: Ack[], label: string) {
  expect((await call(server!.url, '/health', { token: null })).status).toBe(200);
  expect((await call(server!.url, '/v1/me', { token: pat })).status, `${label}: PAT after restart`).toBe(200);
  const repos = new Set(acks.map((a) => a.repo));
  for (const repo of repos) {
    const pull = (await (await call(server!.url, `/v1/repos/${repo}/sync/pull`)).json()) as {
      new_head: string;
      files: Array<{ path: string; content: string }>;
    };
    expect(pull.new_head, `${label}: served head of ${repo}`).toBe((await git(gitdir(repo), 'rev-parse', 'refs/heads/main')).trim());
    const files = new Map(pull.files.map((f) => [f.path, f.content]));
    const wrong = acks.filter((a) => a.repo === repo && files.get(a.path) !== a.content);
    expect(wrong.map((a) => a.path), `${label}: pages of ${repo}`).toEqual([]);
    // The index (timeline: newest 1000 at most) is exactly git's history, including this cycle's commits.
    const timeline = (await (await call(server!.url, `/v1/repos/${repo}/timeline?limit=1000`)).json()) as { commits: Array<{ sha: string }> };
    expect(timeline.commits.map((c) => c.sha), `${label}: index of ${repo}`).toEqual((await revList(gitdir(repo))).slice(0, 1000));
  }
}

describe('SIGKILL under push load', () => {
  it(`${CYCLES} kill cycles lose no acknowledged push and leave every repository valid`, async () => {
    const r = rng(SEED);
    const acks: Ack[] = [];
    const problems: string[] = [];
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      let killed = false;
      const cycleAcks: Ack[] = [];
      const workers = Array.from({ length: WORKERS + GROUP_WORKERS }, (_, w) => worker(cycle, w, rng(r.int(0, 2 ** 31)), () => killed, cycleAcks, problems));
      // A random moment: early (mid-repository-creation, first pushes) to well into the load.
      const delay = r.weighted([
        [1, r.int(5, 60)],
        [3, r.int(60, 600)],
        [2, r.int(600, 1500)],
      ] as const);
      figures.killDelaysMs.push(delay);
      await new Promise((res) => setTimeout(res, delay));
      const victim = server!;
      killed = true; // no new push starts; those in flight are cut off by the kill
      await victim.kill();
      await Promise.all(workers);
      expect(logProblems(victim.events()), `cycle ${cycle}: server log`).toEqual([]);
      acks.push(...cycleAcks);
      figures.cycles++;

      // As the kill left them (before any recovery): the repositories this cycle wrote to.
      const touched = ['crash-a', 'crash-b', `crash-new-${cycle}`].filter((id) => existsSync(gitdir(id)));
      await fsckAll(`cycle ${cycle}, as killed`, touched);
      await verifyAcked(acks, touched, `cycle ${cycle}, as killed`);
      server = await start();
      // Recovery after boot (each repository before its first write, every one by the pass that follows the
      // start, logged as `recovered`) cleared whatever the kill left half-written.
      const restarted = server;
      await waitFor(() => restarted.events().some((e) => e.event === 'recovered'), 30_000, `cycle ${cycle}: the recovery pass`);
      for (const d of await repoDirs(dataRoot())) {
        const leftovers = [
          ...(await readdir(join(dataRoot(), 'repos', d, 'objects'))).filter((n) => n.startsWith('tmp_obj_')),
          ...(await readdir(join(dataRoot(), 'repos', d, 'refs', 'heads'))).filter((n) => n.endsWith('.lock') || n.endsWith('.replaced')),
        ];
        expect(leftovers, `cycle ${cycle}: leftovers in ${d}`).toEqual([]);
      }
      expect((await readdir(join(dataRoot(), 'repos'))).filter((n) => !n.endsWith('.git'))).toEqual([]);
      await fsckAll(`cycle ${cycle}, after restart`);
      await verifyServed(acks, `cycle ${cycle}`);
    }
    expect(problems).toEqual([]);

    // The database is as durable as git: every acknowledged PAT push left its activity event.
    for (const repo of new Set(acks.filter((a) => a.viaPat).map((a) => a.repo))) {
      const paths = new Set<string>();
      for (let offset = 0; ; offset += 500) {
        const feed = (await (await call(server!.url, `/v1/repos/${repo}/activity?limit=500&offset=${offset}`)).json()) as {
          events: Array<{ action: string; detail?: { paths?: string[] } }>;
        };
        for (const e of feed.events) if (e.action === 'push') for (const p of e.detail?.paths ?? []) paths.add(p);
        if (feed.events.length < 500) break;
      }
      // The feed keeps the newest 1000 events per repository: older acknowledged pushes may be pruned.
      const mine = acks.filter((a) => a.viaPat && a.repo === repo);
      const missing = mine.slice(-900).filter((a) => !paths.has(a.path));
      expect(missing.map((a) => a.path), `activity of ${repo}`).toEqual([]);
    }

    await server!.stop();
    server = null;
    await fsckAll('after the last graceful stop');
    await verifyAcked(acks, [...new Set(acks.map((a) => a.repo))], 'after the last graceful stop');

    figures.acked = acks.length;
    figures.ackedViaPat = acks.filter((a) => a.viaPat).length;
    // Enough acknowledged pushes for the test to mean something.
    expect(acks.length).toBeGreaterThanOrEqual(CYCLES * 2);
    console.log(
      `[reliability] crash: seed ${SEED}, ${figures.cycles} SIGKILL cycles, ${figures.acked} acknowledged pushes verified ` +
        `(${figures.ackedViaPat} via PAT), ${figures.unacknowledged} cut off by the kill; answers ` +
        `${[...figures.statuses].map(([k, v]) => `${k}×${v}`).join(' ')}; kill delays ms ` +
        `${Math.min(...figures.killDelaysMs)}..${Math.max(...figures.killDelaysMs)}; server start ms ` +
        `${Math.min(...figures.startMs)}..${Math.max(...figures.startMs)}`,
    );
  }, 240_000);
});
