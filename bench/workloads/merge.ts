import { Rng, sentence } from '../content.ts';
import { encodePath, pushBody, type Api, type PushBody } from '../http.ts';
import { round, summarize } from '../stats.ts';
import { TARGETS, atMost, ratioOf } from '../targets.ts';
import { createRepo, type Ctx, type Row, type Side, type Workload } from './types.ts';
import { mergePages } from '../../lib/core/differ/merge.ts';

/**
 * W7·page: clients × pushes, each client editing its own `## Client <n>` section of ONE shared
 * page of about 4 KB and tracking its parent (after each push it keeps the commit it got and the text that
 * was committed: its own, or the merged text the answer carries). With `"merge": "sections"` every stale
 * write is merged: 0 conflicts, 0 lost, every section's last write present. The same clients without
 * `merge` (the original's behaviour, on a second copy of the page, in the same run) get a 409 for every stale
 * write and recover as the original client does: take the page at head from the conflict, write the edit
 * into it again, push again; their 409s are counted. W7·merge: what mergePages costs on such a page (both
 * sides changing a different section), in CPU time of this process, against the push's own time.
 */

const MERGED_PATH = 'shared/merged.md';
const PLAIN_PATH = 'shared/plain.md';

const heading = (c: number) => `## Client ${c + 1}`;
const marker = (c: number, u: number) => `Last write: client ${c + 1} update ${u + 1}.`;

/** The shared page: frontmatter, a preamble, one section per client (a marker line, then filler), at least `minBytes`. */
export function sharedPage(clients: number, rng: Rng, minBytes = 4096): string {
  const intro = sentence(rng);
  const bodies = Array.from({ length: clients }, () => ['Last write: none.', sentence(rng)]);
  const render = () =>
    ['---', 'title: Shared page', 'type: note', 'tags: [bench, merge]', '---', '', '# Shared page', '', intro, '', ...bodies.flatMap((b, c) => [heading(c), '', ...b, ''])].join('\n');
  // Filler round-robin over the sections until the page reaches its size.
  for (let i = 0; Buffer.byteLength(render()) < minBytes; i++) bodies[i % clients]!.push(sentence(rng));
  return render();
}

/** `text` with client `c`'s marker line rewritten to its update `u`. Throws when the section is missing. */
export function editSection(text: string, c: number, u: number): string {
  const lines = text.split('\n');
  const h = lines.indexOf(heading(c));
  if (h < 0) throw new Error(`W7·page: no ${heading(c)} in the page`);
  for (let i = h + 1; i < lines.length && !lines[i]!.startsWith('## '); i++) {
    if (lines[i]!.startsWith('Last write:')) {
      lines[i] = marker(c, u);
      return lines.join('\n');
    }
  }
  throw new Error(`W7·page: no marker line in ${heading(c)}`);
}

/** How many clients' last writes the page lacks (each must carry `marker(c, updates - 1)` in its own section). */
export function missingWrites(text: string, clients: number, updates: number): number {
  const lines = text.split('\n');
  let missing = 0;
  for (let c = 0; c < clients; c++) {
    const h = lines.indexOf(heading(c));
    let found = false;
    for (let i = h + 1; h >= 0 && i < lines.length && !lines[i]!.startsWith('## '); i++) if (lines[i] === marker(c, updates - 1)) found = true;
    if (!found) missing++;
  }
  return missing;
}

interface PushAnswer {
  new_head: string;
  pushed: Array<{ path: string; sha: string; merged?: true; content?: string }>;
  conflicts: Array<{ path: string; current_sha: string; current_content: string; conflicting?: string[] }>;
}

interface RunResult {
  wallMs: number;
  latencies: number[];
  /** 409s that named the page as a conflict. */
  conflicts: number;
  /** 409 `concurrent update, retry` (no conflict: the push is sent again as it was). */
  retries: number;
  merged: number;
  missing: number;
}

