import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { makePage, Rng, type PageModel } from '../content.ts';
import { Api, encodePath, pushBody, type PushBody, type PushResponse } from '../http.ts';
import { measureFlushChain, type FlushChainSizes, type FlushChainTimes } from '../floor.ts';
import { startHonoReference } from '../procs.ts';
import { copyRepo, GIT_FSYNC_CONFIG, PlumbingCommitter } from '../git.ts';
import { summarize, round } from '../stats.ts';
import { TARGETS, atMost, ratioOf } from '../targets.ts';
import { createRepo, repoDir, type Row, type Side, type Workload } from './types.ts';

/** W1 push-one, W2 push-batch, W7 concurrent push: the service's pushes against plumbing commits. */

/** Untimed W1-shaped pushes before W1's timed ones. */
const W1_WARMUP = 50;
/** Untimed pushes of each W7 client before the timed round. */
const W7_WARMUP = 5;

const PLUMBING_ONE =
  'bash, timed per commit with $EPOCHREALTIME: git hash-object -w --stdin; git mktree (one per tree level); git commit-tree <tree> -p <head> -m <msg>; git update-ref refs/heads/main <new> <old>';

function plumbingSide(label: string, command: string, ms: number[], extra?: Record<string, unknown>): Side {
  const s = summarize(ms);
  return { label, command, unit: 'ms', median: s.median, p95: s.p95, n: s.n, extra: { mean: s.mean, total_ms: s.total, ...extra } };
}

interface W1State {
  pages: PageModel[];
  paths: string[];
  shas: string[];
  refCopy: string;
  /** A second copy for the context run with git's fsync settings. */
  refCopyFsync: string;
}

