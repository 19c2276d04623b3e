/**
 * Abbreviated shas (docs/concepts.md "Commits": a sha given to `parent_sha`, `from`, `to` or `since` may be
 * 1–40 hex chars, and an abbreviation resolves only if it is unique). An abbreviation that two commits
 * share names neither of them:
 *  - as a push's `parent_sha` it does not count as equal to the page's last commit, even though that
 *    commit starts with it → 409, a conflict without `ancestor_content` (it resolves to nothing);
 *  - as `from`, `to` or `since` → 400 `unknown sha: <value>`.
 * The repository is built by pushing one page until its last commit shares a prefix of at least two hex
 * chars with an earlier commit (git's own `rev-list` confirms the ambiguity).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { gitIn, startTestServer, type TestServer } from '../helpers/env.ts';

const repo = 'abbrev';
let srv: TestServer;
/** The page's last commit, its content, an abbreviation of it another commit shares, and that commit. */
let head = '';
let headContent = '';
let shared = '';
let other = '';

const push = async (files: unknown[]) => {
  const res = await srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files } });
  return { status: res.status, body: await res.json() };
};
const get = async (path: string) => {
  const res = await srv.api(`/v1/repos/${repo}/${path}`);
  return { status: res.status, body: await res.json() };
};
const commitsStartingWith = (prefix: string) =>
  gitIn(join(srv.dataRoot, 'repos', `${repo}.git`), 'rev-list', 'main').trim().split('\n').filter((s) => s.startsWith(prefix));

beforeAll(async () => {
  srv = await startTestServer();
  const earlier: string[] = [];
  for (let n = 0; n < 2000 && shared === ''; n++) {
    headContent = `## Version\n${n}\n`;
    const res = await push([{ path: 'page.md', content: headContent }]);
    expect(res.status).toBe(200);
    head = res.body.new_head;
    for (const s of earlier) {
      let k = 0;
      while (k < 40 && s[k] === head[k]) k++;
      if (k >= 2 && k > shared.length) {
        shared = head.slice(0, k);
        other = s;
      }
    }
    earlier.push(head);
  }
  expect(shared.length).toBeGreaterThanOrEqual(2);
}, 120_000);
afterAll(async () => srv?.stop());

describe('an abbreviation two commits share', () => {
  it('is ambiguous for git too, and the page’s last commit is one of the two', () => {
    expect(head).toMatch(/^[0-9a-f]{40}$/);
    expect(commitsStartingWith(shared).sort()).toEqual([head, other].sort());
    expect(gitIn(join(srv.dataRoot, 'repos', `${repo}.git`), 'log', '-1', '--format=%H', 'main', '--', 'page.md').trim()).toBe(head);
  });

  it('as parent_sha: a conflict (409) without ancestor_content, nothing committed', async () => {
    for (const parent of [shared, shared.toUpperCase(), shared.slice(0, 1)]) {
      expect(await push([{ path: 'page.md', content: 'mine\n', parent_sha: parent }]), parent).toEqual({
        status: 409,
        body: {
          new_head: head,
          pushed: [],
          conflicts: [{ path: 'page.md', current_sha: head, current_content: Buffer.from(headContent).toString('base64'), expected_parent_sha: parent }],
        },
      });
    }
    // A delete is held to the same rule.
    expect((await push([{ path: 'page.md', delete: true, parent_sha: shared }])).status).toBe(409);
    expect(gitIn(join(srv.dataRoot, 'repos', `${repo}.git`), 'rev-parse', 'main').trim()).toBe(head);
  });

  it('as from, to or since: 400 unknown sha: <value>', async () => {
    const unknown = { status: 400, body: { error: `unknown sha: ${shared}`, code: 'unknown_sha' } };
    expect(await get(`diff/page.md?from=${shared}`)).toEqual(unknown);
    expect(await get(`diff/page.md?to=${shared}`)).toEqual(unknown);
    expect(await get(`diff/page.md?from=${other.slice(0, 12)}&to=${shared}`)).toEqual(unknown);
    expect(await get(`sync/pull?since=${shared}`)).toEqual(unknown);
    expect(await get(`diff/page.md?from=${shared.toUpperCase()}`)).toEqual({ status: 400, body: { error: `unknown sha: ${shared.toUpperCase()}`, code: 'unknown_sha' } });
    // The same commits, named unambiguously, resolve.
    const diff = await get(`diff/page.md?from=${other.slice(0, 12)}&to=${head.slice(0, 12)}`);
    expect(diff.status).toBe(200);
    expect([diff.body.from_sha, diff.body.to_sha]).toEqual([other, head]);
    expect(await get(`sync/pull?since=${head.slice(0, 12)}`)).toEqual({ status: 200, body: { new_head: head, files: [], deleted: [] } });
  });

  it('a unique abbreviation of the page’s last commit counts as equal: the push goes through', async () => {
    const unique = head.slice(0, 12);
    expect(commitsStartingWith(unique)).toEqual([head]);
    const res = await push([{ path: 'page.md', content: 'mine\n', parent_sha: unique }]);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ new_head: expect.stringMatching(/^[0-9a-f]{40}$/), pushed: [{ path: 'page.md', sha: res.body.new_head }], conflicts: [] });
    expect(gitIn(join(srv.dataRoot, 'repos', `${repo}.git`), 'rev-parse', 'main^').trim()).toBe(head);
  });
});
