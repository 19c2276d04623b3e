import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { signIn, startIdpTestServer, type IdpTestServer, type SignedIn } from '../helpers/idp.ts';
import { fsck, gitIn } from '../helpers/env.ts';
import { rng, seedFor } from './helpers/prng.ts';

/**
 * Concurrency over real HTTP against the real server: simultaneous requests, then the repository is read
 * back with the plain `git` command and the database is read back with SQL.
 */

const SEED = seedFor('concurrency', 0x5eed50);
let srv: IdpTestServer;
let owner: SignedIn;
const gitdir = (id: string) => join(srv.dataRoot, 'repos', `${id}.git`);
const count = (id: string) => Number(gitIn(gitdir(id), 'rev-list', '--count', 'main').trim());

beforeAll(async () => {
  srv = await startIdpTestServer();
  owner = await signIn(srv, { sub: 'owner', email: 'owner@example.test', name: 'Owner' });
});
afterAll(async () => srv?.stop());

type PushBody = { new_head: string; pushed: Array<{ path: string; sha: string }>; conflicts: Array<{ path: string; current_sha: string; current_content: string; expected_parent_sha: string }> };
const push = async (repo: string, files: unknown[], token: string | undefined = owner.token) => {
  const res = await srv.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { files } });
  return { status: res.status, body: (await res.json()) as PushBody & { error?: string } };
};

describe('pushes racing for one page', () => {
  for (const [label, abbreviate] of [['full parent sha', false], ['abbreviated parent sha', true]] as const) {
    it(`50 simultaneous pushes with the same ${label}: one 200, 49 × 409, one new commit`, async () => {
      const repo = abbreviate ? 'race-abbrev' : 'race-full';
      const first = await push(repo, [{ path: 'wiki/page.md', content: '## Start\n' }]);
      expect(first.status).toBe(200);
      const parent = abbreviate ? first.body.new_head.slice(0, 7) : first.body.new_head;
      const contents = Array.from({ length: 50 }, (_, i) => `## Start\nwriter ${i}\n`);
      const results = await Promise.all(contents.map((content) => push(repo, [{ path: 'wiki/page.md', content, parent_sha: parent }])));

      const statuses = results.map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(49);
      const winner = results.findIndex((r) => r.status === 200);
      const winnerSha = results[winner]!.body.new_head;
      expect(count(repo)).toBe(2);
      expect(gitIn(gitdir(repo), 'rev-parse', 'main').trim()).toBe(winnerSha);
      expect(gitIn(gitdir(repo), 'show', 'main:wiki/page.md')).toBe(contents[winner]);
      for (const r of results) {
        if (r.status !== 409) continue;
        // Every loser is told what won, and committed nothing.
        expect(r.body.pushed).toEqual([]);
        expect(r.body.new_head).toBe(winnerSha);
        expect(r.body.conflicts).toHaveLength(1);
        expect(r.body.conflicts[0]!.current_sha).toBe(winnerSha);
        expect(Buffer.from(r.body.conflicts[0]!.current_content, 'base64').toString()).toBe(contents[winner]);
      }
      // One activity event: the winner's.
      const feed = (await (await srv.api(`/v1/repos/${repo}/activity`, { token: owner.token })).json()) as { total: number };
      expect(feed.total).toBe(2);
      fsck(gitdir(repo));
    });
  }
});