export const w1: Workload = {
  id: 'W1',
  title: 'push-one',
  async seed(ctx) {
    const { w1Pages } = ctx.scale;
    await createRepo(ctx, 'w1');
    const rng = new Rng(101);
    const pages = Array.from({ length: w1Pages }, (_, i) => makePage(rng, `W1 page ${i + 1}`));
    const paths = pages.map((_, i) => `pages/page-${String(i + 1).padStart(2, '0')}.md`);
    const { data } = await ctx.api().json<PushResponse>(
      'POST',
      '/v1/repos/w1/sync/push',
      pushBody('seed W1', pages.map((p, i) => ({ path: paths[i]!, content: p.render() }))),
    );
    const shas = paths.map((p) => data.pushed.find((x) => x.path === p)!.sha);
    const refCopy = await copyRepo(repoDir(ctx, 'w1'), join(ctx.work, 'ref-w1.git'));
    const refCopyFsync = await copyRepo(repoDir(ctx, 'w1'), join(ctx.work, 'ref-w1-fsync.git'));
    ctx.shared.set('w1', { pages, paths, shas, refCopy, refCopyFsync } satisfies W1State);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w1') as W1State;
    const rng = new Rng(102);
    const ms: number[] = [];
    const commits: Array<{ path: string; content: string }> = [];
    const contents = Array.from({ length: ctx.scale.w1Pushes }, (_, i) => st.pages[i % st.pages.length]!.touch(rng, i));
    const bodyOf = (i: number, parentSha: string) =>
      pushBody(`W1 update ${i}`, [{ path: st.paths[i % st.pages.length]!, content: contents[i]!, parent_sha: parentSha }]);
    // The floor's parts: W1's bodies (a sha of the same length as the real parents) through a bare Hono
    // route, and half the disk chains, before the pushes; the other half after them, before git's runs.
    const floorRun = await startW1Floor(ctx, contents.map((_, i) => bodyOf(i, '0'.repeat(40))), st.pages.length);
    const api = ctx.api();
    // Untimed pushes first: the server's code is compiled and optimised by them, as in a server that has
    // been running (W1 is the first workload after a start). Their commits are not in the reference's run.
    const warmRng = new Rng(101);
    for (let i = 0; i < W1_WARMUP; i++) {
      const k = i % st.pages.length;
      const body = pushBody(`W1 warm-up ${i}`, [{ path: st.paths[k]!, content: st.pages[k]!.touch(warmRng, i), parent_sha: st.shas[k]! }]);
      const r = await api.json<PushResponse>('POST', '/v1/repos/w1/sync/push', body);
      st.shas[k] = r.data.pushed[0]!.sha;
    }
    for (let i = 0; i < ctx.scale.w1Pushes; i++) {
      const k = i % st.pages.length;
      const r = await api.json<PushResponse>('POST', '/v1/repos/w1/sync/push', bodyOf(i, st.shas[k]!));
      if (r.data.conflicts.length) throw new Error(`W1: unexpected conflict on ${st.paths[k]}`);
      st.shas[k] = r.data.pushed[0]!.sha;
      ms.push(r.ms);
      commits.push({ path: st.paths[k]!, content: contents[i]! });
    }
    const floor = await floorRun.finish();
    ctx.log(`W1: ${ms.length} pushes done, floor measured; reference on a copy`);
    const ref = await PlumbingCommitter.open(st.refCopy, join(ctx.work, 'scratch-w1'));
    for (const [i, c] of commits.entries()) await ref.plan([c], `W1 update ${i}`);
    const refMs = await ref.run();
    // Context: the same commits with git made durable (the service fsyncs every object and the ref).
    const durable = await PlumbingCommitter.open(st.refCopyFsync, join(ctx.work, 'scratch-w1-fsync'), GIT_FSYNC_CONFIG);
    for (const [i, c] of commits.entries()) await durable.plan([c], `W1 update ${i}`);
    const durableSide = plumbingSide('git plumbing commit, fsync on', `${PLUMBING_ONE}; with -c ${GIT_FSYNC_CONFIG.join(' -c ')}`, await durable.run());
    const ours = summarize(ms);
    const refSide = plumbingSide('git plumbing commit', PLUMBING_ONE, refMs);
    const floorR = floorRow(floor, refSide, ours.median);
    const oursSide: Side = {
      label: 'POST /sync/push, 1 file',
      command: 'POST /v1/repos/w1/sync/push {"files":[{"path","content","parent_sha"}]}',
      unit: 'ms',
      median: ours.median,
      p95: ours.p95,
      n: ours.n,
      extra: { mean: ours.mean, first_ms: round(ms[0]!), total_ms: ours.total },
    };
    const overFloor = ratioOf(ours.median, floorR.ours.median);
    return [
      {
        id: 'W1',
        title: `push-one (${ms.length} sequential pushes, 1 of ${st.pages.length} pages, parent_sha)`,
        ours: oursSide,
        reference: { ...floorR.ours, label: "W1·floor: a bare Hono round trip of W1's bodies + a push's disk steps" },
        ratio: overFloor,
        ratioBasis: 'p50 / W1·floor p50',
        target: { text: `p50 ≤ ${TARGETS.w1OverFloor}× W1·floor`, met: atMost(overFloor, TARGETS.w1OverFloor) },
        notes: [
          `${round(ours.median - floorR.ours.median, 2)} ms above the floor; the service fsyncs each object, its directory, the ref and the database`,
          `${W1_WARMUP} untimed pushes before the ${ms.length} timed ones`,
        ],
      },
      {
        id: 'W1·git',
        title: 'W1 against a git plumbing commit with git\'s defaults, no fsync (context)',
        ours: { label: oursSide.label, command: 'as W1', unit: 'ms', median: ours.median, p95: ours.p95, n: ours.n },
        reference: refSide,
        ratio: ours.median / refSide.median,
        ratioBasis: 'p50/p50',
        target: { text: '(context)', met: null },
        notes: [],
      },
      {
        id: 'W1·ctx',
        title: 'W1 against the same plumbing with git fsyncing objects and refs (context only)',
        ours: { label: 'POST /sync/push, 1 file', command: 'as W1', unit: 'ms', median: ours.median, p95: ours.p95, n: ours.n },
        reference: durableSide,
        ratio: ours.median / durableSide.median,
        ratioBasis: 'p50/p50',
        target: { text: '(context)', met: null },
        notes: [],
      },
      floorR,
    ];
  },
};


