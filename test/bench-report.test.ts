import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { median, percentile, summarize, fmtMs, fmtRatio } from '../bench/stats.ts';
import { memoryRatio, notFinalBecause, renderTable, spliceTable, TABLE_END, TABLE_PAGE, TABLE_START, type Results } from '../bench/report.ts';
import type { Row } from '../bench/workloads/types.ts';
import { TARGETS, atLeast, atMost, growthRow, limitSide, notAvailableRow, ratioOf } from '../bench/targets.ts';
import { parseSchedstat, parseStat } from '../bench/cpu.ts';
import { SseParser } from '../bench/sse.ts';
import { Rng } from '../bench/content.ts';
import { editSection, mergeCost, missingWrites, sharedPage } from '../bench/workloads/merge.ts';

/** The benchmark harness's pure parts: statistics, the table, and the refusal to call a dirty run final. */

describe('stats', () => {
  it('percentile is nearest-rank on the sorted sample', () => {
    const s = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(s, 50)).toBe(5);
    expect(percentile(s, 95)).toBe(10);
    expect(percentile(s, 90)).toBe(9);
    expect(percentile(s, 0)).toBe(1);
    expect(percentile([], 50)).toBeNaN();
  });

  it('median averages the two middle values of an even sample', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('summarize', () => {
    expect(summarize([1, 2, 3, 4])).toEqual({ n: 4, median: 2.5, p95: 4, min: 1, max: 4, mean: 2.5, total: 10 });
  });

  it('formats milliseconds and ratios', () => {
    expect(fmtMs(0.421)).toBe('0.42 ms');
    expect(fmtMs(12.34)).toBe('12.3 ms');
    expect(fmtMs(1234)).toBe('1.23 s');
    expect(fmtRatio(0.123)).toBe('0.12×');
    expect(fmtRatio(150)).toBe('150×');
    expect(fmtRatio(0.0016)).toBe('0.0016×');
  });
});

const row = (over: Partial<Row>): Row => ({
  id: 'W1',
  title: 'push-one',
  ours: { label: 'POST /push', command: 'x', unit: 'ms', median: 2.5, p95: 4, n: 10 },
  reference: { label: 'git plumbing commit', command: 'y', unit: 'ms', median: 20, p95: 25, n: 10 },
  ratio: 0.125,
  ratioBasis: 'p50/p50',
  target: { text: 'p50 ≤ 0.15×', met: true },
  notes: [],
  ...over,
});

describe('renderTable', () => {
  it('one markdown line per row, with targets, verdicts and units', () => {
    const t = renderTable([
      row({}),
      row({ id: 'W7', ratio: 0.5, ratioBasis: 'wall time', target: { text: 'wall ≤ 0.12×', met: false }, ours: { label: 'a', command: 'a', unit: 'ms', median: 700, p95: Number.NaN, n: 1 } }),
      row({ id: 'MEM', ours: { label: 'peak', command: 'c', unit: 'MiB', median: 101.25, p95: 101.25, n: 1 }, reference: null, ratio: null, target: { text: '(context)', met: null } }),
    ]).split('\n');
    expect(t).toHaveLength(5);
    expect(t[0]).toBe('| Workload | Ours p50 | Ours p95 | Reference | Ref p50 | Ref p95 | Ours/ref | Target | Met |');
    expect(t[2]).toBe('| W1 push-one | 2.50 ms | 4.00 ms | git plumbing commit | 20.0 ms | 25.0 ms | 0.13× | p50 ≤ 0.15× | met |');
    expect(t[3]).toContain('| 700 ms | — |');
    expect(t[3]).toContain('0.50× (wall time)');
    expect(t[3]).toMatch(/\*\*missed\*\* \|$/);
    expect(t[4]).toBe('| MEM push-one | 101.3 MiB | — | — | — | — | — | (context) | — |');
  });

  it('escapes what markdown would misread: <path> and |', () => {
    const t = renderTable([row({ title: 'GET /pages/<path> a|b' })]);
    expect(t).toContain('GET /pages/‹path› a\\|b');
  });
});

const SHA = 'a'.repeat(40);
const results = (over: Partial<Results> & { code?: Results['code'] } = {}): Results => ({
  command: 'npm run bench -- --scale full',
  code: { commit: SHA, porcelain: [], dirty: false },
  scale: 'full',
  workloads: ['W1'],
  all_workloads: true,
  started_at: '2026-11-23T05:00:00.000Z',
  duration_s: 120,
  completed: true,
  profiled: false,
  final: true,
  not_final_because: [],
  machine: { node: 'v20.20.2', git: 'git version 2.39.5', cpus: 2, cpu_model: 'cpu', loadavg_1_5_15_at_start: [0.5, 0.5, 0.5], loadavg_1_5_15_at_end: [1, 1, 1] },
  rows: [row({})],
  table_markdown: renderTable([row({})]),
  ...over,
});

