import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { fsck, gitIn } from './helpers/env.ts';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from './helpers/idp.ts';
import { diffPage, evolutionJsonStream, pageEvolution, ParseCache } from '../lib/usecases/diff.ts';
import { WorkBudget } from '../lib/core/differ/index.ts';
import { EvolutionResponse, SectionDiff } from '../schema/wire/diff.ts';
import type { Commit } from '../schema/wire/common.ts';

/**
 * End-to-end tests of `GET /v1/repos/:id/diff/<path>` and `GET /v1/repos/:id/evolution/<path>` over real
 * HTTP, with histories built by real pushes (the legacy key unless stated).
 */

let srv: IdpTestServer;
let alice: SignedIn;
const gitdir = (id: string) => join(srv.dataRoot, 'repos', `${id}.git`);
const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
const commitCount = (repo: string) => Number(gitIn(gitdir(repo), 'rev-list', '--count', 'main').trim());

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

async function push(
  repo: string,
  files: Array<{ path: string; content?: string; delete?: true }>,
  who: { name?: string; email?: string; message?: string; token?: string } = {},
): Promise<string> {
  const r = await srv.api(`/v1/repos/${repo}/sync/push`, {
    method: 'POST',
    token: who.token,
    json: { author_name: who.name, author_email: who.email, message: who.message, files },
  });
  const body = (await r.json()) as Json;
  expect(r.status, JSON.stringify(body)).toBe(200);
  expect(body.conflicts).toEqual([]);
  return body.new_head as string;
}

async function get(path: string, token?: string | null): Promise<{ status: number; body: Json }> {
  const r = await srv.api(path, { token });
  const body = await r.json();
  return { status: r.status, body };
}
const diff = (repo: string, path: string, q = '', token?: string | null) => get(`/v1/repos/${repo}/diff/${enc(path)}${q}`, token);
const evolution = (repo: string, path: string, q = '', token?: string | null) =>
  get(`/v1/repos/${repo}/evolution/${enc(path)}${q}`, token);

/** Commit objects of a page as the history endpoint shows them, by sha. */
async function commitsOf(repo: string, path: string): Promise<Map<string, Commit>> {
  const r = await get(`/v1/repos/${repo}/history/${enc(path)}?limit=1000`);
  expect(r.status).toBe(200);
  return new Map((r.body.commits as Commit[]).map((c) => [c.sha, c]));
}

/** Every `introduced_by` sha of a diff, by heading. */
const blameOf = (d: Json): Record<string, string | undefined> =>
  Object.fromEntries(
    [...(d.preamble ? [d.preamble] : []), ...d.sections].map((s: Json) => [s.heading, s.introduced_by?.sha]),
  );

const anyBlame = (d: Json): boolean => JSON.stringify(d).includes('introduced_by');

beforeAll(async () => {
  srv = await startIdpTestServer();
  // Signed in before any repository exists, so the first user adopts nothing.
  alice = await signIn(srv, { sub: 'alice-diff', email: 'alice@example.test', name: 'Alice' });
});
afterAll(async () => srv?.stop());

// ---------------------------------------------------------------------------------------------------------
// Defaults, explicit ranges, errors
// ---------------------------------------------------------------------------------------------------------

const A1 = '---\ntitle: Alpha\ntags: [x, y]\n---\nIntro.\n\n## Decision\nUse git.\n\n## Notes\nFirst notes.\n';
const A2 = '---\ntitle: Alpha\ntags: [y, z]\n---\nIntro.\n\n## Decision\nUse git, always.\n\n## Risks\nNone yet.\n';
const B1 = '---\ntitle: Beta\n---\n## Only\nb1\n';
const B2 = '---\ntitle: Beta\n---\n## Only\nb2\n';
const C1 = '---\ntitle: Gamma\n---\n## Start\nc1\n';

/** The SectionDiff of A1 → A2. */
const a1a2 = (from_sha: string, to_sha: string) => ({
  from_sha,
  to_sha,
  frontmatter: { changed: [], added: [{ field: 'tags', to: 'z' }], removed: [{ field: 'tags', from: 'x' }] },
  preamble: { heading: '_preamble', status: 'unchanged', from: 'Intro.', to: 'Intro.', line_diff: '  Intro.' },
  sections: [
    { heading: '## Decision', status: 'modified', from: 'Use git.', to: 'Use git, always.', line_diff: '- Use git.\n+ Use git, always.' },
    { heading: '## Risks', status: 'added', to: 'None yet.', line_diff: '+ None yet.' },
    { heading: '## Notes', status: 'removed', from: 'First notes.', line_diff: '- First notes.' },
  ],
});

