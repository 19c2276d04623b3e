/**
 * Section merge on push (docs/api.md "Pages", the push route's "Section merge"), over HTTP, once for both builds: merge-push.test.ts
 * runs these cases against the Node server and the hosted build under workerd.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string) => Buffer.from(s, 'base64').toString('utf8');

const PAGE = `---
title: ADR 7
tags: [db]
---
Why we pick a database.

## Context
Many writers.

## Decision
Postgres.

## Consequences
Backups.
`;

type Init = RequestInit & { token?: string | null; json?: unknown };

/**
 * How the Node server's event loop (this process's: the Node target runs in it) kept up while `work` ran:
 * the longest gap between two ticks of a 5 ms interval, and the `/health` polls answered meanwhile.
 */
async function loopDuring<T>(t: Target, work: () => Promise<T>): Promise<{ result: T; maxGapMs: number; polls: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 5);
  let running = true;
  let polls = 0;
  const poll = (async () => {
    while (running) {
      const r = await fetch(`${t.url}/health`);
      expect([r.status, await r.json()]).toEqual([200, { status: 'ok' }]);
      if (running) polls++;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  try {
    const result = await work();
    return { result, maxGapMs, polls };
  } finally {
    running = false;
    clearInterval(timer);
    await poll;
  }
}

/** A page of `n` sections `## Part <i>` holding `line <i>`. */
const bigPage = (n: number) => `---\ntitle: Big\n---\n${Array.from({ length: n }, (_, i) => `## Part ${i}\nline ${i}\n`).join('\n')}`;

export function mergePushCases(kind: TargetKind): void {
  describe(`${kind}: section merge on push`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let alice: string;
    let bob: string;

    const call = async (path: string, init: Init = {}) => {
      const r = await t.api(path, init);
      const text = await r.text();
      return { status: r.status, body: (text === '' ? null : JSON.parse(text)) as any };
    };
    const push = (repo: string, body: Record<string, unknown>, token?: string) =>
      call(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { message: 'edit', ...body }, ...(token ? { token } : {}) });
    const read = async (repo: string, path: string) => (await t.api(`/v1/repos/${repo}/pages/${path}`)).text();
    const signIn = async (sub: string, email: string) => {
      const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
      const r = await call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(r.status).toBe(200);
      return r.body.access_token as string;
    };
    /** A repository holding PAGE at wiki/analyses/adr.md; its commit sha. */
    const seed = async (repo: string, token?: string) => {
      const r = await push(repo, { files: [{ path: 'wiki/analyses/adr.md', content: PAGE }] }, token);
      expect(r.status).toBe(200);
      return r.body.new_head as string;
    };

    beforeAll(async () => {
      idp = await startIdp();
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      alice = await signIn('alice', 'alice@example.com');
      bob = await signIn('bob', 'bob@example.com');
    });
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
    });

    it('two writers of different sections from one parent: both succeed, one commit each, the merge reported', async () => {
      const created = await call('/v1/repos', { method: 'POST', json: { id: 'adr' }, token: alice });
      expect(created.status).toBe(201);
      const key = await call('/v1/repos/adr/invite-keys', { method: 'POST', json: {}, token: alice });
      expect((await call('/v1/repos/join', { method: 'POST', json: { key: key.body.token }, token: bob })).status).toBe(200);
      const parent = await seed('adr', alice);
      const mine = PAGE.replace('Postgres.', 'Postgres 16.');
      const first = await push('adr', { merge: 'sections', files: [{ path: 'wiki/analyses/adr.md', content: mine, parent_sha: parent }] }, alice);
      expect(first.status).toBe(200);
      // A fresh write is not a merge: no merged keys.
      expect(first.body.pushed).toEqual([{ path: 'wiki/analyses/adr.md', sha: first.body.new_head }]);

      const theirs = PAGE.replace('Backups.', 'Nightly backups.');
      const second = await push('adr', { merge: 'sections', files: [{ path: 'wiki/analyses/adr.md', content: theirs, parent_sha: parent }] }, bob);
      const merged = PAGE.replace('Postgres.', 'Postgres 16.').replace('Backups.', 'Nightly backups.');
      expect(second.status).toBe(200);
      expect(second.body).toEqual({
        new_head: expect.stringMatching(/^[0-9a-f]{40}$/),
        pushed: [{ path: 'wiki/analyses/adr.md', sha: second.body.new_head, merged: true, merged_with: first.body.new_head, content: b64(merged) }],
        conflicts: [],
      });
      expect(await read('adr', 'wiki/analyses/adr.md')).toBe(merged);

      // One commit per push; the merge commit is bob's, its parent alice's.
      const history = await call('/v1/repos/adr/history/wiki/analyses/adr.md', { token: alice });
      expect(history.body.commits.map((c: { sha: string; email: string }) => [c.sha, c.email])).toEqual([
        [second.body.new_head, 'bob@example.com'],
        [first.body.new_head, 'alice@example.com'],
        [parent, 'alice@example.com'],
      ]);
      // Each section is attributed to the commit that last changed it: the merge commit changed only bob's section.
      const diff = await call(`/v1/repos/adr/diff/wiki/analyses/adr.md?from=${first.body.new_head}&to=${second.body.new_head}`, { token: alice });
      expect(diff.body.sections.map((s: { heading: string; status: string }) => [s.heading, s.status])).toEqual([
        ['## Context', 'unchanged'],
        ['## Decision', 'unchanged'],
        ['## Consequences', 'modified'],
      ]);
      // The feed names the merge commit, so a client can mark it in the page's history.
      const activity = await call('/v1/repos/adr/activity?limit=2', { token: alice });
      expect(activity.body.events.map((e: { email: string; action: string; detail: unknown; sha: unknown }) => [e.email, e.action, e.detail, e.sha])).toEqual([
        ['bob@example.com', 'push', { paths: ['wiki/analyses/adr.md'], message: 'edit', merged: ['wiki/analyses/adr.md'] }, second.body.new_head],
        ['alice@example.com', 'push', { paths: ['wiki/analyses/adr.md'], message: 'edit' }, first.body.new_head],
      ]);
    });

    it('without merge the stale write is the original 409, byte for byte; with merge a real conflict names its sections', async () => {
      const parent = await seed('plain');
      const head = (await push('plain', { files: [{ path: 'wiki/analyses/adr.md', content: PAGE.replace('Postgres.', 'MySQL.'), parent_sha: parent }] })).body.new_head;
      const stale = { path: 'wiki/analyses/adr.md', content: PAGE.replace('Postgres.', 'SQLite.').replace('Many writers.', 'Few.'), parent_sha: parent };
      const expected = {
        new_head: head,
        pushed: [],
        conflicts: [
          {
            path: 'wiki/analyses/adr.md',
            current_sha: head,
            current_content: b64(PAGE.replace('Postgres.', 'MySQL.')),
            expected_parent_sha: parent,
            ancestor_content: b64(PAGE),
          },
        ],
      };
      const plain = await push('plain', { files: [stale] });
      expect([plain.status, plain.body]).toEqual([409, expected]);
      const withMerge = await push('plain', { merge: 'sections', files: [stale] });
      expect([withMerge.status, withMerge.body]).toEqual([409, { ...expected, conflicts: [{ ...expected.conflicts[0], conflicting: ['## Decision'] }] }]);
      // Nothing was committed by either.
      expect(await read('plain', 'wiki/analyses/adr.md')).toBe(PAGE.replace('Postgres.', 'MySQL.'));
      expect((await call('/v1/repos/plain/timeline')).body.commits).toHaveLength(2);
    });

    it('merge applies only to stale writes that can merge: deletes and unknown parents stay conflicts; other files commit', async () => {
      const parent = await seed('mixed');
      const head = (await push('mixed', { files: [{ path: 'wiki/analyses/adr.md', content: PAGE.replace('Backups.', 'None.'), parent_sha: parent }] })).body.new_head;
      const del = await push('mixed', { merge: 'sections', files: [{ path: 'wiki/analyses/adr.md', delete: true, parent_sha: parent }] });
      expect(del.status).toBe(409);
      expect(del.body.conflicts[0]).not.toHaveProperty('conflicting');
      const unknown = await push('mixed', { merge: 'sections', files: [{ path: 'wiki/analyses/adr.md', content: PAGE, parent_sha: 'abcdef0' }] });
      expect(unknown.status).toBe(409);
      expect(unknown.body.conflicts[0]).not.toHaveProperty('ancestor_content');
      expect(unknown.body.conflicts[0]).not.toHaveProperty('conflicting');
      // One file merges, another is new: one commit with both.
      const both = await push('mixed', {
        merge: 'sections',
        files: [
          { path: 'wiki/analyses/adr.md', content: PAGE.replace('Many writers.', 'Two writers.'), parent_sha: parent },
          { path: 'wiki/concepts/new.md', content: '---\ntitle: New\n---\nBody.\n' },
        ],
      });
      expect(both.status).toBe(200);
      expect(both.body.pushed.map((p: { merged?: boolean; merged_with?: string }) => [p.merged ?? false, p.merged_with ?? null])).toEqual([
        [true, head],
        [false, null],
      ]);
      expect(await read('mixed', 'wiki/analyses/adr.md')).toBe(PAGE.replace('Many writers.', 'Two writers.').replace('Backups.', 'None.'));
    });

    it('a page created on both sides since the parent merges against the empty document', async () => {
      const parent = await seed('created');
      const a = '---\ntitle: Notes\n---\n## A\na\n';
      await push('created', { files: [{ path: 'wiki/concepts/notes.md', content: a }] });
      const r = await push('created', { merge: 'sections', files: [{ path: 'wiki/concepts/notes.md', content: '---\ntitle: Notes\n---\n## B\nb\n', parent_sha: parent }] });
      expect(r.status).toBe(200);
      // Ours' section has nothing before it on ours' side: it opens the page.
      expect(unb64(r.body.pushed[0].content)).toBe('---\ntitle: Notes\n---\n## B\nb\n\n## A\na\n');
    });

    it('a stale write of a page deleted since its parent is a conflict naming the deletion, with or without merge; the page stays deleted', async () => {
      const parent = await seed('gone', alice);
      const deletion = (await push('gone', { files: [{ path: 'wiki/analyses/adr.md', delete: true, parent_sha: parent }] }, alice)).body.new_head;
      const other = (await push('gone', { files: [{ path: 'wiki/concepts/other.md', content: 'other\n' }] }, alice)).body.new_head;
      const edit = { path: 'wiki/analyses/adr.md', content: PAGE.replace('Postgres.', 'SQLite.'), parent_sha: parent };
      const expected = {
        new_head: other,
        pushed: [],
        conflicts: [{ path: 'wiki/analyses/adr.md', current_sha: deletion, current_content: '', expected_parent_sha: parent, ancestor_content: b64(PAGE), deleted: true }],
      };
      const plain = await push('gone', { files: [edit] }, alice);
      expect([plain.status, plain.body]).toEqual([409, expected]);
      const merged = await push('gone', { merge: 'sections', files: [edit] }, alice);
      expect([merged.status, merged.body]).toEqual([409, expected]);
      // An abbreviated parent counts the same.
      const short = await push('gone', { files: [{ ...edit, parent_sha: parent.slice(0, 7) }] }, alice);
      expect([short.status, short.body.conflicts]).toEqual([409, [{ ...expected.conflicts[0], expected_parent_sha: parent.slice(0, 7) }]]);
      // Deleting it again from the stale parent stays a no-op, with or without merge.
      for (const extra of [{}, { merge: 'sections' }]) {
        const again = await push('gone', { ...extra, files: [{ path: 'wiki/analyses/adr.md', delete: true, parent_sha: parent }] }, alice);
        expect([again.status, again.body]).toEqual([200, { new_head: other, pushed: [], conflicts: [] }]);
      }
      // The page stays deleted and nothing was committed.
      expect((await t.api('/v1/repos/gone/pages/wiki/analyses/adr.md', { token: alice })).status).toBe(404);
      expect((await call('/v1/repos/gone/timeline', { token: alice })).body.commits.map((c: { sha: string }) => c.sha)).toEqual([other, deletion, parent]);

      // Based on the deletion itself (or later), or with no parent, the write creates the page again.
      const based = await push('gone', { files: [{ ...edit, parent_sha: deletion }] }, alice);
      expect(based.status).toBe(200);
      expect(await read('gone', 'wiki/analyses/adr.md')).toBe(edit.content);
      await push('gone', { files: [{ path: 'wiki/analyses/adr.md', delete: true }] }, alice);
      const bare = await push('gone', { files: [{ path: 'wiki/analyses/adr.md', content: 'again\n' }] }, alice);
      expect(bare.status).toBe(200);
      // A parent that names no commit (a client's new page) creates it as before.
      await push('gone', { files: [{ path: 'wiki/analyses/adr.md', delete: true }] }, alice);
      const fresh = await push('gone', { files: [{ path: 'wiki/analyses/adr.md', content: 'fresh\n', parent_sha: '0'.repeat(40) }] }, alice);
      expect(fresh.status).toBe(200);
    });

    it('a page created after the parent and deleted since is a conflict too; other files of the push commit', async () => {
      const parent = await seed('later', alice);
      await push('later', { files: [{ path: 'wiki/concepts/late.md', content: 'late\n' }] }, alice);
      const deletion = (await push('later', { files: [{ path: 'wiki/concepts/late.md', delete: true }] }, alice)).body.new_head;
      const r = await push('later', { files: [
        { path: 'wiki/concepts/late.md', content: 'mine\n', parent_sha: parent },
        { path: 'wiki/concepts/new.md', content: 'new\n', parent_sha: parent },
      ] }, alice);
      expect(r.status).toBe(409);
      expect(r.body.pushed).toEqual([{ path: 'wiki/concepts/new.md', sha: r.body.new_head }]);
      // Not there at the parent: no ancestor.
      expect(r.body.conflicts).toEqual([{ path: 'wiki/concepts/late.md', current_sha: deletion, current_content: '', expected_parent_sha: parent, deleted: true }]);
      expect((await t.api('/v1/repos/later/pages/wiki/concepts/late.md', { token: alice })).status).toBe(404);
    });

    it('concurrent pushes: a write from the parent racing the page\'s deletion never brings it back', async () => {
      const parent = await seed('race', alice);
      const [del, edit] = await Promise.all([
        push('race', { files: [{ path: 'wiki/analyses/adr.md', delete: true, parent_sha: parent }] }, alice),
        push('race', { merge: 'sections', files: [{ path: 'wiki/analyses/adr.md', content: PAGE.replace('Postgres.', 'SQLite.'), parent_sha: parent }] }, alice),
      ]);
      // One of them lands first; the other is the conflict.
      if (del.status === 200) {
        expect([edit.status, edit.body.conflicts[0].deleted, edit.body.conflicts[0].current_sha]).toEqual([409, true, del.body.new_head]);
        expect((await t.api('/v1/repos/race/pages/wiki/analyses/adr.md', { token: alice })).status).toBe(404);
      } else {
        expect([edit.status, del.status]).toEqual([200, 409]);
        expect(await read('race', 'wiki/analyses/adr.md')).toBe(PAGE.replace('Postgres.', 'SQLite.'));
      }
    });

    it('refuses any other merge mode', async () => {
      for (const merge of ['lines', '', true, 1, null]) {
        const r = await push('modes', { merge, files: [{ path: 'wiki/concepts/x.md', content: 'x' }] });
        expect([r.status, r.body]).toEqual([400, { error: 'invalid merge mode', code: 'invalid_merge_mode' }]);
      }
      expect((await call('/v1/repos')).body.repos.map((r: { id: string }) => r.id)).not.toContain('modes');
    });

    it('a stale merge push of a page of 20,000 sections merges, and the server keeps answering meanwhile', async () => {
      const path = 'wiki/concepts/big.md';
      const base = bigPage(20_000);
      const parent = (await push('big', { files: [{ path, content: base }] })).body.new_head as string;
      const theirs = base.replace('line 10\n', 'line 10, theirs\n');
      const ours = base.replace('line 19990\n', 'line 19990, ours\n') + '\n## Local note\nMine.\n';
      const head = (await push('big', { files: [{ path, content: theirs, parent_sha: parent }] })).body.new_head as string;
      const seen = await loopDuring(t, () => push('big', { merge: 'sections', files: [{ path, content: ours, parent_sha: parent }] }));
      const merged = theirs.replace('line 19990\n', 'line 19990, ours\n') + '\n## Local note\nMine.\n';
      expect(seen.result.status).toBe(200);
      expect(seen.result.body.pushed).toEqual([{ path, sha: seen.result.body.new_head, merged: true, merged_with: head, content: b64(merged) }]);
      expect(await read('big', path)).toBe(merged);
      if (kind === 'node') {
        // The merge runs in slices of a few milliseconds, and the push's other work on this page is short: a
        // merge that held the loop throughout would stall it for seconds. The bound is generous: the machine
        // running the tests is shared.
        expect(seen.polls, '/health answers during the push').toBeGreaterThanOrEqual(2);
        expect(seen.maxGapMs, 'longest event-loop gap during the push (ms)').toBeLessThan(1_000);
      }
    }, 120_000);

    it('a section of 200,000 lines with an edit on each side merges', async () => {
      const path = 'wiki/concepts/long.md';
      const lines = Array.from({ length: 200_000 }, (_, i) => `l${i}`);
      const base = `---\ntitle: Long\n---\n## Log\n${lines.join('\n')}\n`;
      const parent = (await push('long', { files: [{ path, content: base }] })).body.new_head as string;
      const theirs = base.replace('\nl10\n', '\nl10 theirs\n');
      const ours = base.replace('\nl199990\n', '\nl199990 ours\n');
      expect((await push('long', { files: [{ path, content: theirs, parent_sha: parent }] })).status).toBe(200);
      const r = await push('long', { merge: 'sections', files: [{ path, content: ours, parent_sha: parent }] });
      expect(r.status).toBe(200);
      const merged = theirs.replace('\nl199990\n', '\nl199990 ours\n');
      expect(r.body.pushed[0].merged).toBe(true);
      expect(unb64(r.body.pushed[0].content)).toBe(merged);
      expect(await read('long', path)).toBe(merged);
    }, 120_000);

    it('frontmatter keys named __proto__ and constructor survive a merge; a comment changed beside a changed key is a conflict', async () => {
      const path = 'wiki/concepts/keys.md';
      const base = '---\n__proto__: p\nconstructor: c\ntitle: Keys\nstatus: draft\n# why: none yet\nowner: kim\n---\n## A\na\n';
      const parent = (await push('keys', { files: [{ path, content: base }] })).body.new_head as string;
      const theirs = base.replace('title: Keys', 'title: Keys and names');
      expect((await push('keys', { files: [{ path, content: theirs, parent_sha: parent }] })).status).toBe(200);
      const r = await push('keys', { merge: 'sections', files: [{ path, content: base.replace('status: draft', 'status: done'), parent_sha: parent }] });
      expect(r.status).toBe(200);
      const merged = theirs.replace('status: draft', 'status: done');
      expect(unb64(r.body.pushed[0].content)).toBe(merged);
      const commented = await push('keys', { merge: 'sections', files: [{ path, content: base.replace('# why: none yet', '# why: asked by ops'), parent_sha: parent }] });
      expect(commented.status).toBe(409);
      expect(commented.body.conflicts[0].conflicting).toEqual(['frontmatter']);
      expect(await read('keys', path)).toBe(merged);
    });

    it('an empty frontmatter block: the page keeps its own text and spacing', async () => {
      const path = 'wiki/concepts/pooler.md';
      const base = '---\n---\nConnections go through the pooler.\n\n## Local note\nMine.\n';
      const parent = (await push('pooler', { files: [{ path, content: base }] })).body.new_head as string;
      const theirs = base.replace('Mine.', 'Mine, edited.');
      expect((await push('pooler', { files: [{ path, content: theirs, parent_sha: parent }] })).status).toBe(200);
      const r = await push('pooler', { merge: 'sections', files: [{ path, content: base.replace('Connections go', 'All connections go'), parent_sha: parent }] });
      expect(r.status).toBe(200);
      expect(unb64(r.body.pushed[0].content)).toBe('---\n---\nAll connections go through the pooler.\n\n## Local note\nMine, edited.\n');
    });

    it('16 writers of one page from one parent, each its own section, at once: all succeed and every change is kept', async () => {
      const sections = Array.from({ length: 16 }, (_, i) => `## Part ${i}\nline ${i}\n`);
      const base = `---\ntitle: Shared\n---\n${sections.join('\n')}`;
      const parent = (await push('many', { files: [{ path: 'wiki/concepts/shared.md', content: base }] })).body.new_head;
      const results = await Promise.all(
        sections.map((_, i) =>
          push('many', { merge: 'sections', files: [{ path: 'wiki/concepts/shared.md', content: base.replace(`line ${i}\n`, `line ${i} by writer ${i}\n`), parent_sha: parent }] }),
        ),
      );
      expect(results.map((r) => r.status)).toEqual(Array(16).fill(200));
      const final = await read('many', 'wiki/concepts/shared.md');
      expect(final).toBe(`---\ntitle: Shared\n---\n${sections.map((s, i) => s.replace(`line ${i}\n`, `line ${i} by writer ${i}\n`)).join('\n')}`);
      expect((await call('/v1/repos/many/timeline?limit=100')).body.commits).toHaveLength(17);
    });
  });
}