describe('final results only', () => {
  it('a complete full-scale run of every workload on a clean tree is final', () => {
    expect(notFinalBecause(results())).toEqual([]);
  });

  it('a dirty tree, an unknown tree state or commit, a failure, a profile, a small scale or --only are not', () => {
    const dirty = notFinalBecause(results({ code: { commit: SHA, porcelain: ['M lib/framework/config.ts', '?? x.ts'], dirty: true } }));
    expect(dirty).toEqual(['the working tree had uncommitted changes (lib/framework/config.ts, x.ts)']);
    expect(notFinalBecause(results({ code: { commit: SHA, porcelain: [], dirty: null } }))[0]).toContain('could not be checked');
    expect(notFinalBecause(results({ code: { commit: 'unknown', porcelain: [], dirty: false } }))).toEqual(['the commit is unknown']);
    expect(notFinalBecause(results({ completed: false }))).toEqual(['the run failed']);
    expect(notFinalBecause(results({ profiled: true }))).toEqual(['the server was CPU-profiled']);
    expect(notFinalBecause(results({ scale: 'small' }))).toEqual(['scale small, not full']);
    expect(notFinalBecause(results({ all_workloads: false }))).toEqual(['not every workload ran (--only)']);
  });

  const page = `# Performance\n\nintro\n\n${TABLE_START}\nold table\n${TABLE_END}\n\nafter\n`;

  it('the generated block is replaced by a final run, named by its commit; the rest is untouched', () => {
    const out = spliceTable(page, results());
    expect(out.startsWith('# Performance\n\nintro\n\n')).toBe(true);
    expect(out.endsWith(`${TABLE_END}\n\nafter\n`)).toBe(true);
    expect(out).not.toContain('old table');
    expect(out).toContain(`at commit ${SHA.slice(0, 12)} (clean tree)`);
    expect(out).toContain('| W1 push-one | 2.50 ms |');
    // Idempotent: splicing again gives the same text.
    expect(spliceTable(out, results())).toBe(out);
  });

  it('refuses a dirty run, with the reason, and a page without markers', () => {
    expect(() => spliceTable(page, results({ code: { commit: SHA, porcelain: [' M server.ts'], dirty: true } }))).toThrow(
      /not final: the working tree had uncommitted changes \(server\.ts\)/,
    );
    expect(() => spliceTable('# Performance\n', results())).toThrow(/docs\/performance\.md has no generated benchmark block/);
    expect(() => spliceTable(`${TABLE_END}\n${TABLE_START}\n`, results())).toThrow(/no generated benchmark block/);
  });

  it('docs/performance.md holds the generated block once, where npm run bench -- --readme writes it', () => {
    const text = readFileSync(new URL(`../${TABLE_PAGE}`, import.meta.url), 'utf8');
    expect(text.split(TABLE_START)).toHaveLength(2);
    expect(text.split(TABLE_END)).toHaveLength(2);
    expect(text.indexOf(TABLE_START)).toBeLessThan(text.indexOf(TABLE_END));
    const out = spliceTable(text, results());
    expect(out.slice(0, out.indexOf(TABLE_START))).toBe(text.slice(0, text.indexOf(TABLE_START)));
    expect(out.slice(out.indexOf(TABLE_END))).toBe(text.slice(text.indexOf(TABLE_END)));
  });
});

describe('memoryRatio', () => {
  it("MEM is context now: the ratio to the Hono peak, no verdict; no reference, no ratio", () => {
    expect(memoryRatio(100, 80)).toBe(1.25);
    expect(memoryRatio(100, undefined)).toBeNull();
    expect(memoryRatio(100, Number.NaN)).toBeNull();
    expect(memoryRatio(Number.NaN, 80)).toBeNull();
  });
});