describe('pushes to many pages at once', () => {
  it('50 simultaneous pushes to 50 pages: all present, history linear with exactly 50 new commits', async () => {
    const repo = 'fifty';
    expect((await push(repo, [{ path: 'index.md', content: '# Index\n' }])).status).toBe(200);
    const pages = Array.from({ length: 50 }, (_, i) => ({ path: `wiki/concepts/p${String(i).padStart(2, '0')}.md`, content: `## Page ${i}\n` }));
    const results = await Promise.all(pages.map((p) => push(repo, [p])));
    expect(results.map((r) => r.status)).toEqual(Array(50).fill(200));
    const shas = results.map((r) => r.body.new_head);
    expect(new Set(shas).size).toBe(50);

    expect(count(repo)).toBe(51);
    expect(gitIn(gitdir(repo), 'rev-list', '--merges', 'main').trim()).toBe('');
    const parents = gitIn(gitdir(repo), 'rev-list', '--parents', 'main').trim().split('\n');
    expect(parents.every((l) => l.split(' ').length <= 2)).toBe(true);
    expect(parents.filter((l) => l.split(' ').length === 1)).toHaveLength(1); // one root
    const history = new Set(gitIn(gitdir(repo), 'rev-list', 'main').trim().split('\n'));
    expect(shas.every((s) => history.has(s))).toBe(true);
    // Each commit holds exactly its own page on top of everything before it.
    for (const [i, r] of results.entries()) {
      expect(gitIn(gitdir(repo), 'diff-tree', '--no-commit-id', '--name-only', '-r', r.body.new_head).trim()).toBe(pages[i]!.path);
    }
    const files = gitIn(gitdir(repo), 'ls-tree', '-r', '--name-only', 'main').trim().split('\n');
    expect(files.sort()).toEqual(['index.md', ...pages.map((p) => p.path)].sort());
    // The derived index agrees with git.
    const timeline = (await (await srv.api(`/v1/repos/${repo}/timeline?limit=100`, { token: owner.token })).json()) as { commits: Array<{ sha: string }> };
    expect(timeline.commits.map((c) => c.sha)).toEqual(gitIn(gitdir(repo), 'rev-list', 'main').trim().split('\n'));
    const pull = (await (await srv.api(`/v1/repos/${repo}/sync/pull`, { token: owner.token })).json()) as { files: Array<{ path: string; content: string }> };
    expect(pull.files.length).toBe(51);
    for (const p of pages) expect(pull.files.find((f) => f.path === p.path)?.content).toBe(p.content);
    fsck(gitdir(repo));
  });

  it('20 simultaneous first pushes to one new repository id by different users: one repository, one owner', async () => {
    const users = await Promise.all(Array.from({ length: 20 }, (_, i) => signIn(srv, { sub: `creator-${i}`, email: `creator${i}@example.test` })));
    const results = await Promise.all(users.map((u, i) => push('contested', [{ path: `by-${i}.md`, content: `${i}\n` }], u.token)));
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    expect(results.filter((r) => r.status === 403).every((r) => r.body.error === 'not a member of this repo')).toBe(true);
    expect(results.filter((r) => r.status !== 200 && r.status !== 403)).toEqual([]);
    const rows = await srv.deps.db.all<{ user_id: string; role: string }>("SELECT user_id, role FROM members WHERE repo_id = 'contested'");
    const winner = users[results.findIndex((r) => r.status === 200)]!;
    expect(rows).toEqual([{ user_id: winner.user.id, role: 'owner' }]);
    expect(count('contested')).toBe(1);
  });
});