/** Every client pushes its `updates` edits to `path`, all clients at once; see the module comment. */
async function run(ctx: Ctx, path: string, initial: { text: string; sha: string }, merge: boolean): Promise<RunResult> {
  const { w7pageClients: clients, w7pageUpdates: updates } = ctx.scale;
  const latencies: number[] = [];
  let conflicts = 0;
  let retries = 0;
  let merged = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const api: Api = ctx.newApi(1);
      let view = initial.text;
      let parent = initial.sha;
      try {
        for (let u = 0; u < updates; u++) {
          for (;;) {
            const content = editSection(view, c, u);
            const body: PushBody & { merge?: string } = pushBody(`W7·page client ${c + 1} update ${u + 1}`, [{ path, content, parent_sha: parent }]);
            if (merge) body.merge = 'sections';
            const r = await api.send('POST', `/v1/repos/w7page/sync/push`, body);
            latencies.push(r.ms);
            const text = r.body.toString('utf8');
            if (r.status === 409 && text.includes('concurrent update')) {
              retries++;
              continue;
            }
            if (r.status !== 200 && r.status !== 409) throw new Error(`W7·page: push → ${r.status}: ${text.slice(0, 300)}`);
            const a = JSON.parse(text) as PushAnswer;
            if (r.status === 409) {
              // The original client: the page at head from the conflict, the edit written into it again.
              const k = a.conflicts.find((x) => x.path === path);
              if (!k) throw new Error(`W7·page: 409 without a conflict on ${path}: ${text.slice(0, 300)}`);
              conflicts++;
              view = Buffer.from(k.current_content, 'base64').toString('utf8');
              parent = k.current_sha;
              continue;
            }
            const p = a.pushed.find((x) => x.path === path);
            if (!p) throw new Error(`W7·page: ${path} not in pushed: ${text.slice(0, 300)}`);
            if (p.merged) {
              merged++;
              if (p.content === undefined) throw new Error('W7·page: a merged file without its content');
              view = Buffer.from(p.content, 'base64').toString('utf8');
            } else view = content;
            parent = p.sha;
            break;
          }
        }
      } finally {
        api.close();
      }
    }),
  );
  const wallMs = performance.now() - started;
  const page = await ctx.api().send('GET', `/v1/repos/w7page/pages/${encodePath(path)}`);
  if (page.status !== 200) throw new Error(`W7·page: reading ${path} → ${page.status}`);
  return { wallMs, latencies, conflicts, retries, merged, missing: missingWrites(page.body.toString('utf8'), clients, updates) };
}

/**
 * mergePages on the shared page, a different section changed on each side: per batch, the time per merge
 * on the clock and in this process's CPU time (user + system; what a loaded machine does not inflate).
 */
export function mergeCost(base: string, batches: number, perBatch: number): { perMergeMs: number[]; perMergeCpuMs: number[]; bytes: number } {
  const theirs = editSection(base, 2, 0);
  const ours = editSection(base, 10, 0);
  const check = mergePages(base, theirs, ours);
  if (!check.clean || !check.text.includes(marker(2, 0)) || !check.text.includes(marker(10, 0))) throw new Error('W7·merge: the merge of two sections is not clean');
  for (let i = 0; i < perBatch; i++) mergePages(base, theirs, ours);
  const perMergeMs: number[] = [];
  const perMergeCpuMs: number[] = [];
  for (let b = 0; b < batches; b++) {
    const t = performance.now();
    const cpu = process.cpuUsage();
    for (let i = 0; i < perBatch; i++) mergePages(base, theirs, ours);
    const used = process.cpuUsage(cpu);
    perMergeMs.push((performance.now() - t) / perBatch);
    perMergeCpuMs.push((used.user + used.system) / 1000 / perBatch);
  }
  return { perMergeMs, perMergeCpuMs, bytes: Buffer.byteLength(base) };
}