describe('targets', () => {
  it('ratios need two finite figures; verdicts need a ratio', () => {
    expect(ratioOf(15, 10)).toBe(1.5);
    expect(ratioOf(Number.NaN, 10)).toBeNull();
    expect(ratioOf(1, 0)).toBeNull();
    expect(atMost(1.5, 1.5)).toBe(true);
    expect(atMost(1.51, 1.5)).toBe(false);
    expect(atMost(null, 1.5)).toBeNull();
    expect(atLeast(0.5, 0.5)).toBe(true);
    expect(atLeast(0.49, 0.5)).toBe(false);
  });

  it('the current targets, and neither retired one (W1 against plumbing, MEM against Hono)', () => {
    expect(TARGETS).toMatchObject({ w1OverFloor: 1.4, w8PushShare: 0.2, w7Wall: 0.12, w8OverGrep: 0.15, w4OverHono: 0.4, w9FullPull: 15, w9Op: 1.5, w9Search: 3, w11SearchCpuMs: 20, w9ExportAboveMib: 64, w9HealthMs: 100, w10Rss: 1.3, w11CpuMs: 10, w12: 1.5, w13P95Ms: 100, mergeMs: 0.25 });
    expect(Object.keys(TARGETS).some((k) => /plumbing|hono.*mem|mem/i.test(k))).toBe(false);
  });

  it('a W9 row puts the large size against the small one, judged on p50', () => {
    const side = (median: number) => ({ label: 'x', command: 'x', unit: 'ms' as const, median, p95: median * 2, n: 5 });
    const r = growthRow({ id: 'W9·pull', title: 'full pull', large: side(110), small: side(10), factor: 12 });
    expect(r.ratio).toBe(11);
    expect(r.target).toEqual({ text: 'p50 ≤ 12×', met: true });
    expect(growthRow({ id: 'W9·read', title: 'read', large: side(1.6), small: side(1), factor: 1.5 }).target.met).toBe(false);
    expect(renderTable([r])).toContain('| W9·pull full pull | 110 ms | 220 ms | x | 10.0 ms | 20.0 ms | 11.0× | p50 ≤ 12× | met |');
  });

  it('W11 shows p99 beside p95, against a limit that is not a measurement', () => {
    const r = row({
      id: 'W11·push',
      ours: { label: 'cpu', command: 'c', unit: 'ms', median: 4.2, p95: 7.5, p99: 12.25, n: 60 },
      reference: limitSide('Workers free plan: CPU limit per request', 10, 'ms'),
      ratio: 0.42,
      ratioBasis: 'p50 / 10 ms',
    });
    expect(renderTable([r]).split('\n')[2]).toBe(
      '| W11·push push-one | 4.20 ms | 7.50 ms, p99 12.3 ms | Workers free plan: CPU limit per request | 10.0 ms | — | 0.42× (p50 / 10 ms) | p50 ≤ 0.15× | met |',
    );
  });

  it('W13 on a server without live events: a row that says so, with no figure and no verdict', () => {
    const r = notAvailableRow('W13', '200 open event streams', 'p95 ≤ 100 ms', 'GET /v1/repos/:id/events answered 404');
    expect(r.target).toEqual({ text: 'p95 ≤ 100 ms', met: null });
    expect(r.notes).toEqual(['not available: GET /v1/repos/:id/events answered 404']);
    expect(renderTable([r]).split('\n')[2]).toBe('| W13 200 open event streams — not available | — | — | — | — | — | — | p95 ≤ 100 ms | — |');
  });

  it('KiB figures and small ratios', () => {
    const r = row({ id: 'W13·mem', ours: { label: 'per stream', command: 'c', unit: 'KiB', median: 37.4, p95: 37.4, n: 200 }, reference: null, ratio: 0.0016, ratioBasis: 'merge / push p50' });
    expect(renderTable([r]).split('\n')[2]).toContain('| 37 KiB | — | — | — | — | 0.0016× (merge / push p50) |');
    expect(fmtRatio(0)).toBe('0.00×');
  });
});

describe('workerd CPU from /proc', () => {
  it('schedstat: nanoseconds on a CPU', () => {
    expect(parseSchedstat('4461529876 8605118253 1656\n')).toBe(4461529876);
    expect(parseSchedstat('garbage')).toBeNaN();
  });

  it('stat: a command with spaces and parentheses, its parent, utime + stime', () => {
    const line = '4242 (work (er) d) S 17 4242 17 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 9 0 123 456 789';
    expect(parseStat(line)).toEqual({ comm: 'work (er) d', ppid: 17, cpuTicks: 281 });
    expect(parseStat('no parentheses')).toBeNull();
  });
});

describe('event streams as W13 reads them', () => {
  it('events split over chunks, CRLF, several data lines, comments', () => {
    const p = new SseParser();
    expect(p.push(': ping\n\nid: 7\nevent: pu')).toEqual([]);
    expect(p.push('sh\r\ndata: {"sha":"ab"}\r')).toEqual([]);
    expect(p.push('\n\r\ndata:a\ndata: b\n\n')).toEqual([
      { id: '7', event: 'push', data: '{"sha":"ab"}' },
      { id: '7', event: 'message', data: 'a\nb' },
    ]);
  });
});

describe('W7·page: one shared page, a section per client', () => {
  it('the page is at least 4 KB, each client edits only its own section, and a missing last write is counted', () => {
    const base = sharedPage(16, new Rng(711));
    expect(Buffer.byteLength(base)).toBeGreaterThanOrEqual(4096);
    const a = editSection(base, 2, 0);
    const b = editSection(a, 2, 1);
    expect(b.split('\n').filter((l, i) => l !== base.split('\n')[i])).toEqual(['Last write: client 3 update 2.']);
    expect(missingWrites(b, 16, 2)).toBe(15);
    let all = base;
    for (let c = 0; c < 16; c++) all = editSection(all, c, 1);
    expect(missingWrites(all, 16, 2)).toBe(0);
    expect(() => editSection(base, 16, 0)).toThrow(/no ## Client 17/);
  });

  it('the merge it times is clean and keeps both sides', () => {
    const { perMergeMs, perMergeCpuMs, bytes } = mergeCost(sharedPage(16, new Rng(711)), 2, 3);
    expect(perMergeMs).toHaveLength(2);
    expect(perMergeCpuMs).toHaveLength(2);
    expect(bytes).toBeGreaterThanOrEqual(4096);
  });
});