interface W1Floor {
  /** Per push, the bare Hono round trip, ms. */
  http: number[];
  /** The disk chains run before W1's pushes, and after them. */
  before: FlushChainTimes;
  after: FlushChainTimes;
  sizes: FlushChainSizes;
}

/**
 * A W1 push's pack, estimated from its page: the page as a blob, the directory's tree of `pages` entries and
 * the root tree (their object ids random, so they do not compress), a commit, each deflated. Its index: the
 * fan-out table, and an id, a CRC and an offset for each of the four objects.
 */
function w1PackSizes(content: string, pages: number): FlushChainSizes {
  const obj = (type: string, body: Buffer) => deflateSync(Buffer.concat([Buffer.from(`${type} ${body.length}\0`), body])).length + 3;
  const entry = (name: string) => Buffer.concat([Buffer.from(`100644 ${name}\0`), randomBytes(20)]);
  const dirTree = Buffer.concat(Array.from({ length: pages }, (_, i) => entry(`page-${String(i + 1).padStart(2, '0')}.md`)));
  const commit = Buffer.from(`tree ${'a'.repeat(40)}\nparent ${'b'.repeat(40)}\nauthor Bench <bench@example.invalid> 1700000000 +0000\ncommitter Bench <bench@example.invalid> 1700000000 +0000\n\nW1 update 1\n`);
  const packBytes = 12 + obj('blob', Buffer.from(content)) + obj('tree', dirTree) + obj('tree', entry('pages')) + obj('commit', commit) + 20;
  const objects = 4;
  // The index batch: about eight 4 KiB pages of git_commits, git_head, git_changes and activity, each a
  // 4,120-byte frame of the log (measured: 35 KB a push over 50 W1-shaped pushes).
  return { packBytes, idxBytes: 8 + 256 * 4 + objects * (20 + 4 + 4) + 40, walBytes: 8 * 4120 };
}

/**
 * W1·floor's two parts over W1's own push bodies: the bare Hono round trips and the first half of the disk
 * chains now, the second half in `finish` (after the pushes).
 */
async function startW1Floor(ctx: Parameters<Workload['measure']>[0], bodies: PushBody[], pages: number): Promise<{ finish(): Promise<W1Floor> }> {
  const pageFile = join(ctx.work, 'w1-floor-page.md');
  await writeFile(pageFile, '# floor\n');
  const hono = await startHonoReference(pageFile, join(ctx.work, 'hono-floor.log'), { bundle: await ctx.honoBundle() });
  const http: number[] = [];
  try {
    const client = new Api(hono.url, 'floor');
    try {
      for (const b of bodies.slice(0, 20)) await client.json('POST', '/echo', b);
      for (const b of bodies) http.push((await client.json('POST', '/echo', b)).ms);
    } finally {
      client.close();
    }
  } finally {
    await hono.stop();
  }
  const sizes = w1PackSizes(bodies[0]!.files[0]!.content, pages);
  const half = Math.ceil(bodies.length / 2);
  const before = await measureFlushChain(ctx.dataRoot, half, sizes);
  return {
    finish: async () => ({ http, before, after: await measureFlushChain(ctx.dataRoot, bodies.length - half, sizes), sizes }),
  };
}