function side(label: string, command: string, r: RunResult): Side {
  const s = summarize(r.latencies);
  return {
    label,
    command,
    unit: 'ms',
    median: round(r.wallMs),
    p95: Number.NaN,
    n: 1,
    extra: { wall_ms: round(r.wallMs), pushes_sent: r.latencies.length, latency_p50_ms: s.median, latency_p95_ms: s.p95, conflicts_409: r.conflicts, retries_concurrent_update: r.retries, merged: r.merged, missing_last_writes: r.missing },
  };
}

export const w7page: Workload = {
  id: 'W7·page',
  title: 'one shared page, a section per client',
  async seed(ctx) {
    await createRepo(ctx, 'w7page');
    const text = sharedPage(ctx.scale.w7pageClients, new Rng(711));
    const { data } = await ctx.api().json<PushAnswer>('POST', '/v1/repos/w7page/sync/push', pushBody('seed W7·page', [MERGED_PATH, PLAIN_PATH].map((path) => ({ path, content: text }))));
    ctx.shared.set('w7page', { text, sha: data.new_head });
  },
  async measure(ctx) {
    const initial = ctx.shared.get('w7page') as { text: string; sha: string };
    const { w7pageClients: clients, w7pageUpdates: updates } = ctx.scale;
    const withMerge = await run(ctx, MERGED_PATH, initial, true);
    ctx.log(`W7·page: with merge ${withMerge.latencies.length} pushes in ${Math.round(withMerge.wallMs)} ms, ${withMerge.merged} merged, ${withMerge.conflicts} conflicts`);
    const without = await run(ctx, PLAIN_PATH, initial, false);
    ctx.log(`W7·page: without merge ${without.latencies.length} pushes in ${Math.round(without.wallMs)} ms, ${without.conflicts} answered 409`);
    const total = clients * updates;
    const ours = side(`${clients} clients, "merge": "sections": wall time`, `POST /v1/repos/w7page/sync/push {"files":[{"path","content","parent_sha"}],"merge":"sections"}, per client sequentially, clients in parallel`, withMerge);
    const ref = side(`the same without merge (409, then the page at head from the conflict, edit again): wall time`, 'as ours, without "merge"', without);
    const ok = withMerge.conflicts === 0 && withMerge.missing === 0 && without.missing === 0;
    const wallRatio = ratioOf(withMerge.wallMs, without.wallMs);

    const cost = mergeCost(initial.text, ctx.scale.name === 'full' ? 50 : 20, 200);
    const merge = summarize(cost.perMergeCpuMs);
    const mergeWall = summarize(cost.perMergeMs);
    const pushP50 = summarize(withMerge.latencies).median;
    const mergeSide: Side = {
      label: `mergePages on a ${(cost.bytes / 1024).toFixed(1)} KB page, a different section changed on each side`,
      command: 'lib/core/differ/merge.ts mergePages(base, theirs, ours) in the harness process: median over batches of 200 of the CPU time per merge (process.cpuUsage)',
      unit: 'ms',
      median: round(merge.median, 4),
      p95: round(merge.p95, 4),
      n: merge.n,
      extra: { page_bytes: cost.bytes, batches: cost.perMergeMs.length, per_batch: 200, wall_p50_ms: round(mergeWall.median, 4), wall_p95_ms: round(mergeWall.p95, 4) },
    };
    return [
      {
        id: 'W7·page',
        title: `one shared page (${clients} clients × ${updates} pushes, each to its own section, tracking its parent), wall time`,
        ours,
        reference: ref,
        ratio: wallRatio,
        ratioBasis: `wall time for all ${total} writes`,
        target: { text: 'with merge: 0 conflicts, 0 lost, every last write present', met: ok },
        notes: [
          `with merge: ${withMerge.merged} of ${total} writes merged, ${withMerge.conflicts} conflicts, ${withMerge.missing} sections without their last write, ${withMerge.retries} retries after "concurrent update"`,
          `without merge: ${without.conflicts} answers 409 for ${total} writes (${without.latencies.length} pushes sent), ${without.missing} sections without their last write`,
        ],
      },
      {
        id: 'W7·merge',
        title: `merging a ${(cost.bytes / 1024).toFixed(1)} KB page (mergePages, in process)`,
        ours: mergeSide,
        reference: { label: 'W7·page: a push with merge, p50 latency', command: 'as W7·page', unit: 'ms', median: pushP50, p95: summarize(withMerge.latencies).p95, n: withMerge.latencies.length },
        ratio: ratioOf(merge.median, pushP50),
        ratioBasis: 'merge / push p50',
        target: { text: `≤ ${TARGETS.mergeMs} ms`, met: atMost(merge.median, TARGETS.mergeMs) },
        notes: [`${(merge.median * 1000).toFixed(1)} µs of CPU per merge (median of ${merge.n} batches of 200); on the clock ${(mergeWall.median * 1000).toFixed(1)} µs`],
      },
    ];
  },
};

