import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fsck, gitIn, startTestServer, type TestServer } from './helpers/env.ts';
import { pullBody } from '../lib/usecases/pull-body.ts';
import type { PulledPage, PullPages } from '../lib/repo/repo-store.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const enc = (p: string) => p.split('/').map(encodeURIComponent).join('/');
const iso = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

let srv: TestServer;
const gitdir = (id: string) => join(srv.dataRoot, 'repos', `${id}.git`);
const push = (repo: string, body: unknown, token?: string) =>
  srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: body, token });
const commitCount = (repo: string) => Number(gitIn(gitdir(repo), 'rev-list', '--count', 'main').trim());

beforeAll(async () => {
  srv = await startTestServer({ env: { SERVICE_MAX_BODY_BYTES: '65536' } });
});
afterAll(async () => srv?.stop());

describe('repositories under the legacy key', () => {
  it('creates through the legacy route idempotently, stripping the id', async () => {
    const r1 = await srv.api('/v1/repos/my.repo!', { method: 'POST' });
    expect(r1.status).toBe(201);
    expect(await r1.json()).toEqual({ repo_id: 'myrepo' });
    const r2 = await srv.api('/v1/repos/myrepo', { method: 'POST' });
    expect(r2.status).toBe(201);
    expect(await r2.json()).toEqual({ repo_id: 'myrepo' });
    expect(existsSync(join(gitdir('myrepo'), 'HEAD'))).toBe(true);
    for (const bad of ['...', '%21%21', 'a'.repeat(65)]) {
      const r = await srv.api(`/v1/repos/${bad}`, { method: 'POST' });
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ error: 'invalid repo id', code: 'invalid_repo_id' });
    }
  });

  it('refuses the create route to the legacy key', async () => {
    const r = await srv.api('/v1/repos', { method: 'POST', json: { id: 'x' } });
    expect(r.status).toBe(403);
    expect(await r.json()).toEqual({ error: 'user session required', code: 'user_session_required' });
  });

  it('answers 404 repo not found for a missing repository, 405 for a wrong method', async () => {
    for (const path of ['/v1/repos/nope/pages', '/v1/repos/nope/sync/pull', '/v1/repos/nope/history/a.md', '/v1/repos/nope/timeline', '/v1/repos/nope/activity', '/v1/repos/nope/pages/a.md']) {
      const r = await srv.api(path);
      expect(r.status, path).toBe(404);
      expect(await r.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
    }
    const m = await srv.api('/v1/repos', { method: 'DELETE' });
    expect(m.status).toBe(405);
    expect(await m.json()).toEqual({ error: 'method not allowed', code: 'method_not_allowed' });
  });
});