describe('membership under concurrent redemption, removal and pushes', () => {
  /**
   * ROUNDS rounds, each on a fresh repository with its own seed (SEED + round), so the interleavings
   * differ from round to round. Within a round, pushes, removals and the revocation start at random
   * moments; each removed user's join and removal are ordered by a mode drawn per round — raced (both at
   * random moments), removal first (the join is sent once the removal has answered) or join first — and
   * each user of the key being revoked joins at a random moment, before the revocation is sent, or once it
   * has answered. Every round holds at least one of each deliberate order, so both branches of each race
   * are taken (asserted below); the raced ones land either way.
   *
   * Invariants, checked on the members table and against every answer:
   *  I1 the owner is still the only owner (no operation promotes, the last owner cannot be removed);
   *  I2 every row is a known user with role `member` or `owner`, at most one row per (repo, user);
   *  I3 a user who was never removed is a member iff one of their joins answered 200;
   *  I4 a removal answered 204 ⇒ the user is not a member afterwards (each removed user joins once); a
   *     removal answered 404 (it came before the join) ⇒ the user is a member iff their join answered 200;
   *  I5 a join with the key revoked meanwhile answers 200 (⇒ member) or 404 (⇒ not a member), nothing else;
   *  I6 a push answered 200 came from a user whose join answered 200, and its commit is in git with the
   *     user as author; pushes answered 403 committed nothing; git holds exactly the 200 pushes;
   *  I7 GET /members lists exactly the table's rows; every push event in the activity feed is a 200 push;
   *  I8 a removed user (removal answered 204) redeeming a key minted before the removal gets 403
   *     `removed from this repo; ask an owner for a new invite key` and stays out; a key minted after the
   *     removal readmits them.
   */
  const ROUNDS = 4;
  const REMOVED = 'removed from this repo; ask an owner for a new invite key';

  it(`keeps the members table consistent over ${ROUNDS} differently interleaved rounds`, async () => {
    const users = await Promise.all(Array.from({ length: 24 }, (_, i) => signIn(srv, { sub: `u${i}`, email: `u${i}@example.test` })));
    const emailOf = new Map(users.map((u) => [u.user.id, u.user.email]));
    const branches = new Map<string, number>();
    const took = (branch: string) => branches.set(branch, (branches.get(branch) ?? 0) + 1);

    for (let round = 0; round < ROUNDS; round++) {
      const seed = (SEED + round) >>> 0;
      const r = rng(seed);
      const repo = `club${round}`;
      expect((await srv.api('/v1/repos', { method: 'POST', token: owner.token, json: { id: repo } })).status).toBe(201);
      expect((await push(repo, [{ path: 'README.md', content: 'club\n' }])).status).toBe(200);
      const mint = async () => (await (await srv.api(`/v1/repos/${repo}/invite-keys`, { method: 'POST', token: owner.token, json: {} })).json()) as { key: { id: string }; token: string };
      const key = await mint();
      const doomedKey = await mint();
      // Who plays which part changes from round to round too.
      const cast = r.shuffle([...users]);
      // 8 join then get removed (concurrently); 8 join twice; 8 use the key being revoked.
      const removed = cast.slice(0, 8);
      const twice = cast.slice(8, 16);
      const revokedKeyUsers = cast.slice(16);
      const removalModes = r.shuffle(['removal first', 'join first', ...Array.from({ length: 6 }, () => r.pick(['raced', 'raced', 'removal first', 'join first']))]);
      const revocationModes = r.shuffle(['after revocation', 'before revocation', ...Array.from({ length: 6 }, () => r.pick(['raced', 'raced', 'after revocation', 'before revocation']))]);
      const modeOf = new Map<string, string>([...removed.map((u, i) => [u.user.id, removalModes[i]!] as const), ...revokedKeyUsers.map((u, i) => [u.user.id, revocationModes[i]!] as const)]);

      type Outcome = { kind: string; user?: string; status: number; body?: PushBody & { role?: string; error?: string } };
      type Op = () => Promise<Outcome>;
      const gate = () => {
        let open!: () => void;
        const opened = new Promise<void>((res) => (open = res));
        return { opened, open };
      };
      const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
      /** Runs `op` once `before` resolves (after `delay` ms), then opens `after`, even if the request failed. */
      const sequenced = (op: Op, before: Promise<unknown>, delay: number, after?: { open: () => void }): Op => async () => {
        try {
          await before;
          if (delay > 0) await sleep(delay);
          return await op();
        } finally {
          after?.open();
        }
      };
      const join = (u: SignedIn, token: string): Op => async () => {
        const res = await srv.api('/v1/repos/join', { method: 'POST', token: u.token, json: { key: token } });
        return { kind: token === doomedKey.token ? 'join-doomed' : 'join', user: u.user.id, status: res.status, body: await res.json() };
      };
      const remove = (u: SignedIn): Op => async () => {
        const res = await srv.api(`/v1/repos/${repo}/members/${u.user.id}`, { method: 'DELETE', token: owner.token });
        return { kind: 'remove', user: u.user.id, status: res.status };
      };
      let n = 0;
      const pushAs = (u: SignedIn): Op => {
        const delay = r.int(0, 150);
        return async () => {
          await sleep(delay);
          const res = await push(repo, [{ path: `notes/${u.user.id}-${n++}.md`, content: `by ${u.user.id}\n` }], u.token);
          return { kind: 'push', user: u.user.id, status: res.status, body: res.body };
        };
      };
      const now = Promise.resolve();
      const ops: Op[] = [];
      for (const u of removed) {
        const joined = gate();
        const gone = gate();
        const mode = modeOf.get(u.user.id)!;
        const joinAfter = mode === 'removal first' ? gone.opened : now;
        const removeAfter = mode === 'join first' ? joined.opened : now;
        ops.push(
          sequenced(join(u, key.token), joinAfter, mode === 'raced' ? r.int(0, 40) : 0, joined),
          sequenced(remove(u), removeAfter, mode === 'raced' ? r.int(0, 40) : 0, gone),
          pushAs(u),
        );
      }
      for (const u of twice) ops.push(join(u, key.token), join(u, key.token), pushAs(u), pushAs(u));
      const revokedGate = gate();
      const earlyJoins: Array<Promise<void>> = [];
      for (const u of revokedKeyUsers) {
        const mode = modeOf.get(u.user.id)!;
        if (mode === 'before revocation') {
          const joined = gate();
          earlyJoins.push(joined.opened);
          ops.push(sequenced(join(u, doomedKey.token), now, 0, joined));
        } else {
          ops.push(sequenced(join(u, doomedKey.token), mode === 'after revocation' ? revokedGate.opened : now, mode === 'raced' ? r.int(0, 60) : 0));
        }
        ops.push(pushAs(u));
      }
      const revokeDelay = r.int(0, 60);
      ops.push(
        sequenced(
          async () => {
            const res = await srv.api(`/v1/repos/${repo}/invite-keys/${doomedKey.key.id}`, { method: 'DELETE', token: owner.token });
            return { kind: 'revoke', status: res.status };
          },
          Promise.all(earlyJoins),
          revokeDelay,
          revokedGate,
        ),
      );
      // The owner tries to leave, and the legacy admin tries to remove the owner: both refused (last owner).
      ops.push(async () => ({ kind: 'remove-owner', status: (await srv.api(`/v1/repos/${repo}/members/${owner.user.id}`, { method: 'DELETE', token: owner.token })).status }));
      ops.push(async () => ({ kind: 'remove-owner', status: (await srv.api(`/v1/repos/${repo}/members/${owner.user.id}`, { method: 'DELETE' })).status }));
      ops.push(async () => ({ kind: 'owner-join', status: (await srv.api('/v1/repos/join', { method: 'POST', token: owner.token, json: { key: key.token } })).status }));
      const outcomes = await Promise.all(r.shuffle(ops).map((op) => op()));

      const rowsNow = async () => srv.deps.db.all<{ user_id: string; role: string }>('SELECT user_id, role FROM members WHERE repo_id = ?', [repo]);
      const rows = await rowsNow();
      const role = new Map(rows.map((x) => [x.user_id, x.role]));
      const of = (kind: string, user: string) => outcomes.filter((o) => o.kind === kind && o.user === user);
      const joined = (user: string) => of('join', user).some((o) => o.status === 200) || of('join-doomed', user).some((o) => o.status === 200);
      const label = (u: SignedIn) => `round ${round} (seed ${seed}) ${u.user.email} (${modeOf.get(u.user.id) ?? 'joins twice'})`;

      // Only the statuses the API allows.
      const allowed: Record<string, number[]> = { join: [200], 'join-doomed': [200, 404], remove: [204, 404], push: [200, 403], revoke: [204], 'remove-owner': [409], 'owner-join': [200] };
      for (const o of outcomes) expect(allowed[o.kind], `round ${round}: ${o.kind} answered ${o.status}`).toContain(o.status);
      // I1, I2
      expect(rows.filter((x) => x.role === 'owner').map((x) => x.user_id)).toEqual([owner.user.id]);
      expect(rows.length).toBe(role.size);
      expect(rows.every((x) => x.role === 'owner' || x.role === 'member')).toBe(true);
      const known = new Set([owner.user.id, ...users.map((u) => u.user.id)]);
      expect(rows.every((x) => known.has(x.user_id))).toBe(true);
      // I3
      for (const u of [...twice, ...revokedKeyUsers]) expect(role.get(u.user.id) ?? null, label(u)).toBe(joined(u.user.id) ? 'member' : null);
      for (const u of twice) expect(of('join', u.user.id).map((o) => o.body?.role)).toEqual(['member', 'member']);
      // I4, and which way each race went.
      for (const u of removed) {
        const rm = of('remove', u.user.id)[0]!;
        const jn = of('join', u.user.id)[0]!;
        expect(jn.status, label(u)).toBe(200);
        if (rm.status === 204) {
          expect(role.has(u.user.id), label(u)).toBe(false);
          took('join before removal');
        } else {
          expect(role.get(u.user.id) ?? null, label(u)).toBe('member');
          took('removal before join');
        }
        const mode = modeOf.get(u.user.id)!;
        if (mode === 'removal first') expect(rm.status, label(u)).toBe(404);
        if (mode === 'join first') expect(rm.status, label(u)).toBe(204);
        if (mode === 'raced') took(`raced: ${rm.status === 204 ? 'join' : 'removal'} won`);
      }
      // I5 (statuses above) — and the order each doomed-key join took.
      for (const u of revokedKeyUsers) {
        const jn = of('join-doomed', u.user.id)[0]!;
        const mode = modeOf.get(u.user.id)!;
        if (jn.status === 404) {
          expect(jn.body?.error, label(u)).toBe('invite key not recognized');
          took('join after revocation');
        } else took('join before revocation');
        if (mode === 'after revocation') expect(jn.status, label(u)).toBe(404);
        if (mode === 'before revocation') expect(jn.status, label(u)).toBe(200);
      }
      // After the revocation the key is dead.
      expect((await srv.api('/v1/repos/join', { method: 'POST', token: users[0]!.token, json: { key: doomedKey.token } })).status).toBe(404);
      // I6
      const pushes = outcomes.filter((o) => o.kind === 'push');
      for (const p of pushes.filter((o) => o.status === 200)) expect(joined(p.user!), `push by ${p.user} without a join`).toBe(true);
      for (const p of pushes.filter((o) => o.status === 403)) expect(p.body?.error).toBe('not a member of this repo');
      const okShas = pushes.filter((o) => o.status === 200).map((o) => o.body!.new_head);
      expect(count(repo)).toBe(1 + okShas.length);
      const log = gitIn(gitdir(repo), 'log', '--format=%H %ae', 'main').trim().split('\n');
      for (const p of pushes.filter((o) => o.status === 200)) expect(log).toContain(`${p.body!.new_head} ${emailOf.get(p.user!)}`);
      // I7
      const listed = (await (await srv.api(`/v1/repos/${repo}/members`, { token: owner.token })).json()) as { members: Array<{ user_id: string; role: string }> };
      expect(listed.members.map((m) => [m.user_id, m.role]).sort()).toEqual(rows.map((x) => [x.user_id, x.role]).sort());
      const feed = (await (await srv.api(`/v1/repos/${repo}/activity?limit=500`, { token: owner.token })).json()) as { events: Array<{ action: string }> };
      expect(feed.events.filter((e) => e.action === 'push')).toHaveLength(1 + okShas.length);
      expect(pushes.some((p) => p.status === 200)).toBe(true);
      // I8: removed members stay removed with the keys that predate their removal; a newer key readmits.
      const gone = removed.filter((u) => of('remove', u.user.id)[0]!.status === 204);
      expect(gone.length).toBeGreaterThan(0);
      for (const u of gone) {
        const res = await srv.api('/v1/repos/join', { method: 'POST', token: u.token, json: { key: key.token } });
        expect({ status: res.status, body: await res.json() }, label(u)).toEqual({ status: 403, body: { error: REMOVED, code: 'removed_from_repo' } });
      }
      expect(await rowsNow()).toEqual(expect.arrayContaining(rows));
      expect((await rowsNow()).length).toBe(rows.length);
      const fresh = await mint();
      const back = gone[0]!;
      const rejoin = await srv.api('/v1/repos/join', { method: 'POST', token: back.token, json: { key: fresh.token } });
      expect({ status: rejoin.status, body: await rejoin.json() }).toEqual({ status: 200, body: { repo_id: repo, role: 'member' } });
      expect((await rowsNow()).find((x) => x.user_id === back.user.id)?.role).toBe('member');

      const tally = new Map<string, number>();
      for (const o of outcomes) tally.set(`${o.kind} ${o.status}`, (tally.get(`${o.kind} ${o.status}`) ?? 0) + 1);
      console.log(`[reliability] membership race round ${round} (seed ${seed}): ${[...tally].sort().map(([k, v]) => `${k}×${v}`).join(', ')}`);
      fsck(gitdir(repo));
    }

    // Both orders of each race happened.
    console.log(`[reliability] membership race branches: ${[...branches].sort().map(([k, v]) => `${k}×${v}`).join(', ')}`);
    for (const branch of ['removal before join', 'join before removal', 'join after revocation', 'join before revocation']) {
      expect(branches.get(branch) ?? 0, branch).toBeGreaterThanOrEqual(1);
    }
  });
});
