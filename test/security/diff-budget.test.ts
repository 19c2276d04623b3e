/**
 * The work budget of diff, blame and evolution (docs/limits.md "Diff and evolution"): a 620 KB page with 12,000 `## `
 * headings and 200 commits, each commit editing 60 section bodies and renaming 60 headings. Over real HTTP,
 * `evolution?limit=200&blame=true` and `diff?blame=true` must answer 200 with correctly shaped results,
 * cut where the caps cut and saying so (`truncated: true`), with blame walked once per request; /health is
 * polled every 20 ms meanwhile and the worst latency printed (not asserted: the speed is the benchmark's).
 *
 * The history is written straight through the server's git store (deps.repos.commitFiles), which is what a
 * push does after its checks, to keep the setup to seconds.
 *
 * Where it is cut, and by what:
 *  - evolution: each entry carries ~2.2 M characters (12,000 bodies on both sides and their line diffs),
 *    so the 16th would pass EVOLUTION_MAX_CHARS: 15 entries, top-level `truncated`. Blame would walk the
 *    214 revisions those windows span, each a 620 KB parse: the request's work budget runs out first, so
 *    blame is abandoned and every entry is its plain diff with `truncated: true`.
 *  - diff: the plain diff is exact (one-line bodies need no Myers); its blame walk over 200 revisions
 *    runs out of budget the same way: the plain diff, `truncated: true`.
 */
import { loadavg } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/env.ts';
import { ParseCache } from '../../lib/usecases/diff.ts';
import { EvolutionResponse, SectionDiff } from '../../schema/wire/diff.ts';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const SECTIONS = 12_000;
const COMMITS = 200;
const REPO = 'budget';
const PAGE = 'wiki/analyses/big.md';

/** The latest u in 1..v with u ≡ r (mod 200), or 0. */
const lastAt = (r: number, v: number): number => {
  const u = r === 0 ? COMMITS : r;
  return u <= v ? u : 0;
};

/**
 * Revision v (1…200): section i's body names the last commit that edited it (u ≡ i mod 200), its heading
 * the commit that renamed it (u ≡ i + 100 mod 200), so commit v edits 60 bodies and renames 60 headings.
 */
function pageAt(v: number): string {
  const parts = ['---', 'title: Big page', `rev: ${v}`, '---', 'A preamble line.', ''];
  for (let i = 0; i < SECTIONS; i++) {
    const renamed = lastAt((i + 100) % COMMITS, v);
    parts.push(`## Section ${i}${renamed ? ` r${renamed}` : ''}`, `Text of section ${i}, edit ${lastAt(i % COMMITS, v)}.`, '');
  }
  return parts.join('\n');
}

let srv: TestServer;
/** shas[v] = the commit writing revision v (1-based). */
const shas: string[] = [''];

beforeAll(async () => {
  srv = await startTestServer();
  expect((await srv.api(`/v1/repos/${REPO}`, { method: 'POST' })).status).toBe(201);
  const enc = new TextEncoder();
  for (let v = 1; v <= COMMITS; v++) {
    const r = await srv.deps.repos.commitFiles(REPO, [{ path: PAGE, content: enc.encode(pageAt(v)) }], { name: `author ${v}`, email: `a${v}@example.test` }, `revision ${v}`);
    shas.push(r.head);
  }
}, 300_000);
afterAll(async () => srv?.stop());

/** Polls /health every 20 ms until stopped; every answer must be 200. */
function pollHealth(): { stop: () => Promise<{ worstMs: number; polls: number; statuses: number[] }> } {
  let running = true;
  let worstMs = 0;
  const statuses: number[] = [];
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      const r = await fetch(`${srv.url}/health`);
      await r.arrayBuffer();
      worstMs = Math.max(worstMs, performance.now() - t0);
      statuses.push(r.status);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return { worstMs, polls: statuses.length, statuses };
    },
  };
}

/** One request from a cold parse cache; the body is read as bytes and parsed only afterwards. */
async function coldGet(path: string): Promise<{ status: number; bytes: ArrayBuffer; ms: number; cpuMs: number; stats: ParseCache['stats'] }> {
  srv.deps.parsedPages = new ParseCache();
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const r = await srv.api(path);
  const bytes = await r.arrayBuffer();
  const cpu = process.cpuUsage(c0);
  return { status: r.status, bytes, ms: performance.now() - t0, cpuMs: (cpu.user + cpu.system) / 1000, stats: { ...srv.deps.parsedPages.stats } };
}

const json = (b: ArrayBuffer): Json => JSON.parse(new TextDecoder().decode(b));
const anyBlame = (d: Json): boolean => JSON.stringify(d).includes('introduced_by');