describe('push, pull, read', () => {
  const pages = {
    'wiki/concepts/alpha.md': '---\ntitle: Alpha\n---\n# Alpha\n\n## Decision\nUse git.\n',
    'wiki/entities/ünïcødé 漢字.md': 'unicode ✓ — 😀\n',
    'raw/sessions/2026-05-17': 'session log\n',
  };
  let first: string;

  it('a first push creates the repository and commits every file as ONE commit', async () => {
    const r = await push('sync1', {
      author_name: 'Legacy Bot',
      author_email: 'bot@example.test',
      message: 'seed pages',
      files: Object.entries(pages).map(([path, content]) => ({ path, content })),
    });
    expect(r.status).toBe(200);
    const body = await r.json();
    first = body.new_head;
    expect(first).toMatch(/^[0-9a-f]{40}$/);
    expect(body).toEqual({
      new_head: first,
      pushed: Object.keys(pages).map((path) => ({ path, sha: first })),
      conflicts: [],
    });
    expect(commitCount('sync1')).toBe(1);
    expect(gitIn(gitdir('sync1'), 'log', '-1', '--format=%an|%ae|%s', 'main').trim()).toBe('Legacy Bot|bot@example.test|seed pages');
    expect(gitIn(gitdir('sync1'), 'show', 'main:wiki/entities/ünïcødé 漢字.md')).toBe(pages['wiki/entities/ünïcødé 漢字.md']);
    fsck(gitdir('sync1'));
  });

  it('lists, reads (with X-Page-SHA) and pulls unicode paths exactly', async () => {
    const list = await (await srv.api('/v1/repos/sync1/pages')).json();
    expect(list.pages.map((p: { path: string }) => p.path)).toEqual(Object.keys(pages).sort());
    for (const p of list.pages) {
      expect(p).toEqual({ path: p.path, sha: first, author: 'Legacy Bot', email: 'bot@example.test', time: expect.stringMatching(iso), message: 'seed pages' });
    }
    for (const [path, content] of Object.entries(pages)) {
      const r = await srv.api(`/v1/repos/sync1/pages/${enc(path)}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('text/markdown; charset=utf-8');
      expect(r.headers.get('x-page-sha')).toBe(first);
      expect(await r.text()).toBe(content);
    }
    const missing = await srv.api('/v1/repos/sync1/pages/wiki/concepts/none.md');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'page not found', code: 'page_not_found' });

    const pull = await (await srv.api('/v1/repos/sync1/sync/pull')).json();
    expect(pull).toEqual({
      new_head: first,
      files: Object.keys(pages).sort().map((path) => ({ path, content: pages[path as keyof typeof pages], sha: first })),
      deleted: [],
    });
    expect(await (await srv.api(`/v1/repos/sync1/sync/pull?since=${first}`)).json()).toEqual({ new_head: first, files: [], deleted: [] });
  });

  it('reports conflicts per file with base64 contents, commits the rest, and marks unchanged files', async () => {
    const r2 = await push('sync1', { files: [{ path: 'wiki/concepts/alpha.md', content: 'alpha v2\n', parent_sha: first }] });
    const second = (await r2.json()).new_head;
    expect(gitIn(gitdir('sync1'), 'log', '-1', '--format=%an|%ae|%s', 'main').trim()).toBe('unknown|unknown@service.local|push');

    const r3 = await push('sync1', {
      files: [
        { path: 'wiki/concepts/alpha.md', content: 'alpha stale\n', parent_sha: first },
        { path: 'raw/sessions/2026-05-17', content: 'session log\n', parent_sha: first.slice(0, 7) },
        { path: 'wiki/concepts/beta.md', content: 'beta\n' },
        { path: 'wiki/concepts/gamma.md', content: 'gamma\n', parent_sha: 'ffffffffff' },
      ],
    });
    expect(r3.status).toBe(409);
    const body3 = await r3.json();
    const third = body3.new_head;
    expect(body3).toEqual({
      new_head: third,
      pushed: [
        { path: 'raw/sessions/2026-05-17', sha: first, unchanged: true },
        { path: 'wiki/concepts/beta.md', sha: third },
        { path: 'wiki/concepts/gamma.md', sha: third },
      ],
      conflicts: [
        {
          path: 'wiki/concepts/alpha.md',
          current_sha: second,
          current_content: b64('alpha v2\n'),
          expected_parent_sha: first,
          ancestor_content: b64(pages['wiki/concepts/alpha.md']),
        },
      ],
    });
    expect(commitCount('sync1')).toBe(3);

    // A parent that resolves to nothing: conflict without ancestor_content.
    const r4 = await push('sync1', { files: [{ path: 'wiki/concepts/beta.md', content: 'x', parent_sha: 'abcdef1234' }] });
    expect(r4.status).toBe(409);
    const body4 = await r4.json();
    expect(body4).toEqual({
      new_head: third,
      pushed: [],
      conflicts: [{ path: 'wiki/concepts/beta.md', current_sha: third, current_content: b64('beta\n'), expected_parent_sha: 'abcdef1234' }],
    });
    expect(commitCount('sync1')).toBe(3);

    // Deletion, seen by pull?since; deleting a missing page is a no-op.
    const r5 = await push('sync1', { files: [{ path: 'wiki/concepts/beta.md', delete: true, parent_sha: third }, { path: 'no/such.md', delete: true }] });
    expect(r5.status).toBe(200);
    const body5 = await r5.json();
    expect(body5).toEqual({ new_head: expect.stringMatching(/^[0-9a-f]{40}$/), pushed: [{ path: 'wiki/concepts/beta.md', sha: body5.new_head }], conflicts: [] });
    const since = await (await srv.api(`/v1/repos/sync1/sync/pull?since=${third.slice(0, 12)}`)).json();
    expect(since).toEqual({ new_head: body5.new_head, files: [], deleted: ['wiki/concepts/beta.md'] });
    const since2 = await (await srv.api(`/v1/repos/sync1/sync/pull?since=${first}`)).json();
    expect(since2.files.map((f: { path: string }) => f.path)).toEqual(['wiki/concepts/alpha.md', 'wiki/concepts/gamma.md']);
    expect(since2.deleted).toEqual([]);
    fsck(gitdir('sync1'));
  });

  it('an empty push answers the head and commits nothing', async () => {
    const head = gitIn(gitdir('sync1'), 'rev-parse', 'main').trim();
    const r = await push('sync1', { files: [] });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ new_head: head, pushed: [], conflicts: [] });
    const fresh = await push('emptyrepo', { files: [] });
    expect(await fresh.json()).toEqual({ new_head: '', pushed: [], conflicts: [] });
    expect(await (await srv.api('/v1/repos/emptyrepo/sync/pull')).json()).toEqual({ new_head: '', files: [], deleted: [] });
  });

  it('serves history and timeline newest first with limits', async () => {
    const h = await (await srv.api('/v1/repos/sync1/history/wiki/concepts/alpha.md')).json();
    expect(h.commits.map((c: { message: string }) => c.message)).toEqual(['push', 'seed pages']);
    expect(h.commits[0]).toEqual({ sha: expect.stringMatching(/^[0-9a-f]{40}$/), author: 'unknown', email: 'unknown@service.local', time: expect.stringMatching(iso), message: 'push' });
    const h1 = await (await srv.api('/v1/repos/sync1/history/wiki/concepts/alpha.md?limit=1')).json();
    expect(h1.commits).toHaveLength(1);
    const hBad = await (await srv.api('/v1/repos/sync1/history/wiki/concepts/alpha.md?limit=-3')).json();
    expect(hBad.commits).toHaveLength(2);
    const t = await (await srv.api('/v1/repos/sync1/timeline')).json();
    expect(t.commits).toHaveLength(4);
    expect(t.commits[3].paths).toEqual(Object.keys(pages).sort());
    expect(t.commits[0].paths).toEqual(['wiki/concepts/beta.md']);
    expect((await (await srv.api('/v1/repos/sync1/timeline?limit=2')).json()).commits).toHaveLength(2);
    expect((await (await srv.api('/v1/repos/sync1/history/never/was.md')).json())).toEqual({ commits: [] });
  });

  it('lists every repository for the legacy key with page counts and last commits', async () => {
    const r = await (await srv.api('/v1/repos')).json();
    const sync1 = r.repos.find((x: { id: string }) => x.id === 'sync1');
    expect(sync1).toEqual({ id: 'sync1', page_count: 4, last_commit: { sha: gitIn(gitdir('sync1'), 'rev-parse', 'main').trim(), author: 'unknown', email: 'unknown@service.local', time: expect.stringMatching(iso), message: 'push' } });
    expect(r.repos.find((x: { id: string }) => x.id === 'emptyrepo')).toEqual({ id: 'emptyrepo', page_count: 0 });
    const ids = r.repos.map((x: { id: string }) => x.id);
    expect(ids).toEqual([...ids].sort());
  });

  it('records no activity under the legacy key', async () => {
    expect(await (await srv.api('/v1/repos/sync1/activity')).json()).toEqual({ events: [], total: 0 });
  });
});

describe('bad input writes nothing', () => {
  const badPaths = ['../x.md', '/etc/passwd', 'a//b.md', '.git/config', 'wiki/.Git/x', '-rf', 'wiki/-x.md', 'wiki/./x.md', 'wiki/../x.md', 'a\u0000b.md', 'a\nb.md', 'a\u0007.md', 'a\\b.md', '', 'x'.repeat(513)];

  it('refuses every invalid path with 400 even when the rest of the batch is fine', async () => {
    for (const bad of badPaths) {
      const r = await push('badrepo', { files: [{ path: 'good.md', content: 'ok' }, { path: bad, content: 'evil' }] });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(await r.json()).toEqual({ error: `invalid page path: ${bad}`, code: 'invalid_page_path' });
    }
    // The repository was never created, nothing escaped the data root.
    expect(existsSync(gitdir('badrepo'))).toBe(false);
    expect(existsSync(join(srv.dataRoot, 'etc'))).toBe(false);
    expect(existsSync(join(srv.dataRoot, 'repos', 'x.md'))).toBe(false);
  });

  it('refuses bad parent shas, bad since, malformed JSON, wrong types and oversized bodies', async () => {
    await push('strict', { files: [{ path: 'a.md', content: 'a' }] });
    const before = commitCount('strict');
    const cases: Array<[unknown, number, string, string]> = [
      [{ files: [{ path: 'a.md', content: 'x', parent_sha: 'HEAD~1' }] }, 400, 'invalid parent_sha: HEAD~1', 'invalid_parent_sha'],
      [{ files: [{ path: 'a.md', content: 'x', parent_sha: 'g'.repeat(40) }] }, 400, `invalid parent_sha: ${'g'.repeat(40)}`, 'invalid_parent_sha'],
      [{ files: [{ path: 'a.md', content: 'x', parent_sha: 'a'.repeat(41) }] }, 400, `invalid parent_sha: ${'a'.repeat(41)}`, 'invalid_parent_sha'],
      [{ files: [{ path: 'a.md', content: 'x', parent_sha: '' }] }, 400, 'invalid parent_sha: ', 'invalid_parent_sha'],
      [{ files: 'a.md' }, 400, 'invalid request: files: expected array', 'invalid_request'],
      [{}, 400, 'invalid request: files: expected array', 'invalid_request'],
      [{ files: [{ path: 7, content: 'x' }] }, 400, 'invalid request: files[0].path: expected string', 'invalid_request'],
      [{ files: [{ path: 'a.md', content: 5 }] }, 400, 'invalid request: files[0].content: expected string', 'invalid_request'],
      [{ files: [{ path: 'a.md', content: 'x', delete: 'yes' }] }, 400, 'invalid request: files[0].delete: expected boolean', 'invalid_request'],
      [{ files: [{ path: 'a.md' }] }, 400, 'invalid request: files[0].content: required unless delete is true', 'invalid_request'],
      [[1, 2], 400, 'invalid request: expected object', 'invalid_request'],
    ];
    for (const [body, status, error, code] of cases) {
      const r = await push('strict', body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(await r.json()).toEqual({ error, code });
    }
    const malformed = await srv.api('/v1/repos/strict/sync/push', { method: 'POST', body: '{"files": [', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ error: 'invalid JSON body', code: 'invalid_json' });
    const big = await push('strict', { files: [{ path: 'a.md', content: 'x'.repeat(70_000) }] });
    expect(big.status).toBe(413);
    expect(await big.json()).toEqual({ error: 'request body too large', code: 'body_too_large' });
    expect(commitCount('strict')).toBe(before);

    for (const since of ['zzz', 'HEAD', 'main', 'f'.repeat(40), 'a'.repeat(41)]) {
      const r = await srv.api(`/v1/repos/strict/sync/pull?since=${since}`);
      expect(r.status).toBe(400);
      expect(await r.json()).toEqual({ error: `unknown sha: ${since}`, code: 'unknown_sha' });
    }
    const badRead = await srv.api('/v1/repos/strict/pages/a%2F..%2F..%2Fservice.db');
    expect(badRead.status).toBe(400);
    expect(await badRead.json()).toEqual({ error: 'invalid page path: a/../../service.db', code: 'invalid_page_path' });
  });
});

describe('the pull answer, serialised a page at a time', () => {
  const enc8 = (t: string) => new TextEncoder().encode(t);
  const commit = (sha: string) => ({ sha, seq: 1, author: 'a', email: 'a@x', time: 0, message: 'm' });
  const page = (path: string, text: string, sha: string): PulledPage => ({ entry: { path, blob: '0'.repeat(40), commit: commit(sha) }, content: enc8(text) });
  const pages: PulledPage[] = [
    page('wiki/a.md', 'quote " backslash \\ newline\n tab\t é 😀 \u2028 <script>', 'b'.repeat(40)),
    page('raw/x.md', '', 'c'.repeat(40)),
    ...Array.from({ length: 3000 }, (_, i) => page(`p/${i}.md`, `page ${i}\n`.repeat(20), 'd'.repeat(40))),
  ];
  const deleted = ['gone.md', 'o"dd.md'];
  /** A pull of `pages` in batches of 700, counting the batches read. */
  const pullOf = (all: PulledPage[], gone: string[], head: string | null): PullPages & { read: number } => {
    const p = {
      head: head === null ? null : commit(head),
      first: all.slice(0, 700),
      read: 1,
      async *rest() {
        for (let i = 700; i < all.length; i += 700) {
          p.read++;
          yield all.slice(i, i + 700);
        }
      },
      async *deleted() {
        if (gone.length > 0) yield gone;
      },
    };
    return p;
  };
  const expected = {
    new_head: 'a'.repeat(40),
    files: pages.map((f) => ({ path: f.entry.path, content: new TextDecoder().decode(f.content), sha: f.entry.commit.sha })),
    deleted,
  };

  it('is the same JSON as the whole answer serialised at once', async () => {
    const streamed = await new Response(pullBody(pullOf(pages, deleted, 'a'.repeat(40)))).text();
    expect(JSON.parse(streamed)).toEqual(expected);
    expect(streamed).toBe(JSON.stringify(expected));
  });

  it('comes in bounded chunks, made only as the reader asks', async () => {
    const pull = pullOf(pages, deleted, 'a'.repeat(40));
    const reader = pullBody(pull).getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    expect(first.value!.byteLength).toBeLessThan(80 * 1024);
    // The first chunk (and at most one more queued) came from the batch already read: no other was asked for.
    expect(pull.read).toBe(1);
    let bytes = first.value!.byteLength;
    for (let r = await reader.read(); !r.done; r = await reader.read()) bytes += r.value.byteLength;
    expect(bytes).toBe(new TextEncoder().encode(JSON.stringify(expected)).byteLength);
    expect(pull.read).toBe(5);
  });

  it('of an empty repository is the empty answer', async () => {
    expect(await new Response(pullBody(pullOf([], [], null))).text()).toBe('{"new_head":"","files":[],"deleted":[]}');
  });
});
