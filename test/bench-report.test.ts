import { describe, expect, it } from 'vitest';
import { median, percentile, summarize, fmtMs, fmtRatio } from '../bench/stats.ts';
import { memoryVerdict, notFinalBecause, README_END, README_START, renderTable, spliceReadme, type Results } from '../bench/report.ts';
import type { Row } from '../bench/workloads/types.ts';

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
    const dirty = notFinalBecause(results({ code: { commit: SHA, porcelain: ['M lib/config.ts', '?? x.ts'], dirty: true } }));
    expect(dirty).toEqual(['the working tree had uncommitted changes (lib/config.ts, x.ts)']);
    expect(notFinalBecause(results({ code: { commit: SHA, porcelain: [], dirty: null } }))[0]).toContain('could not be checked');
    expect(notFinalBecause(results({ code: { commit: 'unknown', porcelain: [], dirty: false } }))).toEqual(['the commit is unknown']);
    expect(notFinalBecause(results({ completed: false }))).toEqual(['the run failed']);
    expect(notFinalBecause(results({ profiled: true }))).toEqual(['the server was CPU-profiled']);
    expect(notFinalBecause(results({ scale: 'small' }))).toEqual(['scale small, not full']);
    expect(notFinalBecause(results({ all_workloads: false }))).toEqual(['not every workload ran (--only)']);
  });

  const readme = `# kr\n\nintro\n\n${README_START}\nold table\n${README_END}\n\nafter\n`;

  it('the README block is replaced by a final run, named by its commit; the rest is untouched', () => {
    const out = spliceReadme(readme, results());
    expect(out.startsWith('# kr\n\nintro\n\n')).toBe(true);
    expect(out.endsWith(`${README_END}\n\nafter\n`)).toBe(true);
    expect(out).not.toContain('old table');
    expect(out).toContain(`at commit ${SHA.slice(0, 12)} (clean tree)`);
    expect(out).toContain('| W1 push-one | 2.50 ms |');
    // Idempotent: splicing again gives the same text.
    expect(spliceReadme(out, results())).toBe(out);
  });

  it('refuses a dirty run, with the reason, and a README without markers', () => {
    expect(() => spliceReadme(readme, results({ code: { commit: SHA, porcelain: [' M server.ts'], dirty: true } }))).toThrow(
      /not final: the working tree had uncommitted changes \(server\.ts\)/,
    );
    expect(() => spliceReadme('# kr\n', results())).toThrow(/no generated benchmark block/);
    expect(() => spliceReadme(`${README_END}\n${README_START}\n`, results())).toThrow(/no generated benchmark block/);
  });
});

describe('memoryVerdict', () => {
  it('ours ≤ 1.3× the reference peak is met; no reference, no verdict', () => {
    expect(memoryVerdict(100, 80)).toEqual({ ratio: 1.25, met: true });
    expect(memoryVerdict(105, 80).met).toBe(false);
    expect(memoryVerdict(100, undefined)).toEqual({ ratio: null, met: null });
    expect(memoryVerdict(100, Number.NaN)).toEqual({ ratio: null, met: null });
  });
});
