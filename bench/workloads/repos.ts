import { makePage, Rng } from '../content.ts';
import { encodePath, pushBody, type PushResponse } from '../http.ts';
import { round, summarize } from '../stats.ts';
import { TARGETS, atMost, ratioOf } from '../targets.ts';
import type { HeapFigures } from '../procs.ts';
import type { Row, Side, Workload } from './types.ts';

/**
 * W10 repositories: many repositories of 100 pages on one server (1,000 at full scale), seeded
 * through the API (one push of 100 pages each, four clients at once). The server is then restarted, so that
 * what it holds comes from the measurement alone, and every repository is read (one page) and pushed (one
 * page) once, in turn: its RSS after the first 10 repositories against its RSS after all of them.
 */

const SEED_CLIENTS = 4;
const FIRST = 10;

const repoId = (i: number) => `w10-${String(i + 1).padStart(4, '0')}`;
const pagePath = (k: number) => `notes/page-${String(k + 1).padStart(3, '0')}.md`;

export const w10: Workload = {
  id: 'W10',
  title: 'repositories',
  async seed(ctx) {
    const { w10Repos, w10Pages } = ctx.scale;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: SEED_CLIENTS }, async () => {
        const api = ctx.newApi(1);
        try {
          for (let i = next++; i < w10Repos; i = next++) {
            const rng = new Rng(10_000 + i);
            const files = Array.from({ length: w10Pages }, (_, k) => ({ path: pagePath(k), content: makePage(rng, `Repo ${i + 1} page ${k + 1}`, { minBytes: 300, maxBytes: 1200 }).render() }));
            // A push to a repository that does not exist creates it.
            const r = await api.json<PushResponse>('POST', `/v1/repos/${repoId(i)}/sync/push`, pushBody(`seed ${repoId(i)}`, files));
            if (r.data.pushed.length !== w10Pages) throw new Error(`W10: ${repoId(i)} pushed ${r.data.pushed.length} of ${w10Pages}`);
            if ((i + 1) % 100 === 0) ctx.log(`W10 seed: ${i + 1}/${w10Repos} repositories (${Math.round(performance.now() - started)} ms)`);
          }
        } finally {
          api.close();
        }
      }),
    );
  },
  async measure(ctx) {
    const { w10Repos, w10Pages } = ctx.scale;
    await ctx.restart();
    const api = ctx.api();
    const bootRss = ctx.server().memory().rssKb;
    const rng = new Rng(10_001);
    const readMs: number[] = [];
    const pushMs: number[] = [];
    let afterFirst = { rssKb: Number.NaN, heap: null as HeapFigures | null };
    for (let i = 0; i < w10Repos; i++) {
      const path = pagePath(i % w10Pages);
      const r = await api.send('GET', `/v1/repos/${repoId(i)}/pages/${encodePath(path)}`);
      if (r.status !== 200) throw new Error(`W10: read ${repoId(i)}/${path} → ${r.status}`);
      readMs.push(r.ms);
      const p = await api.json<PushResponse>('POST', `/v1/repos/${repoId(i)}/sync/push`, pushBody(`W10 ${i}`, [{ path, content: makePage(rng, `Updated ${i}`, { minBytes: 300, maxBytes: 1200 }).render() }]));
      pushMs.push(p.ms);
      if (i + 1 === FIRST) afterFirst = { rssKb: ctx.server().memory().rssKb, heap: await ctx.server().heap() };
      if ((i + 1) % 100 === 0) ctx.log(`W10: ${i + 1}/${w10Repos} repositories read and pushed; RSS ${round(ctx.server().memory().rssKb / 1024, 1)} MiB`);
    }
    const after = { rssKb: ctx.server().memory().rssKb, heap: await ctx.server().heap() };
    const mib = (kb: number) => round(kb / 1024, 1);
    const heap = (h: HeapFigures | null) => (h ? { heap_used_mib: round(h.heapUsed / 2 ** 20, 1), external_mib: round(h.external / 2 ** 20, 1) } : {});
    const ratio = ratioOf(after.rssKb, afterFirst.rssKb);
    const reads = summarize(readMs);
    const pushes = summarize(pushMs);
    const side = (label: string, kb: number, extra: Record<string, unknown>): Side => ({
      label,
      command: '/proc/‹server pid›/status VmRSS, after each repository was read (one page) and pushed (one page) once',
      unit: 'MiB',
      median: mib(kb),
      p95: mib(kb),
      n: 1,
      extra,
    });
    const row: Row = {
      id: 'W10',
      title: `${w10Repos.toLocaleString('en-US')} repositories of ${w10Pages} pages, each read and pushed once: RSS`,
      ours: side(`server RSS after all ${w10Repos.toLocaleString('en-US')} repositories`, after.rssKb, { ...heap(after.heap), read_p50_ms: reads.median, read_p95_ms: reads.p95, push_p50_ms: pushes.median, push_p95_ms: pushes.p95 }),
      reference: side(`server RSS after the first ${FIRST}`, afterFirst.rssKb, { ...heap(afterFirst.heap), rss_after_restart_mib: mib(bootRss) }),
      ratio,
      ratioBasis: 'RSS / RSS',
      target: { text: `≤ ${TARGETS.w10Rss}×`, met: atMost(ratio, TARGETS.w10Rss) },
      notes: [
        `the server restarted before the measurement (RSS ${mib(bootRss)} MiB); reads p50 ${reads.median.toFixed(2)} ms, pushes p50 ${pushes.median.toFixed(2)} ms over every repository`,
      ],
    };
    return [row];
  },
};