/**
 * W7·merge-big: a stale `"merge": "sections"` push of a page of 20,000 sections (about 0.3 MB), the base and
 * theirs each changing one section far from the other's, while a client polls `GET /health` back to back on
 * its own connection. Per repetition a fresh page: its base pushed, theirs pushed over it (and a search, which
 * makes their full-text rows first), then the timed merge push (its wall time) with the worst /health latency
 * during it. The reference is the same page pushed
 * without a merge (a fresh write of the merged text over the head): what the push costs without merging.
 */
export const MERGE_BIG_SECTIONS = 20_000;

/** A page of `n` short sections `## S<i>` holding `x<i>` (about 0.3 MB at 20,000). */
export function bigMergePage(n: number): string {
  return `---\ntitle: Big page\n---\n${Array.from({ length: n }, (_, i) => `## S${i}\nx${i}\n`).join('\n')}`;
}

/** GET /health back to back on a connection of its own until stopped; the worst latency, and how many answered. */
function healthPoller(ctx: Ctx): { stop(): Promise<{ worstMs: number; polls: number }> } {
  const api = ctx.newApi(1);
  let running = true;
  let worstMs = 0;
  let polls = 0;
  const loop = (async () => {
    while (running) {
      const r = await api.send('GET', '/health');
      if (r.status !== 200) throw new Error(`W7·merge-big: GET /health → ${r.status}`);
      worstMs = Math.max(worstMs, r.ms);
      polls++;
    }
  })();
  return {
    async stop() {
      running = false;
      try {
        await loop;
      } finally {
        api.close();
      }
      return { worstMs, polls };
    },
  };
}

