/**
 * The search routes over HTTP, once for both builds: test/search.test.ts runs these cases against the Node
 * server and test/search-workers.test.ts against the hosted build in workerd (Miniflare). Every answer is
 * also checked against the OpenAPI document by the target's client (test/helpers/targets.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import type { SearchResponse } from '../schema/wire/search.ts';

type Init = RequestInit & { token?: string | null; json?: unknown };
interface Answer {
  status: number;
  body: SearchResponse & { error?: string };
}

/** Hostile or odd queries: each must be answered 200 or 400 with `{"error"}`, never 5xx. */
export const HOSTILE_QUERIES = [
  'a OR b NOT c',
  'NEAR(a b)',
  'NEAR(',
  'title:secret',
  'body:x OR title:y',
  '{title body}: x',
  '^start',
  '+plus',
  'a AND',
  'AND',
  'OR NOT',
  '*',
  '**',
  '"',
  '""',
  '"a" "',
  '-',
  '- -',
  '-"',
  '(',
  ')',
  '((a)',
  'a) OR (b',
  "'",
  "' OR 1=1 --",
  '"; DROP TABLE search_fts; --',
  'rank MATCH x',
  'bm25(',
  '\\"',
  'x*y*z',
  '*prefix',
  'a\u0000b',
  '\u0000',
  'e\u0301t\u0301e\u0301',
  '🙂',
  '中文 검색',
  'x'.repeat(200),
  'x'.repeat(201),
  `${'word '.repeat(32)}`,
  `${'word '.repeat(33)}`,
  // About 10 KB each once percent-encoded (a request line much longer than that is refused by the HTTP
  // server itself, 431, before the application sees it).
  'x'.repeat(10_000),
  'ab '.repeat(3000),
  'é'.repeat(1600),
  '"'.repeat(3001),
  '-'.repeat(10_000),
  '*'.repeat(10_000),
  '-x'.repeat(5000),
  'x*'.repeat(5000),
  'NEAR('.repeat(1500),
  `"${'word '.repeat(1500)}"`,
];