describe('diff, blame and evolution of a 620 KB page with 12,000 headings and 200 commits', () => {
  it('answer within the work budget, cut where it ran out, blame walked once per request; /health answers meanwhile', async () => {
    expect(pageAt(COMMITS).length).toBe(636_870);
    expect(pageAt(COMMITS).split('\n').filter((l) => l.startsWith('## ')).length).toBe(SECTIONS);
    const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');

    const health = pollHealth();
    const evo = await coldGet(`/v1/repos/${REPO}/evolution/${enc(PAGE)}?limit=200&blame=true`);
    const dif = await coldGet(`/v1/repos/${REPO}/diff/${enc(PAGE)}?blame=true`);
    const polled = await health.stop();
    // Wall and process CPU time (the server runs in this process), and the load of the machine.
    console.log(
      `[security] evolution?limit=200&blame=true: ${Math.round(evo.ms)} ms (cpu ${Math.round(evo.cpuMs)} ms), ` +
        `${(evo.bytes.byteLength / 1e6).toFixed(1)} MB; diff?blame=true: ${Math.round(dif.ms)} ms (cpu ${Math.round(dif.cpuMs)} ms); ` +
        `worst /health latency ${Math.round(polled.worstMs)} ms over ${polled.polls} polls; load average ${loadavg()[0]!.toFixed(1)}`,
    );
    expect(polled.polls).toBeGreaterThan(0);
    expect(new Set(polled.statuses)).toEqual(new Set([200]));

    // --- evolution: 15 entries (the size cap), each its plain diff (blame cut by the budget)
    expect(evo.status).toBe(200);
    const e = json(evo.bytes);
    expect(EvolutionResponse.parse(e)).toEqual(e);
    expect(e.truncated).toBe(true);
    expect(e.entries.length).toBe(15);
    expect(e.entries.map((x: Json) => x.commit.sha)).toEqual(shas.slice(186).reverse());
    expect(e.entries.map((x: Json) => x.diff.from_sha)).toEqual(shas.slice(185, 200).reverse());
    expect(e.entries[0].commit).toMatchObject({ author: 'author 200', email: 'a200@example.test', message: 'revision 200' });
    expect(e.entries.map((x: Json) => x.diff.truncated)).toEqual(Array(15).fill(true));
    expect(anyBlame(e)).toBe(false);
    // One blame walk for the whole request (abandoned when the budget ran out), not one per entry.
    expect(evo.stats.blameWalks).toBe(1);

    // The newest entry, exactly: 60 bodies edited (i ≡ 0 mod 200), 60 headings renamed (i ≡ 100), best
    // pairs first among renamed bodies that are also ≥ 0.7 alike with one another.
    const d0 = e.entries[0].diff;
    expect(d0.frontmatter).toEqual({ changed: [{ field: 'rev', from: 199, to: 200 }], added: [], removed: [] });
    expect(d0.preamble).toEqual({ heading: '_preamble', status: 'unchanged', from: 'A preamble line.', to: 'A preamble line.', line_diff: '  A preamble line.' });
    expect(d0.sections.length).toBe(SECTIONS);
    const counts: Record<string, number> = {};
    for (const s of d0.sections) counts[s.status] = (counts[s.status] ?? 0) + 1;
    expect(counts).toEqual({ modified: 60, unchanged: 11_880, renamed: 60 });
    expect(d0.sections[0]).toEqual({
      heading: '## Section 0 r100',
      status: 'modified',
      from: 'Text of section 0, edit 0.',
      to: 'Text of section 0, edit 200.',
      line_diff: '- Text of section 0, edit 0.\n+ Text of section 0, edit 200.',
    });
    expect(d0.sections[1]).toEqual({
      heading: '## Section 1 r101',
      status: 'unchanged',
      from: 'Text of section 1, edit 1.',
      to: 'Text of section 1, edit 1.',
      line_diff: '  Text of section 1, edit 1.',
    });
    // Renamed entries take the place of their removed sections, after the new page's order.
    expect(d0.sections.slice(SECTIONS - 60).map((s: Json) => [s.heading, s.old_heading])).toEqual(
      Array.from({ length: 60 }, (_, k) => [`## Section ${100 + 200 * k} r200`, `## Section ${100 + 200 * k}`]),
    );
    expect(d0.sections[SECTIONS - 59]).toEqual({
      heading: '## Section 300 r200',
      status: 'renamed',
      old_heading: '## Section 300',
      from: 'Text of section 300, edit 100.',
      to: 'Text of section 300, edit 100.',
      // No line_diff: the body did not change, the rename alone is the change.
    });

    // --- diff: the same comparison, its blame cut by the budget
    expect(dif.status).toBe(200);
    const d = json(dif.bytes);
    expect(SectionDiff.parse(d)).toEqual(d);
    expect(d).toEqual(d0);
    expect(d.from_sha).toBe(shas[199]);
    expect(d.to_sha).toBe(shas[200]);
    expect(d.truncated).toBe(true);
    expect(dif.stats.blameWalks).toBe(1);
    // The walk stopped part way: fewer revisions parsed than the 200 it would have read.
    expect(dif.stats.parses).toBeGreaterThan(2);
    expect(dif.stats.parses).toBeLessThan(COMMITS);
  }, 300_000);

  it('without blame the same diffs are exact: the truncation above is blame’s alone', async () => {
    const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
    const plain = await coldGet(`/v1/repos/${REPO}/diff/${enc(PAGE)}`);
    expect(plain.status).toBe(200);
    const d = json(plain.bytes);
    expect(d).not.toHaveProperty('truncated');
    expect(d.sections.length).toBe(SECTIONS);
    expect(plain.stats).toEqual({ parses: 2, blameWalks: 0 });

    const evo = await coldGet(`/v1/repos/${REPO}/evolution/${enc(PAGE)}?limit=200`);
    expect(evo.status).toBe(200);
    const e = json(evo.bytes);
    expect(e.truncated).toBe(true);
    expect(e.entries.length).toBe(15);
    expect(e.entries.map((x: Json) => x.diff.truncated)).toEqual(Array(15).fill(undefined));
    expect(e.entries[0].diff).toEqual(d);
    expect(evo.stats).toEqual({ parses: 17, blameWalks: 0 });
  }, 300_000);
});