function floorRow(f: W1Floor, plumbing: Side, oursMedian: number): Row {
  const disk = (k: keyof FlushChainTimes) => [...f.before[k], ...f.after[k]];
  const total = disk('total');
  const s = summarize(f.http.map((h, i) => h + total[i]!));
  const p50 = (xs: number[]) => round(summarize(xs).median);
  const target = round(TARGETS.w1OverFloor * s.median);
  return {
    id: 'W1·floor',
    title: 'the floor of a durable one-page push here: a bare Hono round trip of W1\'s bodies + a push\'s disk steps, no other work (context)',
    ours: {
      label: 'floor: HTTP round trip + disk chain',
      command: 'POST /echo on bench/hono-ref.ts with each W1 body; then bench/floor.ts: create, write and fdatasync pack, idx and ref lock, and write and fdatasync the database log frames, at once; rename pack and idx, fsync objects/pack; rename the lock over the ref, fsync refs/heads',
      unit: 'ms',
      median: s.median,
      p95: s.p95,
      n: s.n,
      extra: {
        http_p50_ms: p50(f.http),
        disk_p50_ms: p50(total),
        disk_p50_before_after_ms: [p50(f.before.total), p50(f.after.total)],
        disk_steps_p50_ms: { files: p50(disk('files')), pack_dir: p50(disk('packDir')), ref: p50(disk('ref')) },
        pack_bytes: f.sizes.packBytes,
        idx_bytes: f.sizes.idxBytes,
        wal_bytes: f.sizes.walBytes,
        w1_above_floor_ms: round(oursMedian - s.median),
        w1_target_ms: target,
      },
    },
    reference: plumbing,
    ratio: s.median / plumbing.median,
    ratioBasis: 'p50/p50',
    target: { text: '(context: W1 cannot go below it)', met: null },
    notes: [
      `HTTP ${p50(f.http)} ms + disk ${p50(total)} ms (files ${p50(disk('files'))}, pack directory ${p50(disk('packDir'))}, ref ${p50(disk('ref'))}); W1's target is ${target} ms, W1 is ${round(oursMedian - s.median)} ms above the floor`,
    ],
  };
}

interface W2State {
  refCopy: string;
}

export const w2: Workload = {
  id: 'W2',
  title: 'push-batch',
  async seed(ctx) {
    await createRepo(ctx, 'w2');
    const rng = new Rng(201);
    const files = Array.from({ length: 20 }, (_, i) => ({ path: `notes/note-${i + 1}.md`, content: makePage(rng, `Note ${i + 1}`).render() }));
    await ctx.api().json<PushResponse>('POST', '/v1/repos/w2/sync/push', pushBody('seed W2', files));
    ctx.shared.set('w2', { refCopy: await copyRepo(repoDir(ctx, 'w2'), join(ctx.work, 'ref-w2.git')) } satisfies W2State);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w2') as W2State;
    const { w2Pages, w2Pushes } = ctx.scale;
    const rng = new Rng(202);
    const batches = Array.from({ length: w2Pushes }, (_, b) =>
      Array.from({ length: w2Pages }, (_, i) => ({
        path: `batch-${b + 1}/page-${String(i + 1).padStart(3, '0')}.md`,
        content: makePage(rng, `Batch ${b + 1} page ${i + 1}`).render(),
      })),
    );
    const bytes = batches[0]!.reduce((a, f) => a + Buffer.byteLength(f.content), 0);
    const ms: number[] = [];
    for (const [b, files] of batches.entries()) {
      const r = await ctx.api().json<PushResponse>('POST', '/v1/repos/w2/sync/push', pushBody(`W2 batch ${b + 1}`, files));
      if (r.data.pushed.length !== files.length) throw new Error(`W2: pushed ${r.data.pushed.length} of ${files.length}`);
      ms.push(r.ms);
    }
    const ref = await PlumbingCommitter.open(st.refCopy, join(ctx.work, 'scratch-w2'));
    for (const [b, files] of batches.entries()) await ref.plan(files, `W2 batch ${b + 1}`);
    const refMs = await ref.run();
    const ours = summarize(ms);
    const refSide = plumbingSide(
      `git plumbing commit of ${w2Pages} files`,
      'bash, timed per commit: git hash-object -w --stdin-paths (files written beforehand, untimed); git mktree (one per tree level); git commit-tree; git update-ref',
      refMs,
    );
    return [
      {
        id: 'W2',
        title: `push-batch (${w2Pages} new pages of 2–4 KB in one push, ×${ms.length})`,
        ours: {
          label: `POST /sync/push, ${w2Pages} files`,
          command: `POST /v1/repos/w2/sync/push with ${w2Pages} files (${Math.round(bytes / 1024)} KiB of content)`,
          unit: 'ms',
          median: ours.median,
          p95: ours.p95,
          n: ours.n,
          extra: { mean: ours.mean, all_ms: ms.map((x) => round(x)) },
        },
        reference: refSide,
        ratio: ours.median / refSide.median,
        ratioBasis: 'p50/p50',
        target: { text: '—', met: null },
        notes: [],
      },
    ];
  },
};