export function searchCases(kind: TargetKind): void {
  describe(`${kind}: search`, () => {
    let t: Target;
    let idp: IdpStandIn;

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: r.status, body: body as Answer['body'] };
    };
    const push = async (repo: string, files: Array<{ path: string; content?: string; delete?: boolean }>, init: Init = {}) => {
      const r = await call(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files, message: 'search test' }, ...init });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body as unknown as { new_head: string; pushed: Array<{ path: string; sha: string }> };
    };
    const search = (repo: string, q: string, extra = '', init: Init = {}): Promise<Answer> =>
      call(`/v1/repos/${repo}/search?q=${encodeURIComponent(q)}${extra}`, init);
    const paths = (a: Answer) => a.body.results.map((r) => r.path);
    const signIn = async (sub: string, email: string) => {
      const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
      const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(r.status).toBe(200);
      return r.body as unknown as { access_token: string; user: { id: string } };
    };

    beforeAll(async () => {
      idp = await startIdp();
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      await push('rank', [
        { path: 'heading.md', content: '---\ntitle: Birds\n---\n## Kestrel\nA small falcon of open country.\n' },
        { path: 'body.md', content: '---\ntitle: Notes\n---\n## Sightings\nWe saw a kestrel and many other birds near the river.\n' },
        { path: 'titled.md', content: '---\ntitle: Osprey\n---\n## Facts\nFish eater.\n' },
        { path: 'osprey-body.md', content: '## Facts\nThe osprey was seen once.\n' },
        { path: 'tagged.md', content: '---\ntags: [plover]\n---\n## Facts\nShore bird.\n' },
        { path: 'plover-body.md', content: '## Facts\nA plover is a shore bird.\n' },
        { path: 'summary.md', content: '---\nsummary: all about the grebe\n---\n## Facts\nDiving bird.\n' },
        { path: 'grebe-body.md', content: '## Facts\nOne grebe, diving.\n' },
        { path: 'phrase.md', content: '## Herons\nThe blue heron stood still.\n' },
        { path: 'reversed.md', content: '## Herons\nA heron, blue in the dusk.\n' },
        { path: 'apart.md', content: '## Herons\nBlue water; a grey heron.\n' },
        { path: 'migration.md', content: '## Plan\nThe migration starts in spring.\n' },
        { path: 'migrating.md', content: '## Plan\nBirds migrating south.\n' },
        { path: 'migrant.md', content: '## Plan\nA migrant worker.\n' },
        { path: 'falcon-peregrine.md', content: '## Falcons\nThe peregrine falcon dives.\n' },
        { path: 'falcon-lanner.md', content: '## Falcons\nThe lanner falcon hunts.\n' },
        { path: 'cafe.md', content: '---\ntitle: Café Crème\n---\n## Résumé\nUne naïve façade, Ærøskøbing.\n' },
        { path: 'plain.md', content: '## Resume\nCafe creme at the facade.\n' },
        { path: 'marks.md', content: '## Quotes\nShe said «bonjour» to the wren.\n' },
      ]);
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
    });

    it('a heading match ranks above a body match; title, tags and summary rank above the body too', async () => {
      expect(paths(await search('rank', 'kestrel'))).toEqual(['heading.md', 'body.md']);
      expect(paths(await search('rank', 'osprey'))).toEqual(['titled.md', 'osprey-body.md']);
      expect(paths(await search('rank', 'plover'))).toEqual(['tagged.md', 'plover-body.md']);
      expect(paths(await search('rank', 'grebe'))).toEqual(['summary.md', 'grebe-body.md']);
      const k = await search('rank', 'kestrel');
      expect(k.body.results[0]!.score).toBeGreaterThan(k.body.results[1]!.score);
      expect(k.body.total).toBe(2);
    });

    it('"exact phrases" match the words in order and next to each other', async () => {
      expect(paths(await search('rank', '"blue heron"'))).toEqual(['phrase.md']);
      expect(paths(await search('rank', 'blue heron')).sort()).toEqual(['apart.md', 'phrase.md', 'reversed.md']);
      expect(paths(await search('rank', '"heron blue"'))).toEqual(['reversed.md']);
    });

    it('prefix* matches the words that start with it', async () => {
      expect(paths(await search('rank', 'migrat*')).sort()).toEqual(['migrating.md', 'migration.md']);
      expect(paths(await search('rank', 'migr*')).sort()).toEqual(['migrant.md', 'migrating.md', 'migration.md']);
      expect(paths(await search('rank', 'migrat'))).toEqual([]);
    });

    it('a query at the edge of its budget is answered: 16 words, 4 prefixes of 3 letters', async () => {
      const sixteen = await search('rank', 'the blue heron stood still the blue heron stood still the blue heron stood still the');
      expect([sixteen.status, paths(sixteen)]).toEqual([200, ['phrase.md']]);
      const four = await search('rank', 'mig* pla* -wor* "the migration sta"*');
      expect([four.status, paths(four)]).toEqual([200, ['migration.md']]);
    });

    it('-excluded leaves out the pages that contain it', async () => {
      expect(paths(await search('rank', 'falcon')).sort()).toEqual(['falcon-lanner.md', 'falcon-peregrine.md', 'heading.md']);
      expect(paths(await search('rank', 'falcon -peregrine')).sort()).toEqual(['falcon-lanner.md', 'heading.md']);
      expect(paths(await search('rank', 'falcon -peregrine -"small falcon"'))).toEqual(['falcon-lanner.md']);
    });

    it('case and diacritics are ignored both ways', async () => {
      for (const q of ['cafe', 'CAFÉ', 'creme', 'Crème', 'résumé', 'RESUME', 'facade', 'façade', 'FAÇADE']) {
        expect(paths(await search('rank', q)).sort(), q).toEqual(['cafe.md', 'plain.md']);
      }
      expect(paths(await search('rank', 'NAIVE'))).toEqual(['cafe.md']);
      expect(paths(await search('rank', 'ærøskøbing'))).toEqual(['cafe.md']);
      // e + combining acute is é.
      expect(paths(await search('rank', 'Cafe\u0301')).sort()).toEqual(['cafe.md', 'plain.md']);
    });

    it('snippets mark the matches with « »; the page\'s own « » become ‹ ›; sha is the page\'s last commit', async () => {
      const r = await search('rank', 'wren');
      expect(r.body.results[0]!.snippet).toBe('She said ‹bonjour› to the «wren».');
      const h = await search('rank', '"blue heron"');
      expect(h.body.results[0]!.snippet).toBe('The «blue heron» stood still.');
      const page = await t.api('/v1/repos/rank/pages/marks.md');
      expect(r.body.results[0]!.sha).toBe(page.headers.get('x-page-sha'));
      expect(r.body.results[0]).toEqual({ repo_id: 'rank', path: 'marks.md', snippet: expect.any(String), score: expect.any(Number), sha: expect.stringMatching(/^[0-9a-f]{40}$/) });
      const c = await search('rank', 'creme');
      expect(c.body.results.find((x) => x.path === 'cafe.md')).toMatchObject({ title: 'Café Crème', snippet: 'Café «Crème»' });
    });

    it('an update, a deletion and a rename are searchable as soon as the push is answered', async () => {
      await push('life', [{ path: 'a.md', content: '## One\nalbatross glides\n' }, { path: 'old/name.md', content: '## Two\ncormorant dries\n' }]);
      expect(paths(await search('life', 'albatross'))).toEqual(['a.md']);
      await push('life', [{ path: 'a.md', content: '## One\npetrel glides\n' }]);
      expect(paths(await search('life', 'albatross'))).toEqual([]);
      expect(paths(await search('life', 'petrel'))).toEqual(['a.md']);
      const moved = await push('life', [{ path: 'old/name.md', delete: true }, { path: 'new/name.md', content: '## Two\ncormorant dries\n' }]);
      const hit = await search('life', 'cormorant');
      expect(paths(hit)).toEqual(['new/name.md']);
      expect(hit.body.results[0]!.sha).toBe(moved.new_head);
      await push('life', [{ path: 'a.md', delete: true }]);
      expect(await search('life', 'petrel')).toEqual({ status: 200, body: { results: [], total: 0 } });
      expect(paths(await search('life', 'glides'))).toEqual([]);
    });

    it('type and tag filter exactly', async () => {
      await push('filters', [
        { path: 'wiki/concepts/x.md', content: '---\ntags: [alpha, beta]\n---\nshared' },
        { path: 'wiki/entities/y.md', content: '---\ntype: concept\ntags: alpha\n---\nshared' },
        { path: 'raw/sessions/z', content: 'shared' },
      ]);
      expect(paths(await search('filters', 'shared', '&type=concept')).sort()).toEqual(['wiki/concepts/x.md', 'wiki/entities/y.md']);
      expect(paths(await search('filters', 'shared', '&type=source'))).toEqual(['raw/sessions/z']);
      expect(paths(await search('filters', 'shared', '&type=entity'))).toEqual([]);
      expect(paths(await search('filters', 'shared', '&tag=alpha')).sort()).toEqual(['wiki/concepts/x.md', 'wiki/entities/y.md']);
      expect(paths(await search('filters', 'shared', '&tag=beta&type=concept'))).toEqual(['wiki/concepts/x.md']);
      expect(paths(await search('filters', 'shared', '&tag=alph'))).toEqual([]);
      const x = (await search('filters', 'shared', '&tag=beta')).body.results[0]!;
      expect(x).toMatchObject({ type: 'concept', tags: ['alpha', 'beta'] });
    });

    it('membership: the repository route for members only, the cross-repository route over your own repositories', async () => {
      const alice = await signIn('alice', 'alice@example.test');
      const bob = await signIn('bob', 'bob@example.test');
      expect((await call('/v1/repos', { method: 'POST', token: alice.access_token, json: { id: 'aviary' } })).status).toBe(201);
      await push('aviary', [{ path: 'n.md', content: '## Nightjar\nchurring at dusk' }], { token: alice.access_token });
      expect(paths(await search('aviary', 'nightjar', '', { token: alice.access_token }))).toEqual(['n.md']);
      const denied = await search('aviary', 'nightjar', '', { token: bob.access_token });
      expect([denied.status, denied.body]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
      const none = await search('nowhere', 'nightjar', '', { token: bob.access_token });
      expect([none.status, none.body]).toEqual([403, { error: 'not a member of this repo', code: 'not_a_member' }]);
      expect((await search('nowhere', 'nightjar')).status).toBe(404);
      const all = (token?: string) => call(`/v1/search?q=nightjar`, token === undefined ? {} : { token });
      expect(await all(bob.access_token)).toEqual({ status: 200, body: { results: [], total: 0 } });
      expect((await all(alice.access_token)).body.results.map((r) => `${r.repo_id}/${r.path}`)).toEqual(['aviary/n.md']);
      // The legacy key searches every repository.
      await push('rank', [{ path: 'nightjar.md', content: 'a nightjar in the body' }]);
      // (Their order depends on each repository's word statistics, from which bm25 scores.)
      expect((await all()).body.results.map((r) => `${r.repo_id}/${r.path}`).sort()).toEqual(['aviary/n.md', 'rank/nightjar.md']);
      // Bob joins: aviary's pages are his to search from then on.
      const invite = await call('/v1/repos/aviary/invite-keys', { method: 'POST', token: alice.access_token, json: {} });
      expect((await call('/v1/repos/join', { method: 'POST', token: bob.access_token, json: { key: (invite.body as unknown as { token: string }).token } })).status).toBe(200);
      expect((await all(bob.access_token)).body.results.map((r) => `${r.repo_id}/${r.path}`)).toEqual(['aviary/n.md']);
      expect((await call('/v1/search?q=nightjar', { token: null })).status).toBe(401);
    });

    it("a push is in the very next search and links request of another member (its derived rows are made after the answer)", async () => {
      const carol = await signIn('carol', 'carol@example.test');
      const dave = await signIn('dave', 'dave@example.test');
      expect((await call('/v1/repos', { method: 'POST', token: carol.access_token, json: { id: 'estuary' } })).status).toBe(201);
      const invite = await call('/v1/repos/estuary/invite-keys', { method: 'POST', token: carol.access_token, json: {} });
      expect((await call('/v1/repos/join', { method: 'POST', token: dave.access_token, json: { key: (invite.body as unknown as { token: string }).token } })).status).toBe(200);
      const links = async (path: string) => {
        const r = await t.api(`/v1/repos/estuary/links/${path}`, { token: dave.access_token });
        return { status: r.status, body: (await r.json()) as unknown };
      };
      for (let round = 0; round < 3; round++) {
        // Carol pushes; Dave asks at once, with nothing in between (links first: a search would make every row).
        await push('estuary', [
          { path: 'wiki/concepts/tides.md', content: `---\ntitle: Tides ${round}\n---\nThe godwit${round} feeds at low water. See [[mudflats]] and [r](../entities/river.md).\n` },
          { path: 'wiki/concepts/mudflats.md', content: `## Mud\nCurlew${round} probe here.\n` },
        ], { token: carol.access_token });
        expect(await links('wiki/concepts/mudflats.md')).toEqual({
          status: 200,
          body: { path: 'wiki/concepts/mudflats.md', outgoing: [], incoming: [{ path: 'wiki/concepts/tides.md', title: `Tides ${round}` }] },
        });
        expect(await links('wiki/concepts/tides.md')).toEqual({
          status: 200,
          body: {
            path: 'wiki/concepts/tides.md',
            outgoing: [{ target: 'mudflats', path: 'wiki/concepts/mudflats.md' }, { target: '../entities/river.md' }],
            incoming: [],
          },
        });
        expect(paths(await search('estuary', `godwit${round}`, '', { token: dave.access_token }))).toEqual(['wiki/concepts/tides.md']);
        // The link goes, and the page it named: the very next requests say so.
        await push('estuary', [
          { path: 'wiki/concepts/tides.md', content: `## Tides\nNo links now, dunlin${round}.\n` },
          { path: 'wiki/concepts/mudflats.md', delete: true },
        ], { token: carol.access_token });
        expect(await links('wiki/concepts/tides.md')).toEqual({ status: 200, body: { path: 'wiki/concepts/tides.md', outgoing: [], incoming: [] } });
        expect((await links('wiki/concepts/mudflats.md')).status).toBe(404);
        expect(paths(await search('estuary', `curlew${round}`, '', { token: dave.access_token }))).toEqual([]);
        expect(paths(await search('estuary', `dunlin${round}`, '', { token: dave.access_token }))).toEqual(['wiki/concepts/tides.md']);
      }
    });

    it('the cross-repository route merges best first, pages with limit and offset, and counts every match', async () => {
      await push('merge-a', [{ path: 'h.md', content: '## Wagtail\nwagtail' }, { path: 'b.md', content: 'a wagtail, in passing, among many other words here' }]);
      await push('merge-b', [{ path: 'h.md', content: '---\ntitle: Wagtail\n---\n## Wagtail\nwagtail wagtail' }]);
      const all = await call('/v1/search?q=wagtail');
      expect(all.body.total).toBe(3);
      const scores = all.body.results.map((r) => r.score);
      expect([...scores].sort((a, b) => b - a)).toEqual(scores);
      expect(all.body.results.at(-1)).toMatchObject({ repo_id: 'merge-a', path: 'b.md' });
      const second = await call('/v1/search?q=wagtail&limit=1&offset=1');
      expect(second.body).toEqual({ results: [all.body.results[1]], total: 3 });
      expect((await call('/v1/search?q=wagtail&type=nope')).body).toEqual({ results: [], total: 0 });
    });

    it('a full page of 100 results (and deeper pages across repositories) with every snippet and sha', async () => {
      const files = Array.from({ length: 150 }, (_, i) => ({ path: `many/p${String(i).padStart(3, '0')}.md`, content: `## Swift ${i}\nswift number ${i}` }));
      const { new_head } = await push('paging', files);
      const page = await search('paging', 'swift', '&limit=500');
      expect([page.status, page.body.total, page.body.results.length]).toEqual([200, 150, 100]);
      expect(page.body.results.every((r) => r.sha === new_head && r.snippet.includes('«Swift»'))).toBe(true);
      const rest = await search('paging', 'swift', '&limit=100&offset=100');
      expect([rest.body.total, rest.body.results.length]).toEqual([150, 50]);
      expect(new Set([...page.body.results, ...rest.body.results].map((r) => r.path)).size).toBe(150);
      const deep = await call('/v1/search?q=swift&limit=100&offset=40');
      expect([deep.status, deep.body.total, deep.body.results.length]).toEqual([200, 150, 100]);
      expect(deep.body.results.every((r) => r.snippet.includes('«Swift»') && r.sha === new_head)).toBe(true);
    });

    it('equal ranks: rank then path across every page of results, whatever the ids the rows were given', async () => {
      // Five groups of twelve pages; the pages of a group are alike (equal ranks), the groups are not.
      const group = (g: number) => `## Dipper\n${'dipper '.repeat(g + 1)}and ${'stream '.repeat(6 - g)}`;
      const name = (g: number, k: number) => `g${g}/${String.fromCharCode(97 + k)}.md`;
      // Pushed last page first, each push searched at once (its rows made then): the rows' ids run against
      // the paths' order, which is the order equal ranks come out of the full-text table.
      for (let k = 11; k >= 0; k--) {
        await push('ties', Array.from({ length: 5 }, (_, g) => ({ path: name(g, k), content: group(g) })));
        expect((await search('ties', 'dipper')).body.total).toBe(5 * (12 - k));
      }
      const all = await search('ties', 'dipper', '&limit=100');
      expect([all.status, all.body.total, all.body.results.length]).toEqual([200, 60, 60]);
      const got = all.body.results.map((r) => r.path);
      // Best group first (most dippers in the shortest body), and within a group by path: a.md first.
      const groups = [...new Set(got.map((p) => p.split('/')[0]))];
      expect(groups).toHaveLength(5);
      expect(got).toEqual(groups.flatMap((g) => Array.from({ length: 12 }, (_, k) => `${g}/${String.fromCharCode(97 + k)}.md`)));
      // Every page size and start gives the same order: a cut inside a group, inside a run longer than a page.
      for (const [limit, offsets] of [[10, [0, 5, 10, 38, 50, 55]], [7, [3, 20, 53]], [1, [0, 11, 12, 59]], [40, [0, 20]]] as const) {
        for (const offset of offsets) {
          const r = await search('ties', 'dipper', `&limit=${limit}&offset=${offset}`);
          expect([r.status, r.body.total, paths(r)], `limit ${limit} offset ${offset}`).toEqual([200, 60, got.slice(offset, offset + limit)]);
        }
      }
      // One run of equal ranks longer than any page and its margin: still by path.
      const wrens = Array.from({ length: 70 }, (_, i) => `w/${String(i).padStart(2, '0')}.md`);
      for (let i = 0; i < 70; i += 10) {
        await push('ties-run', wrens.slice(i, i + 10).reverse().map((path) => ({ path, content: '## Wren\nA wren sang.\n' })));
        await search('ties-run', 'wren');
      }
      for (const offset of [0, 10, 33, 65]) {
        const r = await search('ties-run', 'wren', `&limit=5&offset=${offset}`);
        expect([r.status, r.body.total, paths(r)]).toEqual([200, 70, wrens.slice(offset, offset + 5)]);
      }
    });

    it('refuses bad syntax with 400 and a readable message, on both routes', async () => {
      const cases: Array<[string, string, string]> = [
        ['', 'q required', 'q_required'],
        ['   ', 'q required', 'q_required'],
        ['"unbalanced', 'invalid query: unbalanced quote', 'invalid_query'],
        ['* - ""', 'invalid query: nothing to search for (only operators or punctuation)', 'invalid_query'],
        ['-alone -"and this"', 'invalid query: only exclusions; add a word to search for', 'invalid_query'],
        ['x'.repeat(201), 'invalid query: a term is longer than 200 characters', 'invalid_query'],
        // The cost budget (lib/core/search-query.ts).
        ['w '.repeat(17), 'invalid query: more than 16 words', 'invalid_query'],
        [`"${'blue heron '.repeat(8)}" stood`, 'invalid query: more than 16 words', 'invalid_query'],
        ['abc* bcd* cde* def* efg*', 'invalid query: more than 4 prefixes (word*)', 'invalid_query'],
        ['mi*', 'invalid query: a prefix needs at least 3 letters or digits before *', 'invalid_query'],
        ['falcon -"small fa"*', 'invalid query: a prefix needs at least 3 letters or digits before *', 'invalid_query'],
      ];
      for (const [q, error, code] of cases) {
        expect(await search('rank', q), q).toEqual({ status: 400, body: { error, code } });
        expect(await call(`/v1/search?q=${encodeURIComponent(q)}`), q).toEqual({ status: 400, body: { error, code } });
      }
      expect(await call('/v1/repos/rank/search')).toEqual({ status: 400, body: { error: 'q required', code: 'q_required' } });
      expect(await call('/v1/search')).toEqual({ status: 400, body: { error: 'q required', code: 'q_required' } });
    });

    it('hostile queries (FTS syntax, SQL, NUL, 10 KB) get 200 or 400, never a 5xx', async () => {
      const seen = new Set<number>();
      for (const q of HOSTILE_QUERIES) {
        for (const path of [`/v1/repos/rank/search?q=${encodeURIComponent(q)}`, `/v1/search?q=${encodeURIComponent(q)}`]) {
          const r = await call(path);
          seen.add(r.status);
          expect([200, 400], `${JSON.stringify(q.slice(0, 40))} → ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`).toContain(r.status);
          if (r.status === 400) expect(Object.keys(r.body)).toEqual(['error', 'code']);
          else expect(Array.isArray(r.body.results) && typeof r.body.total === 'number').toBe(true);
        }
      }
      expect([...seen].sort()).toEqual([200, 400]);
      // FTS syntax is searched for as words: `title:secret` is the phrase "title secret".
      await push('rank', [{ path: 'colon.md', content: 'the title secret is out; NEAR the end, a OR b' }]);
      expect(paths(await search('rank', 'title:secret'))).toEqual(['colon.md']);
      expect(paths(await search('rank', 'NEAR( end'))).toEqual(['colon.md']);
      expect(paths(await search('rank', 'a OR b'))).toEqual(['colon.md']);
      // A raw query string that is not valid UTF-8 percent-encoding.
      expect([200, 400]).toContain((await call('/v1/repos/rank/search?q=%ED%A0%80%FF')).status);
      expect(t.logs.filter((l) => l.includes('"level":"error"'))).toEqual([]);
    });
  });
}