describe('diff: revisions scoped to the path', () => {
  const R = 'scoped';
  const A = 'wiki/concepts/alpha.md';
  const B = 'wiki/concepts/beta.md';
  const C = 'wiki/concepts/gamma.md';
  let c1: string, c2: string, c3: string, c4: string, c5: string;

  beforeAll(async () => {
    c1 = await push(R, [{ path: A, content: A1 }], { message: 'alpha 1' });
    c2 = await push(R, [{ path: B, content: B1 }], { message: 'beta 1' });
    c3 = await push(R, [{ path: A, content: A2 }], { message: 'alpha 2' });
    c4 = await push(R, [{ path: B, content: B2 }], { message: 'beta 2' });
    c5 = await push(R, [{ path: C, content: C1 }], { message: 'gamma 1' });
  });

  it('defaults: to = last commit touching the path, from = the previous one touching it (not the git parent)', async () => {
    const r = await diff(R, A);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(a1a2(c1, c3));
    expect(SectionDiff.parse(r.body)).toEqual(r.body);
    const b = await diff(R, B);
    expect(b.status).toBe(200);
    expect(b.body).toEqual({
      from_sha: c2,
      to_sha: c4,
      frontmatter: { changed: [], added: [], removed: [] },
      sections: [{ heading: '## Only', status: 'modified', from: 'b1', to: 'b2', line_diff: '- b1\n+ b2' }],
    });
  });

  it('explicit from and to, full and abbreviated (any case); the answer carries full shas', async () => {
    for (const q of [`?from=${c1}&to=${c3}`, `?from=${c1.slice(0, 7)}&to=${c3.slice(0, 12)}`, `?from=${c1.slice(0, 8).toUpperCase()}&to=${c3}`]) {
      const r = await diff(R, A, q);
      expect(r.status, q).toBe(200);
      expect(r.body, q).toEqual(a1a2(c1, c3));
    }
    const reversed = await diff(R, A, `?from=${c3}&to=${c1}`);
    expect(reversed.status).toBe(200);
    expect(reversed.body.from_sha).toBe(c3);
    expect(reversed.body.to_sha).toBe(c1);
    expect(reversed.body.sections.map((s: Json) => [s.heading, s.status])).toEqual([
      ['## Decision', 'modified'],
      ['## Notes', 'added'],
      ['## Risks', 'removed'],
    ]);
    // Empty values count as not given.
    expect((await diff(R, A, '?from=&to=')).body).toEqual(a1a2(c1, c3));
  });

  it('only `to`: from = the commit touching the path before the page version at `to`', async () => {
    expect((await diff(R, A, `?to=${c3}`)).body).toEqual(a1a2(c1, c3));
    // c4 does not touch alpha: the page's last change as of c4 (c1 → c3), reported against c4.
    const r = await diff(R, A, `?to=${c4.slice(0, 10)}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(a1a2(c1, c4));
    // As of c1 or c2 the page has a single commit.
    for (const to of [c1, c2]) {
      const n = await diff(R, A, `?to=${to}`);
      expect(n.status).toBe(400);
      expect(n.body).toEqual({ error: 'no parent commit for this path; pass ?from explicitly', code: 'no_parent' });
    }
  });

  it('only `from`: diffed against the current tip of the page, not the branch head', async () => {
    const r = await diff(R, A, `?from=${c1}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(a1a2(c1, c3));
    // From a later commit: the same content on both sides, all unchanged, to = the page's tip.
    const later = await diff(R, A, `?from=${c5}`);
    expect(later.status).toBe(200);
    expect(later.body.from_sha).toBe(c5);
    expect(later.body.to_sha).toBe(c3);
    expect(later.body.frontmatter).toEqual({ changed: [], added: [], removed: [] });
    expect(later.body.sections.map((s: Json) => s.status)).toEqual(['unchanged', 'unchanged']);
  });

  it('a side whose commit lacks the path is the empty document', async () => {
    const r = await diff(R, C, `?from=${c1}`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from_sha: c1,
      to_sha: c5,
      frontmatter: { changed: [], added: [{ field: 'title', to: 'Gamma' }], removed: [] },
      sections: [{ heading: '## Start', status: 'added', to: 'c1', line_diff: '+ c1' }],
    });
    const back = await diff(R, C, `?from=${c5}&to=${c2}`);
    expect(back.status).toBe(200);
    expect(back.body).toEqual({
      from_sha: c5,
      to_sha: c2,
      frontmatter: { changed: [], added: [], removed: [{ field: 'title', from: 'Gamma' }] },
      sections: [{ heading: '## Start', status: 'removed', from: 'c1', line_diff: '- c1' }],
    });
  });

  it('errors: no parent, path not present in repo, path not present at either sha', async () => {
    const one = await diff(R, C);
    expect(one.status).toBe(400);
    expect(one.body).toEqual({ error: 'no parent commit for this path; pass ?from explicitly', code: 'no_parent' });

    for (const q of ['', `?from=${c1}`, `?to=${c3}`, `?from=${c1}&to=${c3}`]) {
      const never = await diff(R, 'wiki/concepts/never.md', q);
      expect(never.status, q).toBe(404);
      expect(never.body).toEqual({ error: 'path not present in repo', code: 'path_not_in_repo' });
    }
    const neverEvo = await evolution(R, 'wiki/concepts/never.md');
    expect(neverEvo.status).toBe(404);
    expect(neverEvo.body).toEqual({ error: 'path not present in repo', code: 'path_not_in_repo' });

    for (const q of [`?from=${c1}&to=${c2}`, `?from=${c4}&to=${c4}`, `?to=${c3}`]) {
      const neither = await diff(R, C, q);
      expect(neither.status, q).toBe(404);
      expect(neither.body).toEqual({ error: 'path not present at either sha', code: 'path_not_at_either_sha' });
    }
  });

  it('errors: anything but a resolving 1–40 hex sha is 400 unknown sha: <value>', async () => {
    // Enough commits that some 1-char prefix is shared by two of them.
    for (let i = 0; i < 17; i++) await push(R, [{ path: 'wiki/concepts/filler.md', content: `---\n---\n## F\n${i}\n` }]);
    gitIn(gitdir(R), 'tag', 'v1', c1);
    const all = gitIn(gitdir(R), 'rev-list', 'main').trim().split('\n');
    const counts = new Map<string, number>();
    for (const s of all) counts.set(s[0]!, (counts.get(s[0]!) ?? 0) + 1);
    const ambiguous = [...counts].find(([, n]) => n >= 2)![0];
    const missing = '0123456789abcdef'.split('').find((ch) => !counts.has(ch));

    const bad = ['main', 'HEAD', 'HEAD~1', 'v1', 'zz', 'g', ambiguous, `${c1}0`, `${c1.slice(0, 39)}x`, `${c1}^`, '-1', 'f'.repeat(40)];
    if (missing) bad.push(missing);
    for (const v of bad) {
      for (const name of ['from', 'to']) {
        const r = await diff(R, A, `?${name}=${encodeURIComponent(v)}`);
        expect(r.status, `${name}=${v}`).toBe(400);
        expect(r.body, `${name}=${v}`).toEqual({ error: `unknown sha: ${v}`, code: 'unknown_sha' });
      }
    }
    // Checked before the path: the value is the first problem reported.
    const first = await diff(R, 'wiki/concepts/never.md', '?from=zz&to=HEAD~1');
    expect(first.status).toBe(400);
    expect(first.body).toEqual({ error: 'unknown sha: zz', code: 'unknown_sha' });
  });

  it('is read-only: no commit, no ref moved, the repository stays valid', async () => {
    const before = commitCount(R);
    const head = gitIn(gitdir(R), 'rev-parse', 'main').trim();
    for (const q of ['', `?from=${c1}`, `?from=${c1}&to=${c3}&blame=true`, '?blame=true', '?from=zz']) await diff(R, A, q);
    await evolution(R, A, '?blame=true');
    expect(commitCount(R)).toBe(before);
    expect(gitIn(gitdir(R), 'rev-parse', 'main').trim()).toBe(head);
    fsck(gitdir(R));
  });

  it('refuses bad page paths, missing repositories, missing credentials and non-members', async () => {
    const badPath = await diff(R, '-x.md');
    expect(badPath.status).toBe(400);
    expect(badPath.body).toEqual({ error: 'invalid page path: -x.md', code: 'invalid_page_path' });
    for (const f of [diff, evolution]) {
      const missing = await f('no-such-repo', A);
      expect(missing.status).toBe(404);
      expect(missing.body).toEqual({ error: 'repo not found', code: 'repo_not_found' });
      const anon = await f(R, A, '', null);
      expect(anon.status).toBe(401);
      expect(anon.body).toEqual({ error: 'missing authorization header', code: 'missing_authorization' });
      for (const repo of [R, 'no-such-repo']) {
        const stranger = await f(repo, A, '', alice.token);
        expect(stranger.status).toBe(403);
        expect(stranger.body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      }
    }
    // A member reads her own repository; its commits carry her account's name.
    const m1 = await push('alices', [{ path: A, content: A1 }], { token: alice.token });
    const m2 = await push('alices', [{ path: A, content: A2 }], { token: alice.token });
    const own = await diff('alices', A, '?blame=true', alice.token);
    expect(own.status).toBe(200);
    expect(own.body.from_sha).toBe(m1);
    expect(own.body.to_sha).toBe(m2);
    expect(own.body.sections[0].introduced_by).toMatchObject({ sha: m1, author: 'Alice', email: 'alice@example.test' });
    expect((await evolution('alices', A, '', alice.token)).status).toBe(200);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Deletions and evolution
// ---------------------------------------------------------------------------------------------------------

describe('deleted pages and evolution', () => {
  const R = 'gone';
  const P = 'wiki/entities/p.md';
  const P1 = '---\ntitle: P\n---\n## One\nfirst\n';
  const P2 = '---\ntitle: P\n---\n## One\nfirst\n\n## Two\nsecond\n';
  let g1: string, g2: string, g3: string, other: string, g4: string;

  beforeAll(async () => {
    g1 = await push(R, [{ path: P, content: P1 }], { name: 'Ann', email: 'ann@example.test', message: 'create p' });
    g2 = await push(R, [{ path: P, content: P2 }], { name: 'Ben', email: 'ben@example.test', message: 'grow p' });
    other = await push(R, [{ path: 'wiki/entities/q.md', content: P1 }], { message: 'unrelated' });
    g3 = await push(R, [{ path: P, delete: true }], { name: 'Cat', email: 'cat@example.test', message: 'drop p' });
  });

  it('the default diff of a deleted page shows everything removed, to = the deleting commit', async () => {
    const r = await diff(R, P, '?blame=true');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from_sha: g2,
      to_sha: g3,
      frontmatter: { changed: [], added: [], removed: [{ field: 'title', from: 'P' }] },
      sections: [
        { heading: '## One', status: 'removed', from: 'first', line_diff: '- first' },
        { heading: '## Two', status: 'removed', from: 'second', line_diff: '- second' },
      ],
    });
    const neither = await diff(R, P, `?from=${g3}&to=${g3.slice(0, 9)}`);
    expect((await diff(R, P, `?from=${other}&to=${g3}`)).body.from_sha).toBe(other);
    expect(neither.status).toBe(404);
    expect(neither.body).toEqual({ error: 'path not present at either sha', code: 'path_not_at_either_sha' });
  });

  it('evolution: newest first, Commit objects, the oldest against the empty document, deletions with an empty `to`', async () => {
    const r = await evolution(R, P);
    expect(r.status).toBe(200);
    expect(EvolutionResponse.parse(r.body)).toEqual(r.body);
    const commits = await commitsOf(R, P);
    expect(r.body.path).toBe(P);
    expect(r.body.entries.map((e: Json) => e.commit)).toEqual([commits.get(g3), commits.get(g2), commits.get(g1)]);
    expect(r.body.entries[0].commit).toMatchObject({ sha: g3, author: 'Cat', email: 'cat@example.test', message: 'drop p' });
    expect(r.body.entries[0].commit.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(r.body.entries.map((e: Json) => [e.diff.from_sha, e.diff.to_sha])).toEqual([
      [g2, g3],
      [g1, g2],
      ['', g1],
    ]);
    expect(r.body.entries[0].diff.sections.map((s: Json) => s.status)).toEqual(['removed', 'removed']);
    expect(r.body.entries[0].diff.sections.every((s: Json) => s.to === undefined)).toBe(true);
    expect(r.body.entries[1].diff).toEqual((await diff(R, P, `?from=${g1}&to=${g2}`)).body);
    expect(r.body.entries[2].diff).toEqual({
      from_sha: '',
      to_sha: g1,
      frontmatter: { changed: [], added: [{ field: 'title', to: 'P' }], removed: [] },
      sections: [{ heading: '## One', status: 'added', to: 'first', line_diff: '+ first' }],
    });
  });

  it('a re-created page diffs against the deleting commit as an empty side; blame reaches across the gap', async () => {
    g4 = await push(R, [{ path: P, content: P2 }], { name: 'Dan', email: 'dan@example.test', message: 'back' });
    const r = await diff(R, P, '?blame=true');
    expect(r.status).toBe(200);
    expect(r.body.from_sha).toBe(g3);
    expect(r.body.to_sha).toBe(g4);
    expect(r.body.sections.map((s: Json) => [s.heading, s.status])).toEqual([
      ['## One', 'added'],
      ['## Two', 'added'],
    ]);
    // Headings are attributed to their first appearance, before the deletion.
    expect(blameOf(r.body)).toEqual({ '## One': g1, '## Two': g2 });
    const evo = await evolution(R, P, '?limit=2');
    expect(evo.body.entries.map((e: Json) => [e.diff.from_sha, e.diff.to_sha])).toEqual([
      [g3, g4],
      [g2, g3],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Blame
// ---------------------------------------------------------------------------------------------------------

describe('blame over more than 200 commits', () => {
  const R = 'long';
  const P = 'wiki/analyses/long.md';
  const TOUCHES = 215;
  /** t[n] = sha of the n-th commit touching the page (1-based). */
  const t: string[] = [''];
  let commits: Map<string, Commit>;
  const pageAt = (n: number) =>
    `---\ntitle: Long\nrev: ${n}\n---\nPreamble since the start.\n\n## Ancient\nHere since the first commit.\n\n` +
    (n >= 50 ? '## Middle\nAdded at 50.\n\n' : '') +
    (n >= 210 ? '## Recent\nAdded at 210.\n\n' : '') +
    `## Log\nrevision ${n}\n`;

  beforeAll(async () => {
    for (let n = 1; n <= TOUCHES; n++) {
      t.push(await push(R, [{ path: P, content: pageAt(n) }], { name: `author-${n}`, email: `a${n}@example.test`, message: `touch ${n}` }));
      // Other pages committed in between do not count against the window.
      if (n % 40 === 0) await push(R, [{ path: 'wiki/analyses/other.md', content: `---\n---\n${n}\n` }]);
    }
    commits = await commitsOf(R, P);
    expect(commits.size).toBe(TOUCHES);
  });

  it('the walk is capped at the 200 most recent touches: older headings go to the oldest commit of the window', async () => {
    const r = await diff(R, P, '?blame=true');
    expect(r.status).toBe(200);
    expect(r.body.from_sha).toBe(t[TOUCHES - 1]);
    expect(r.body.to_sha).toBe(t[TOUCHES]);
    const oldest = t[TOUCHES - 199]!; // touch 16
    expect(blameOf(r.body)).toEqual({ '## Ancient': oldest, '## Middle': t[50], '## Recent': t[210], '## Log': oldest });
    // Blame attributes headings; the preamble has none and is never annotated.
    expect(r.body.preamble).toBeDefined();
    expect(r.body.preamble).not.toHaveProperty('introduced_by');
    const ancient = r.body.sections.find((s: Json) => s.heading === '## Ancient');
    expect(ancient).toEqual({
      heading: '## Ancient',
      status: 'unchanged',
      from: 'Here since the first commit.',
      to: 'Here since the first commit.',
      line_diff: '  Here since the first commit.',
      introduced_by: commits.get(oldest),
    });
    expect(commits.get(oldest)).toMatchObject({ author: 'author-16', email: 'a16@example.test', message: 'touch 16' });
    expect(r.body).not.toHaveProperty('truncated');
  });

  it('the window ends at `to`: exactly 200 touches reach the first commit, 201 do not', async () => {
    const at200 = await diff(R, P, `?to=${t[200]}&blame=true`);
    expect(at200.status).toBe(200);
    expect(at200.body.from_sha).toBe(t[199]);
    expect(blameOf(at200.body)).toEqual({ '## Ancient': t[1], '## Middle': t[50], '## Log': t[1] });
    const at201 = await diff(R, P, `?from=${t[100]}&to=${t[201]}&blame=true`);
    expect(blameOf(at201.body)).toEqual({ '## Ancient': t[2], '## Middle': t[50], '## Log': t[2] });
    const at100 = await diff(R, P, `?to=${t[100].slice(0, 10)}&blame=1`);
    expect(blameOf(at100.body)).toEqual({ '## Ancient': t[1], '## Middle': t[50], '## Log': t[1] });
  });

  it('without blame (absent, false, anything but true/1/yes) there is no introduced_by', async () => {
    for (const q of ['', '?blame=false', '?blame=0', '?blame=no']) {
      const r = await diff(R, P, q);
      expect(r.status).toBe(200);
      expect(anyBlame(r.body), q).toBe(false);
    }
    expect(anyBlame((await diff(R, P, '?blame=yes')).body)).toBe(true);
  });

  it('evolution: default 20, at most 200, bad limits → default; each entry against the previous touch', async () => {
    const r = await evolution(R, P);
    expect(r.status).toBe(200);
    expect(r.body.entries.length).toBe(20);
    expect(r.body.entries.map((e: Json) => e.commit.sha)).toEqual(t.slice(TOUCHES - 19).reverse());
    expect(r.body.entries.map((e: Json) => e.diff.from_sha)).toEqual(t.slice(TOUCHES - 20, TOUCHES).reverse());
    expect(anyBlame(r.body)).toBe(false);
    for (const [q, n] of [['?limit=5', 5], ['?limit=1000', 200], ['?limit=abc', 20], ['?limit=0', 20], ['?limit=-3', 20], ['?limit=2.5', 20]] as const) {
      const e = await evolution(R, P, q);
      expect(e.status, q).toBe(200);
      expect(e.body.entries.length, q).toBe(n);
    }
    const full = await evolution(R, P, '?limit=200');
    // 215 touches: the 200th entry still has a predecessor, so nothing diffs against the empty document.
    expect(full.body.entries[199].commit.sha).toBe(t[16]);
    expect(full.body.entries[199].diff.from_sha).toBe(t[15]);
    expect(full.body.entries[199].diff).toEqual((await diff(R, P, `?from=${t[15]}&to=${t[16]}`)).body);
  });

  it('evolution with blame: each entry has its own 200-touch window, all read from one walk; revisions are parsed once', async () => {
    // The pushes' full-text rows are made up to SEARCH_DELAY_MS after them, reading the page through the
    // same readBlob: made now, they are not counted below (run alone, this test used to count 217).
    await srv.deps.repos.searchSettled();
    const reads = countBlobReads();
    srv.deps.parsedPages = new ParseCache();
    const stats = srv.deps.parsedPages.stats;
    try {
      const first = await evolution(R, P, '?limit=200&blame=true');
      expect(first.status).toBe(200);
      expect(first.body.entries.length).toBe(200);
      expect(first.body).not.toHaveProperty('truncated');
      expect(first.body.entries.filter((e: Json) => e.diff.truncated)).toEqual([]);
      // Every distinct revision read and parsed exactly once, though the windows overlap 200 times; and
      // one blame walk (over the 215 touches the windows span), not one per entry.
      expect(reads.count).toBe(TOUCHES);
      expect(stats).toEqual({ parses: TOUCHES, blameWalks: 1 });
      const newest = first.body.entries[0];
      expect(blameOf(newest.diff)).toEqual({ '## Ancient': t[16], '## Middle': t[50], '## Recent': t[210], '## Log': t[16] });
      const e50 = first.body.entries[TOUCHES - 50];
      expect(e50.commit.sha).toBe(t[50]);
      expect(e50.diff.sections.find((s: Json) => s.heading === '## Middle')).toMatchObject({ status: 'added', introduced_by: commits.get(t[50]!) });
      expect(blameOf(e50.diff)).toEqual({ '## Ancient': t[1], '## Middle': t[50], '## Log': t[1] });
      const oldestEntry = first.body.entries[199];
      expect(oldestEntry.commit.sha).toBe(t[16]);
      expect(blameOf(oldestEntry.diff)).toEqual({ '## Ancient': t[1], '## Log': t[1] });

      reads.count = 0;
      const again = await evolution(R, P, '?limit=200&blame=true');
      expect(again.body).toEqual(first.body);
      expect(reads.count).toBe(0);
      expect(stats).toEqual({ parses: TOUCHES, blameWalks: 2 });
      const d = await diff(R, P, '?blame=true');
      expect(blameOf(d.body)).toEqual(blameOf(first.body.entries[0].diff));
      expect(reads.count).toBe(0);
      expect(stats).toEqual({ parses: TOUCHES, blameWalks: 3 });
      // The diff's blame index is cached: asking again walks nothing.
      await diff(R, P, '?blame=true');
      expect(stats).toEqual({ parses: TOUCHES, blameWalks: 3 });
    } finally {
      reads.restore();
    }
  });

  it('the request’s work budget: evolution stops adding entries exactly where it runs out (top-level truncated)', async () => {
    const deps = srv.deps;
    const fresh = () => (deps.parsedPages = new ParseCache());
    // What the first five entries cost, from a cold parse cache.
    fresh();
    const probe = new WorkBudget(1e12);
    const five = await pageEvolution(deps, deps.repos.open(R), P, { limit: 5 }, probe);
    expect(five.entries.map((e) => e.commit.sha)).toEqual(t.slice(TOUCHES - 4).reverse());

    fresh();
    const cut = await pageEvolution(deps, deps.repos.open(R), P, { limit: 200 }, new WorkBudget(probe.spent));
    expect(cut).toEqual({ path: P, entries: five.entries, truncated: true });

    // With blame the walk finds the budget spent: every entry is its plain diff, saying truncated.
    fresh();
    const blamed = await pageEvolution(deps, deps.repos.open(R), P, { limit: 200, blame: true }, new WorkBudget(probe.spent));
    expect(blamed).toEqual({ path: P, entries: five.entries.map((e) => ({ ...e, diff: { ...e.diff, truncated: true } })), truncated: true });
    expect(deps.parsedPages.stats.blameWalks).toBe(1);

    // Whatever the budget, the first entry is given.
    fresh();
    expect(await pageEvolution(deps, deps.repos.open(R), P, { limit: 200 }, new WorkBudget(0))).toEqual({ path: P, entries: [five.entries[0]], truncated: true });
  });

  it('the request’s work budget: a diff whose blame walk does not fit answers the plain diff, truncated', async () => {
    const deps = srv.deps;
    deps.parsedPages = new ParseCache();
    const probe = new WorkBudget(1e12);
    const plain = await diffPage(deps, deps.repos.open(R), P, {}, probe);
    expect(plain).not.toHaveProperty('truncated');
    deps.parsedPages = new ParseCache();
    const cut = await diffPage(deps, deps.repos.open(R), P, { blame: true }, new WorkBudget(probe.spent));
    expect(cut).toEqual({ ...plain, truncated: true });
    expect(anyBlame(cut)).toBe(false);
    // A budget one walk larger attributes every heading.
    deps.parsedPages = new ParseCache();
    const full = await diffPage(deps, deps.repos.open(R), P, { blame: true }, new WorkBudget(1e12));
    expect(blameOf(full)).toEqual({ '## Ancient': t[16], '## Middle': t[50], '## Recent': t[210], '## Log': t[16] });
    expect(full).not.toHaveProperty('truncated');
  });

  it('the evolution response is streamed JSON, byte for byte what JSON.stringify gives', async () => {
    const r = await srv.api(`/v1/repos/${R}/evolution/${enc(P)}?limit=3&blame=true`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json');
    const text = await r.text();
    const body = JSON.parse(text);
    expect(body.entries.map((e: Json) => e.commit.sha)).toEqual(t.slice(TOUCHES - 2).reverse());
    expect(text).toBe(JSON.stringify(body));
    for (const e of [{ path: 'a/b.md', entries: [] }, { path: 'x"y.md', entries: [], truncated: true as const }, body]) {
      expect(await new Response(evolutionJsonStream(e)).text()).toBe(JSON.stringify(e));
    }
  });
});

/** Counts GitStore.readBlob calls (the parse cache's loader) until restored. */
function countBlobReads(): { count: number; restore: () => void } {
  const git = srv.deps.repos.git;
  const original = git.readBlob;
  const counter = {
    count: 0,
    restore: () => {
      git.readBlob = original;
    },
  };
  git.readBlob = function (this: typeof git, ...args: Parameters<typeof original>) {
    counter.count++;
    return original.apply(this, args);
  };
  return counter;
}

describe('blame on renamed, removed and added sections', () => {
  const R = 'ren';
  const P = 'wiki/concepts/ren.md';
  let r1: string, r2: string, r3: string;

  beforeAll(async () => {
    r1 = await push(R, [{ path: P, content: '---\ntitle: R\n---\n## New Name\nfoo bar baz\n' }], { name: 'A', email: 'a@x.test' });
    r2 = await push(R, [{ path: P, content: '---\ntitle: R\n---\n## Old Name\nthe quick brown fox jumps\n' }], { name: 'B', email: 'b@x.test' });
    r3 = await push(R, [{ path: P, content: '---\ntitle: R\n---\n## New Name\nthe quick brown fox jumps\n' }], { name: 'C', email: 'c@x.test' });
  });

  it('a renamed section takes the old heading’s attribution, even when the new heading appeared earlier', async () => {
    const commits = await commitsOf(R, P);
    const r = await diff(R, P, '?blame=true');
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      from_sha: r2,
      to_sha: r3,
      frontmatter: { changed: [], added: [], removed: [] },
      sections: [
        {
          heading: '## New Name',
          status: 'renamed',
          old_heading: '## Old Name',
          from: 'the quick brown fox jumps',
          to: 'the quick brown fox jumps',
          // The body did not change, so the rename alone is the change: no line_diff.
          introduced_by: commits.get(r2),
        },
      ],
    });
  });

  it('removed sections are never annotated; added ones are attributed to the commit that adds them', async () => {
    const r = await diff(R, P, `?to=${r2}&blame=true`);
    expect(r.status).toBe(200);
    expect(r.body.from_sha).toBe(r1);
    expect(r.body.sections.map((s: Json) => [s.heading, s.status, s.introduced_by?.sha])).toEqual([
      ['## Old Name', 'added', r2],
      ['## New Name', 'removed', undefined],
    ]);
    expect(r.body.sections[1]).not.toHaveProperty('introduced_by');
    const evo = await evolution(R, P, '?blame=true');
    expect(evo.body.entries.map((e: Json) => e.diff.sections.map((s: Json) => [s.status, s.introduced_by?.sha]))).toEqual([
      [['renamed', r2]],
      [['added', r2], ['removed', undefined]],
      [['added', r1]],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------------------------------------

describe('pages without structure, huge pages, binary content', () => {
  it('a page without frontmatter gives parse_fallback with the whole-file diff; blame leaves it plain', async () => {
    const P = 'raw/sessions/plain';
    const n1 = await push('bad', [{ path: P, content: '# Title\n\nhello\n' }]);
    const n2 = await push('bad', [{ path: P, content: '# Title\n\nhello world\n\n\n' }]);
    const expected = {
      from_sha: n1,
      to_sha: n2,
      frontmatter: { changed: [], added: [], removed: [] },
      preamble: {
        heading: '_preamble',
        status: 'modified',
        from: '# Title\n\nhello',
        to: '# Title\n\nhello world',
        line_diff: '  # Title\n  \n- hello\n+ hello world',
      },
      sections: [],
      parse_fallback: true,
    };
    for (const q of ['', '?blame=true']) {
      const r = await diff('bad', P, q);
      expect(r.status).toBe(200);
      expect(r.body).toEqual(expected);
    }
    const evo = await evolution('bad', P, '?blame=true');
    expect(evo.body.entries.map((e: Json) => e.diff.parse_fallback)).toEqual([true, true]);
    expect(evo.body.entries[1].diff.preamble).toEqual({ heading: '_preamble', status: 'added', to: '# Title\n\nhello', line_diff: '+ # Title\n+ \n+ hello' });
  });

  it('a multi-megabyte page: the Myers cap makes its line diff coarse (truncated), and it still applies', async () => {
    const P = 'wiki/analyses/huge.md';
    const lines = Array.from({ length: 60_000 }, (_, i) => `line ${i} `.padEnd(50, 'x'));
    const v1 = `---\ntitle: Huge\n---\n## Body\n${lines.join('\n')}\n`;
    const v2 = `---\ntitle: Huge\n---\n## Body\n${lines.map((l, i) => (i % 2 ? `changed ${l}` : l)).join('\n')}\n\n## Tail\nend\n`;
    expect(v1.length).toBeGreaterThan(3_000_000);
    await push('big', [{ path: P, content: v1 }]);
    await push('big', [{ path: P, content: v2 }]);
    const r = await diff('big', P, '?blame=true');
    expect(r.status).toBe(200);
    expect(r.body.truncated).toBe(true);
    expect(r.body.sections.map((s: Json) => [s.heading, s.status])).toEqual([
      ['## Body', 'modified'],
      ['## Tail', 'added'],
    ]);
    const ld: string[] = r.body.sections[0].line_diff.split('\n');
    expect(ld.filter((l) => !l.startsWith('+ ')).map((l) => l.slice(2))).toEqual(lines);
    expect(ld.filter((l) => !l.startsWith('- ')).map((l) => l.slice(2)).join('\n')).toBe(r.body.sections[0].to);
    // Blame fitted in the request's budget: both headings attributed.
    expect(r.body.sections.map((s: Json) => s.introduced_by?.sha)).toEqual([r.body.from_sha, r.body.to_sha]);
    const evo = await evolution('big', P, '?blame=true');
    expect(evo.status).toBe(200);
    expect(evo.body.entries.map((e: Json) => e.diff.truncated)).toEqual([true, undefined]);
    expect(evo.body).not.toHaveProperty('truncated');
  });

  it('evolution of a multi-megabyte page stops at its size cap and says truncated instead of building a giant answer', async () => {
    const P = 'wiki/analyses/huge2.md';
    const shas: string[] = [];
    for (let v = 0; v < 6; v++) {
      const lines = Array.from({ length: 50_000 }, (_, i) => `v${v} line ${i} `.padEnd(60, 'y'));
      shas.push(await push('big', [{ path: P, content: `---\ntitle: Huge ${v}\n---\n## Body\n${lines.join('\n')}\n` }]));
    }
    const evo = await evolution('big', P, '?blame=true&limit=6');
    expect(evo.status).toBe(200);
    expect(evo.body.truncated).toBe(true);
    expect(EvolutionResponse.parse(evo.body).truncated).toBe(true);
    // Each entry replaces every line: ~3 MB on each side and ~6 MB of line diff, ~12.4 M characters; a
    // third would pass EVOLUTION_MAX_CHARS (32 Mi).
    expect(evo.body.entries.map((e: Json) => e.commit.sha)).toEqual([shas[5], shas[4]]);
    expect(evo.body.entries.map((e: Json) => e.diff.from_sha)).toEqual([shas[4], shas[3]]);
    // Nothing was cut inside the entries (no Myers needed, blame within the budget).
    expect(evo.body.entries.map((e: Json) => [e.diff.truncated, e.diff.sections[0].introduced_by?.sha])).toEqual([
      [undefined, shas[0]],
      [undefined, shas[0]],
    ]);
  });

  it('binary and non-UTF-8 content answers 200 as a fallback diff', async () => {
    const P = 'raw/sessions/blob.bin';
    // Non-UTF-8 bytes can only come from git itself: commit them through the store.
    expect((await srv.api('/v1/repos/bin', { method: 'POST' })).status).toBe(201);
    let seed = 7;
    const bytes = (n: number) =>
      Uint8Array.from({ length: n }, () => {
        seed = (seed * 1103515245 + 12345) >>> 0;
        return seed >>> 24;
      });
    const author = { name: 'bytes', email: 'bytes@example.test' };
    const b1 = (await srv.deps.repos.commitFiles('bin', [{ path: P, content: bytes(300_000) }], author, 'binary 1')).head;
    const b2 = (await srv.deps.repos.commitFiles('bin', [{ path: P, content: bytes(300_000) }], author, 'binary 2')).head;
    // And text with NULs and control characters through the API.
    const b3 = await push('bin', [{ path: P, content: '---\ntitle: "\\u0000"\n---\n## \u0000\u0001\u0002\n\u0000\u00ff\ufffd\n' }]);
    const r = await diff('bin', P, `?from=${b1}&to=${b2}&blame=true`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ from_sha: b1, to_sha: b2, sections: [], parse_fallback: true });
    expect(r.body).not.toHaveProperty('truncated');
    const last = await diff('bin', P, '?blame=true');
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ from_sha: b2, to_sha: b3, parse_fallback: true });
    const evo = await evolution('bin', P, '?blame=true');
    expect(evo.status).toBe(200);
    expect(evo.body.entries.map((e: Json) => e.commit.sha)).toEqual([b3, b2, b1]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// The parse cache on its own
// ---------------------------------------------------------------------------------------------------------

describe('ParseCache', () => {
  const bytesOf = (t: string) => new TextEncoder().encode(t);

  it('parses a blob once, also under concurrent requests, and keys by repository and blob', async () => {
    const cache = new ParseCache();
    let loads = 0;
    const load = async () => {
      loads++;
      await new Promise((r) => setTimeout(r, 5));
      return bytesOf('---\ntitle: T\n---\n## A\na\n');
    };
    const [p1, p2] = await Promise.all([cache.get('r', 'oid1', load), cache.get('r', 'oid1', load)]);
    expect(p1).toBe(p2);
    expect(loads).toBe(1);
    expect(await cache.get('r', 'oid1', load)).toBe(p1);
    expect(loads).toBe(1);
    await cache.get('other', 'oid1', load);
    expect(loads).toBe(2);
    expect(p1.sections.map((s) => s.heading)).toEqual(['## A']);
  });

  it('stays within its capacity; outlines (headings only) outlive evicted pages', async () => {
    const cache = new ParseCache(64 * 1024, 64 * 1024);
    let loads = 0;
    const page = (i: number) => `---\n---\nintro\n## H${i}\n${'x'.repeat(20_000)}\n`;
    for (let i = 0; i < 10; i++) {
      await cache.get('r', `b${i}`, async () => {
        loads++;
        return bytesOf(page(i));
      });
    }
    expect(loads).toBe(10);
    expect(cache.bytes).toBeLessThanOrEqual(128 * 1024);
    const reload = async () => {
      loads++;
      return bytesOf(page(0));
    };
    const outline = await cache.outline('r', 'b0', reload);
    expect(loads).toBe(10);
    expect(outline.sections).toEqual([{ heading: '## H0', body: '', line: 4 }]);
    expect(outline.preamble).not.toBe('');
    expect(outline.text).toBe('');
    // The page itself was evicted: reading it again parses it again.
    expect((await cache.get('r', 'b0', reload)).sections[0]!.body.length).toBe(20_000);
    expect(loads).toBe(11);
  });

  it('a failed load is not cached', async () => {
    const cache = new ParseCache();
    await expect(cache.get('r', 'x', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect((await cache.get('r', 'x', async () => bytesOf('## A\n'))).frontmatter).toBeNull();
  });
});