interface W7State {
  pages: PageModel[];
  paths: string[];
  shas: string[];
  refCopy: string;
}

export const w7: Workload = {
  id: 'W7',
  title: 'concurrent push',
  async seed(ctx) {
    await createRepo(ctx, 'w7');
    const rng = new Rng(701);
    const n = ctx.scale.w7Clients;
    const pages = Array.from({ length: n }, (_, i) => makePage(rng, `Client ${i + 1}`));
    const paths = pages.map((_, i) => `clients/client-${String(i + 1).padStart(2, '0')}.md`);
    const { data } = await ctx.api().json<PushResponse>(
      'POST',
      '/v1/repos/w7/sync/push',
      pushBody('seed W7', pages.map((p, i) => ({ path: paths[i]!, content: p.render() }))),
    );
    const shas = paths.map((p) => data.pushed.find((x) => x.path === p)!.sha);
    ctx.shared.set('w7', { pages, paths, shas, refCopy: await copyRepo(repoDir(ctx, 'w7'), join(ctx.work, 'ref-w7.git')) } satisfies W7State);
  },
  async measure(ctx) {
    const st = ctx.shared.get('w7') as W7State;
    const { w7Clients, w7Updates } = ctx.scale;
    // Contents are drawn up front so both sides commit the same bytes.
    const rng = new Rng(702);
    const updates = st.pages.map((p, c) => Array.from({ length: w7Updates }, (_, u) => p.touch(rng, c + u)));
    const ms: number[] = [];
    const order: Array<{ path: string; content: string }> = [];
    let retries = 0;
    // An untimed round first, the same clients pushing W7_WARMUP updates each: the server's code is compiled
    // and optimised by it, as in a server that has been running (W7 follows a restart in a full run). Its
    // commits are not in the reference's run.
    const warmRng = new Rng(701);
    await Promise.all(
      st.pages.map(async (p, c) => {
        const api = ctx.newApi(1);
        try {
          for (let u = 0; u < W7_WARMUP; u++) {
            const body = pushBody(`W7 warm-up ${c + 1}.${u + 1}`, [{ path: st.paths[c]!, content: p.touch(warmRng, c * 100 + u), parent_sha: st.shas[c] }]);
            const r = await api.send('POST', '/v1/repos/w7/sync/push', body);
            if (r.status !== 200) throw new Error(`W7: warm-up push → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
            st.shas[c] = (JSON.parse(r.body.toString('utf8')) as PushResponse).pushed[0]!.sha;
          }
        } finally {
          api.close();
        }
      }),
    );
    const started = performance.now();
    await Promise.all(
      updates.map(async (contents, c) => {
        const api = ctx.newApi(1);
        try {
          for (const [u, content] of contents.entries()) {
            for (;;) {
              const r = await api.send(
                'POST',
                '/v1/repos/w7/sync/push',
                pushBody(`W7 client ${c + 1} update ${u + 1}`, [{ path: st.paths[c]!, content, parent_sha: st.shas[c] }]),
              );
              if (r.status === 409 && r.body.toString('utf8').includes('concurrent update')) {
                retries++;
                continue;
              }
              if (r.status !== 200) throw new Error(`W7: push → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
              const body = JSON.parse(r.body.toString('utf8')) as PushResponse;
              st.shas[c] = body.pushed[0]!.sha;
              ms.push(r.ms);
              order.push({ path: st.paths[c]!, content });
              break;
            }
          }
        } finally {
          api.close();
        }
      }),
    );
    const wall = performance.now() - started;
    const commits = order.length;
    // Nothing lost: every page reads back as its client's last update.
    let lost = 0;
    for (const [c, contents] of updates.entries()) {
      const r = await ctx.api().send('GET', `/v1/repos/w7/pages/${encodePath(st.paths[c]!)}`);
      if (r.status !== 200 || r.body.toString('utf8') !== contents[contents.length - 1]) lost++;
    }
    if (lost) throw new Error(`W7: ${lost} of ${updates.length} pages do not read back as their last update`);
    ctx.log(`W7: ${commits} pushes by ${w7Clients} clients in ${Math.round(wall)} ms; reference on a copy`);
    const ref = await PlumbingCommitter.open(st.refCopy, join(ctx.work, 'scratch-w7'));
    for (const [i, c] of order.entries()) await ref.plan([c], `W7 commit ${i + 1}`);
    const refMs = await ref.run();
    // One after another, so the sequence's wall time is the sum of its commits.
    const refWall = refMs.reduce((a, b) => a + b, 0);
    const ours = summarize(ms);
    const refSide = plumbingSide(`${commits} git plumbing commits, one after another`, PLUMBING_ONE, refMs, { wall_ms: round(refWall) });
    const ratio = wall / refWall;
    const pushesPerS = (commits / wall) * 1000;
    const refPerS = (commits / refWall) * 1000;
    return [
      {
        id: 'W7',
        title: `concurrent push (${w7Clients} clients × ${w7Updates} updates of their own page), wall time`,
        ours: {
          label: `${w7Clients} keep-alive clients pushing at once: wall time`,
          command: 'POST /v1/repos/w7/sync/push, 1 file with parent_sha, per client sequentially, clients in parallel',
          unit: 'ms',
          median: round(wall),
          p95: Number.NaN,
          n: 1,
          extra: { wall_ms: round(wall), pushes_per_s: round(pushesPerS, 1), retries_after_409: retries, latency_p50_ms: ours.median, latency_p95_ms: ours.p95 },
        },
        reference: { ...refSide, label: `${commits} git plumbing commits, one after another: total`, median: round(refWall), p95: Number.NaN, n: 1 },
        ratio,
        ratioBasis: `wall time for all ${commits} commits`,
        target: { text: `wall ≤ ${TARGETS.w7Wall}×, 0 errors, 0 lost`, met: ratio <= TARGETS.w7Wall },
        notes: [
          `wall time ${Math.round(wall)} ms vs ${Math.round(refWall)} ms for the same ${commits} commits through plumbing; ${retries} retries after 409`,
          `after an untimed round of ${W7_WARMUP} pushes per client`,
        ],
      },
      {
        id: 'W7·lat',
        title: 'W7: each push\'s latency under contention (p50, p95) and throughput',
        ours: {
          label: `POST /sync/push under contention (${round(pushesPerS, 1)} push/s)`,
          command: 'as W7; latency of each answered push',
          unit: 'ms',
          median: ours.median,
          p95: ours.p95,
          n: ours.n,
          extra: { mean: ours.mean, pushes_per_s: round(pushesPerS, 1) },
        },
        reference: { ...refSide, label: `one git plumbing commit (${round(refPerS, 1)} commit/s in sequence)` },
        ratio: pushesPerS / refPerS,
        ratioBasis: 'throughput, push/s ÷ commit/s, higher is better',
        target: { text: '(measured)', met: null },
        notes: [],
      },
    ];
  },
};