export const w7mergeBig: Workload = {
  id: 'W7·merge-big',
  title: 'a stale merge push of a page of 20,000 sections',
  async seed(ctx) {
    await createRepo(ctx, 'w7big');
  },
  async measure(ctx) {
    const reps = ctx.scale.name === 'full' ? 5 : 2;
    const base = bigMergePage(MERGE_BIG_SECTIONS);
    const theirs = base.replace('\nx10\n', '\nx10, theirs\n');
    const ours = base.replace(`\nx${MERGE_BIG_SECTIONS - 10}\n`, `\nx${MERGE_BIG_SECTIONS - 10}, ours\n`);
    const merged = theirs.replace(`\nx${MERGE_BIG_SECTIONS - 10}\n`, `\nx${MERGE_BIG_SECTIONS - 10}, ours\n`);
    const api = ctx.api();
    const push = (path: string, content: string, parent?: string, merge = false) => {
      const body: PushBody & { merge?: string } = pushBody(`W7·merge-big ${path}`, [{ path, content, ...(parent ? { parent_sha: parent } : {}) }]);
      if (merge) body.merge = 'sections';
      return api.send('POST', '/v1/repos/w7big/sync/push', body);
    };
    const head = (r: { status: number; body: Buffer }, what: string) => {
      if (r.status !== 200) throw new Error(`W7·merge-big: ${what} → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      return (JSON.parse(r.body.toString('utf8')) as PushAnswer).new_head;
    };
    const mergeMs: number[] = [];
    const plainMs: number[] = [];
    const worst: number[] = [];
    const polls: number[] = [];
    for (let i = 0; i < reps; i++) {
      const path = `big/page-${i}.md`;
      const parent = head(await push(path, base), 'seed push');
      const theirsHead = head(await push(path, theirs, parent), 'theirs push');
      // The full-text rows of those two pushes are made before a search answers: made now, not during the
      // timed push (they are the seeding's work, not the merge's).
      const search = await api.send('GET', '/v1/repos/w7big/search?q=theirs');
      if (search.status !== 200) throw new Error(`W7·merge-big: search → ${search.status}`);
      const watch = healthPoller(ctx);
      const r = await push(path, ours, parent, true);
      const seen = await watch.stop();
      const answer = JSON.parse(r.body.toString('utf8')) as PushAnswer;
      const p = answer.pushed?.[0];
      if (r.status !== 200 || !p?.merged || Buffer.from(p.content ?? '', 'base64').toString('utf8') !== merged) {
        throw new Error(`W7·merge-big: the merge push → ${r.status}: ${r.body.toString('utf8').slice(0, 300)}`);
      }
      mergeMs.push(r.ms);
      worst.push(seen.worstMs);
      polls.push(seen.polls);
      // The reference: the merged text pushed as a fresh write over the head it was merged with, on a copy.
      const refPath = `big/plain-${i}.md`;
      const refParent = head(await push(refPath, theirs), 'reference seed');
      const plain = await push(refPath, merged, refParent);
      head(plain, 'reference push');
      plainMs.push(plain.ms);
      ctx.log(`W7·merge-big: rep ${i + 1}: merge push ${Math.round(r.ms)} ms, worst /health ${Math.round(seen.worstMs)} ms over ${seen.polls} polls; plain push ${Math.round(plain.ms)} ms (merged with ${theirsHead.slice(0, 8)})`);
    }
    const m = summarize(mergeMs);
    const pl = summarize(plainMs);
    const worstMs = Math.max(...worst);
    const met = m.median <= TARGETS.mergeBigMs && worstMs <= TARGETS.mergeBigHealthMs;
    return [
      {
        id: 'W7·merge-big',
        title: `a stale merge push of a page of ${MERGE_BIG_SECTIONS.toLocaleString('en')} sections (${(Buffer.byteLength(base) / 1024).toFixed(0)} KB), wall time, with the worst /health latency during it`,
        ours: {
          label: `"merge": "sections" push, one section changed on each side: wall time`,
          command: 'POST /v1/repos/w7big/sync/push {"files":[{"path","content","parent_sha": <base>}],"merge":"sections"} after theirs was pushed over the base; GET /health back to back on its own connection meanwhile',
          unit: 'ms',
          median: round(m.median),
          p95: round(m.p95),
          n: m.n,
          extra: { worst_health_ms: round(worstMs), worst_health_ms_per_rep: worst.map((x) => round(x)), health_polls_per_rep: polls, page_bytes: Buffer.byteLength(base), sections: MERGE_BIG_SECTIONS },
        },
        reference: { label: 'the merged text pushed as a fresh write (no merge): wall time', command: 'POST /v1/repos/w7big/sync/push {"files":[{"path","content","parent_sha": <head>}]}', unit: 'ms', median: round(pl.median), p95: round(pl.p95), n: pl.n },
        ratio: ratioOf(m.median, pl.median),
        ratioBasis: 'merge push / plain push, p50',
        target: { text: `≤ ${TARGETS.mergeBigMs / 1000} s, /health ≤ ${TARGETS.mergeBigHealthMs} ms`, met },
        notes: [`worst GET /health during a merge push: ${round(worstMs)} ms (${polls.join(', ')} polls answered per push)`],
      },
    ];
  },
};
