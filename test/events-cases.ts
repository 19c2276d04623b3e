/**
 * Live events and webhooks over HTTP, once for both builds (docs/api.md "Live events", "Webhooks"):
 * test/events.test.ts runs these cases against the Node server, test/events-workers.test.ts against the
 * hosted build in workerd (Miniflare), each with real users signed in through a loopback identity provider,
 * real event streams read as a client reads them (test/helpers/sse.ts) and a real webhook receiver on
 * loopback (test/helpers/webhook-receiver.ts). Pings and retries are shortened through their variables.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { SseReader } from './helpers/sse.ts';
import { eventually, signatureValid, startReceiver, type Receiver } from './helpers/webhook-receiver.ts';

type Init = RequestInit & { token?: string | null; json?: unknown };
const SHA = /^[0-9a-f]{40}$/;
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A target with users signed in through its identity provider. */
function withTarget(kind: TargetKind, env: Record<string, string>) {
  let t: Target;
  let idp: IdpStandIn;
  const h = {
    get t() {
      return t;
    },
    async call(path: string, init: Init = {}) {
      const r = await t.api(path, init);
      const text = await r.text();
      let body: any = text;
      try {
        body = text === '' ? null : JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: r.status, body };
    },
    push(repo: string, token: string, files: unknown[], extra: Record<string, unknown> = {}) {
      return h.call(`/v1/repos/${repo}/sync/push`, { method: 'POST', token, json: { files, message: 'e2e', ...extra } });
    },
    async signIn(sub: string, email: string) {
      const idToken = await idp.signIdToken({ sub, email, name: email.split('@')[0] });
      const r = await h.call('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(r.status).toBe(200);
      return { token: r.body.access_token as string, id: r.body.user.id as string, email, name: r.body.user.name as string };
    },
    async repo(id: string, owner: string) {
      expect((await h.call('/v1/repos', { method: 'POST', token: owner, json: { id } })).status).toBe(201);
    },
    async join(repo: string, owner: string, who: string) {
      const key = await h.call(`/v1/repos/${repo}/invite-keys`, { method: 'POST', token: owner, json: {} });
      expect(key.status).toBe(201);
      expect((await h.call('/v1/repos/join', { method: 'POST', token: who, json: { key: key.body.token } })).status).toBe(200);
    },
    /** Opens an event stream through the checked client: the status, and a reader when it is a stream. */
    async open(repo: string, token: string | null, opts: { lastEventId?: string; after?: string } = {}) {
      const headers: Record<string, string> = {};
      if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
      const query = opts.after !== undefined ? `?after=${encodeURIComponent(opts.after)}` : '';
      const res = await t.api(`/v1/repos/${repo}/events${query}`, { token, headers });
      if (res.status !== 200) return { status: res.status, body: await res.json(), reader: null as unknown as SseReader, res };
      return { status: 200, body: null, reader: new SseReader(res), res };
    },
  };
  beforeAll(async () => {
    idp = await startIdp();
    t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer, ...env });
  });
  afterAll(async () => {
    await t?.stop();
    await idp?.close();
  });
  return h;
}

export function eventsCases(kind: TargetKind): void {
  describe(`${kind}: live events`, () => {
    const h = withTarget(kind, { SERVICE_EVENTS_PING_MS: '300' });

    it('a push reaches an open stream: its id, its name and its data exactly; pulls and refused pushes are not events', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('ev1', alice.token);
      const s = await h.open('ev1', alice.token);
      expect(s.status).toBe(200);
      expect(s.res.headers.get('content-type')).toBe('text/event-stream');
      expect(s.res.headers.get('cache-control')).toBe('no-store');

      const first = await h.push('ev1', alice.token, [
        { path: 'a.md', content: '## A\none\n' },
        { path: 'b.md', content: 'b\n' },
      ]);
      expect(first.status).toBe(200);
      const e1 = await s.reader.nextJson();
      expect(e1).toEqual({
        event: 'push',
        id: expect.stringMatching(/^\S+$/),
        data: {
          repo_id: 'ev1',
          sha: first.body.new_head,
          author: 'alice',
          email: 'alice@events.test',
          time: expect.stringMatching(RFC3339),
          message: 'e2e',
          paths: [
            { path: 'a.md', status: 'added' },
            { path: 'b.md', status: 'added' },
          ],
        },
      });
      expect(e1!.data.sha).toMatch(SHA);

      // A pull and a push whose every file conflicts: neither is an event.
      expect((await h.call('/v1/repos/ev1/sync/pull', { token: alice.token })).status).toBe(200);
      const refused = await h.push('ev1', alice.token, [{ path: 'a.md', content: 'x\n', parent_sha: '0'.repeat(40) }]);
      expect(refused.status).toBe(409);

      const second = await h.push('ev1', alice.token, [
        { path: 'a.md', content: '## A\ntwo\n' },
        { path: 'b.md', delete: true },
        { path: 'c.md', content: 'c\n' },
      ]);
      const e2 = await s.reader.nextJson();
      expect(e2!.event).toBe('push');
      expect(Number(e2!.id) > Number(e1!.id)).toBe(true);
      expect(e2!.data).toEqual({
        repo_id: 'ev1',
        sha: second.body.new_head,
        author: 'alice',
        email: 'alice@events.test',
        time: expect.stringMatching(RFC3339),
        message: 'e2e',
        paths: [
          { path: 'a.md', status: 'modified' },
          { path: 'b.md', status: 'deleted' },
          { path: 'c.md', status: 'added' },
        ],
      });

      // A section merge names the merged paths.
      const base = await h.push('ev1', alice.token, [{ path: 'p.md', content: '## One\n1\n## Two\n2\n' }]);
      await h.push('ev1', alice.token, [{ path: 'p.md', content: '## One\n1 theirs\n## Two\n2\n', parent_sha: base.body.new_head }]);
      const merged = await h.push(
        'ev1',
        alice.token,
        [{ path: 'p.md', content: '## One\n1\n## Two\n2 ours\n', parent_sha: base.body.new_head }],
        { merge: 'sections' },
      );
      expect(merged.body.pushed[0].merged).toBe(true);
      await s.reader.nextJson();
      await s.reader.nextJson();
      const e5 = await s.reader.nextJson();
      expect(e5!.data).toMatchObject({ sha: merged.body.new_head, paths: [{ path: 'p.md', status: 'modified' }], merged: ['p.md'] });

      // At most 200 paths, then `more`.
      const many = Array.from({ length: 203 }, (_, i) => ({ path: `many/p${String(i).padStart(3, '0')}.md`, content: `${i}\n` }));
      await h.push('ev1', alice.token, many);
      const e6 = await s.reader.nextJson();
      expect(e6!.data.paths).toHaveLength(200);
      expect(e6!.data.paths[199]).toEqual({ path: 'many/p199.md', status: 'added' });
      expect(e6!.data.more).toBe(3);
      await s.reader.close();
    });

    it('member events: joined, then removed — the removed member\'s stream gets `revoked` at once and ends', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      const bob = await h.signIn('ev-bob', 'bob@events.test');
      await h.repo('ev2', alice.token);
      const owner = await h.open('ev2', alice.token);
      await h.join('ev2', alice.token, bob.token);
      expect(await owner.reader.nextJson()).toEqual({
        event: 'member',
        id: expect.any(String),
        data: { repo_id: 'ev2', user_id: bob.id, email: 'bob@events.test', change: 'joined', role: 'member' },
      });
      const bobs = await h.open('ev2', bob.token);
      expect(bobs.status).toBe(200);
      expect((await h.call(`/v1/repos/ev2/members/${bob.id}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
      // Bob's stream: the notice, then the end (no event after he lost access).
      expect((await bobs.reader.rest()).map((e) => [e.event, JSON.parse(e.data)])).toEqual([['revoked', { reason: 'removed from this repo' }]]);
      expect(await owner.reader.nextJson()).toEqual({
        event: 'member',
        id: expect.any(String),
        data: { repo_id: 'ev2', user_id: bob.id, email: 'bob@events.test', change: 'removed' },
      });
      expect((await h.open('ev2', bob.token)).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      await owner.reader.close();
    });

    it('deleting the repository ends its streams with `revoked`; its webhooks and events are gone when the id is made again', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('evdel', alice.token);
      const hook = await h.call('/v1/repos/evdel/webhooks', { method: 'POST', token: alice.token, json: { url: 'https://hooks.example.com/kr' } });
      expect(hook.status).toBe(201);
      const s = await h.open('evdel', alice.token);
      expect(s.status).toBe(200);
      expect((await h.call('/v1/repos/evdel?confirm=evdel', { method: 'DELETE', token: alice.token })).status).toBe(204);
      expect((await s.reader.rest()).map((e) => [e.event, JSON.parse(e.data)])).toEqual([['revoked', { reason: 'repository deleted' }]]);
      await h.repo('evdel', alice.token);
      expect((await h.call('/v1/repos/evdel/webhooks', { token: alice.token })).body).toEqual({ webhooks: [] });
      // The new repository's log starts empty: the old stream's last id is unknown to it.
      const again = await h.open('evdel', alice.token, { after: '1' });
      expect((await again.reader.nextJson())?.event).toBe('reset');
      await again.reader.close();
    });

    it('resumes after Last-Event-ID or ?after=: the retained events in order, then live; an unknown id starts with `reset`', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('ev3', alice.token);
      const live = await h.open('ev3', alice.token);
      const shas: string[] = [];
      for (const n of [1, 2, 3]) shas.push((await h.push('ev3', alice.token, [{ path: `n${n}.md`, content: `${n}\n` }])).body.new_head);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await live.reader.nextJson())!.id!);

      const resumed = await h.open('ev3', alice.token, { lastEventId: ids[0] });
      expect((await resumed.reader.nextJson())!).toMatchObject({ id: ids[1], data: { sha: shas[1] } });
      expect((await resumed.reader.nextJson())!).toMatchObject({ id: ids[2], data: { sha: shas[2] } });
      const byQuery = await h.open('ev3', alice.token, { after: ids[1] });
      expect((await byQuery.reader.nextJson())!).toMatchObject({ id: ids[2], data: { sha: shas[2] } });
      // The header wins over the query.
      const both = await h.open('ev3', alice.token, { lastEventId: ids[1], after: ids[0] });
      expect((await both.reader.nextJson())!.id).toBe(ids[2]);
      // Then they go live.
      const fourth = await h.push('ev3', alice.token, [{ path: 'n4.md', content: '4\n' }]);
      for (const r of [resumed, byQuery, both, live]) expect((await r.reader.nextJson())!.data.sha).toBe(fourth.body.new_head);

      for (const stale of ['999999999', 'nonsense', '0']) {
        const s = await h.open('ev3', alice.token, { lastEventId: stale });
        expect(await s.reader.next()).toEqual({ event: 'reset', data: '{"reason":"unknown event id"}' });
        const fifth = await h.push('ev3', alice.token, [{ path: 'n5.md', content: `${stale}\n` }]);
        expect((await s.reader.nextJson())!.data.sha).toBe(fifth.body.new_head);
        await s.reader.close();
        await live.reader.nextJson();
      }
      // The last event id resumes with nothing to replay.
      const last = (await h.push('ev3', alice.token, [{ path: 'n6.md', content: '6\n' }])).body.new_head;
      const lastId = (await live.reader.nextJson())!.id!;
      const caughtUp = await h.open('ev3', alice.token, { lastEventId: lastId });
      const after = await h.push('ev3', alice.token, [{ path: 'n7.md', content: '7\n' }]);
      expect((await caughtUp.reader.nextJson())!.data.sha).toBe(after.body.new_head);
      expect(last).toMatch(SHA);
      for (const r of [resumed, byQuery, both, live, caughtUp]) await r.reader.close();
    });

    it("event ids are the repository's own: pushes into another repository in between leave its ids consecutive", async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('ev-seq-a', alice.token);
      await h.repo('ev-seq-b', alice.token);
      const a = await h.open('ev-seq-a', alice.token);
      await h.push('ev-seq-a', alice.token, [{ path: 'a1.md', content: '1\n' }]);
      const first = (await a.reader.nextJson())!;
      for (let i = 0; i < 3; i++) expect((await h.push('ev-seq-b', alice.token, [{ path: `b${i}.md`, content: `${i}\n` }])).status).toBe(200);
      await h.push('ev-seq-a', alice.token, [{ path: 'a2.md', content: '2\n' }]);
      const second = (await a.reader.nextJson())!;
      // The repository's first event is 1, its second 2, whatever happened elsewhere.
      expect([first.id, second.id]).toEqual(['1', '2']);
      await a.reader.close();
    });

    it('a stream gets a `: ping` at least every ping interval', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('ev-ping', alice.token);
      const s = await h.open('ev-ping', alice.token);
      expect(await s.reader.untilComments(2)).toEqual([]);
      expect(s.reader.comments.slice(0, 2)).toEqual(['ping', 'ping']);
      await s.reader.close();
    });

    it('a revoked PAT: `revoked` by the next ping, and the stream ends', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      await h.repo('ev4', alice.token);
      const pat = await h.call('/v1/pats', { method: 'POST', token: alice.token, json: { label: 'events' } });
      const s = await h.open('ev4', pat.body.token);
      expect(s.status).toBe(200);
      expect((await h.call(`/v1/pats/${pat.body.pat.id}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
      expect((await s.reader.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
    });

    it('at most 10 streams per identity per repository: the 11th is 429; a stream the client closes frees its place', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      const bob = await h.signIn('ev-bob', 'bob@events.test');
      await h.repo('ev5', alice.token);
      await h.repo('ev5b', alice.token);
      await h.join('ev5', alice.token, bob.token);
      const open = [];
      for (let i = 0; i < 10; i++) {
        const s = await h.open('ev5', alice.token);
        expect(s.status).toBe(200);
        open.push(s);
      }
      const eleventh = await h.open('ev5', alice.token);
      expect([eleventh.status, eleventh.body]).toEqual([429, { error: 'too many event streams', code: 'too_many_streams' }]);
      // Per identity (Bob has his own ten), per repository (Alice's other repository too).
      const other = await h.open('ev5', bob.token);
      const elsewhere = await h.open('ev5b', alice.token);
      expect([other.status, elsewhere.status]).toEqual([200, 200]);
      // A session and a PAT of Alice's are one identity.
      const pat = await h.call('/v1/pats', { method: 'POST', token: alice.token, json: {} });
      expect((await h.open('ev5', pat.body.token)).status).toBe(429);
      // Closing one (the client goes away) lets the next one in, once the server has seen it go.
      await open.pop()!.reader.close();
      const again = await eventually(async () => {
        const s = await h.open('ev5', alice.token);
        return s.status === 200 ? s : undefined;
      });
      // Every stream still open gets the next event.
      const pushed = await h.push('ev5', alice.token, [{ path: 'x.md', content: 'x\n' }]);
      for (const s of [...open, again, other]) expect((await s.reader.nextJson())!.data.sha).toBe(pushed.body.new_head);
      for (const s of [...open, again, other, elsewhere]) await s.reader.close();
    });

    it('who may listen: members and the legacy key; 403 for others, 404 for a missing repository, 401 without a credential', async () => {
      const alice = await h.signIn('ev-alice', 'alice@events.test');
      const carol = await h.signIn('ev-carol', 'carol@events.test');
      await h.repo('ev6', alice.token);
      expect((await h.open('ev6', carol.token)).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      expect((await h.open('no-such-repo', carol.token)).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });
      expect((await h.open('no-such-repo', LEGACY_KEY)).body).toEqual({ error: 'repo not found', code: 'repo_not_found' });
      expect((await h.open('ev6', null)).body).toEqual({ error: 'missing authorization header', code: 'missing_authorization' });
      const legacy = await h.open('ev6', LEGACY_KEY);
      expect(legacy.status).toBe(200);
      const pushed = await h.push('ev6', LEGACY_KEY, [{ path: 'l.md', content: 'l\n' }], { author_name: 'Robot', author_email: 'robot@events.test' });
      expect((await legacy.reader.nextJson())!.data).toMatchObject({ sha: pushed.body.new_head, author: 'Robot', email: 'robot@events.test' });
      await legacy.reader.close();
    });
  });

  describe(`${kind}: live events at the default ping (15 s): bounds, and revocation at once`, () => {
    // No SERVICE_EVENTS_PING_MS: nothing here may wait for a ping. Each case's timeout (10–14 s) is below it.
    const h = withTarget(kind, {});

    it('a revoked PAT, and a PAT minted with it (the cascade): `revoked` before the revocation answers; the push right after never reaches them', async () => {
      const alice = await h.signIn('rv-alice', 'alice@revoke.test');
      await h.repo('rv1', alice.token);
      const parent = await h.call('/v1/pats', { method: 'POST', token: alice.token, json: { label: 'parent' } });
      const child = await h.call('/v1/pats', { method: 'POST', token: parent.body.token, json: { label: 'child' } });
      const other = await h.call('/v1/pats', { method: 'POST', token: alice.token, json: { label: 'other' } });
      const byParent = await h.open('rv1', parent.body.token);
      const byChild = await h.open('rv1', child.body.token);
      const byOther = await h.open('rv1', other.body.token);
      expect([byParent.status, byChild.status, byOther.status]).toEqual([200, 200, 200]);
      expect((await h.call(`/v1/pats/${parent.body.pat.id}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
      const pushed = await h.push('rv1', alice.token, [{ path: 'after.md', content: 'after the revocation\n' }]);
      expect(pushed.status).toBe(200);
      for (const s of [byParent, byChild]) {
        expect((await s.reader.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
      }
      // The PAT not minted with it goes on, and gets the push.
      expect((await byOther.reader.nextJson())!.data.sha).toBe(pushed.body.new_head);
      await byOther.reader.close();
    }, 10_000);

    it('a user disabled and a PAT revoked by the admin command (straight in the database): `revoked` within 2 s, not at the next ping', async () => {
      const hal = await h.signIn('rv-hal', 'hal@revoke.test');
      const ivy = await h.signIn('rv-ivy', 'ivy@revoke.test');
      await h.repo('rv-sweep', hal.token);
      await h.join('rv-sweep', hal.token, ivy.token);
      const pat = await h.call('/v1/pats', { method: 'POST', token: hal.token, json: { label: 'sweep' } });
      const ivys = await h.open('rv-sweep', ivy.token);
      const byPat = await h.open('rv-sweep', pat.body.token);
      const hals = await h.open('rv-sweep', hal.token);
      await h.t.exec('UPDATE users SET disabled_at = ? WHERE id = ?', [Math.floor(Date.now() / 1000), ivy.id]);
      await h.t.exec('DELETE FROM pats WHERE id = ?', [pat.body.pat.id]);
      for (const s of [ivys, byPat]) {
        expect((await s.reader.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"credential no longer valid"}']]);
      }
      // Hal's session still reads.
      const pushed = await h.push('rv-sweep', hal.token, [{ path: 'still.md', content: 'still\n' }]);
      expect((await hals.reader.nextJson())!.data.sha).toBe(pushed.body.new_head);
      await hals.reader.close();
    }, 10_000);

    it('deleting the repository: its streams get `revoked` before the deletion answers', async () => {
      const gus = await h.signIn('rv-gus', 'gus@revoke.test');
      await h.repo('rv-del', gus.token);
      const s = await h.open('rv-del', gus.token);
      expect((await h.call('/v1/repos/rv-del?confirm=rv-del', { method: 'DELETE', token: gus.token })).status).toBe(204);
      expect((await s.reader.rest()).map((e) => [e.event, e.data])).toEqual([['revoked', '{"reason":"repository deleted"}']]);
    }, 10_000);

    it('at most 50 streams per identity across repositories: the 51st is 429; closed streams free their places at once', async () => {
      const carol = await h.signIn('rv-carol', 'carol@revoke.test');
      const open: Array<Awaited<ReturnType<typeof h.open>>> = [];
      for (let r = 0; r < 6; r++) await h.repo(`cap${r}`, carol.token);
      for (let r = 0; r < 5; r++) {
        for (let i = 0; i < 10; i++) {
          const s = await h.open(`cap${r}`, carol.token);
          expect(s.status, `stream ${r * 10 + i + 1}`).toBe(200);
          open.push(s);
        }
      }
      const fiftyFirst = await h.open('cap5', carol.token);
      expect([fiftyFirst.status, fiftyFirst.body]).toEqual([429, { error: 'too many event streams', code: 'too_many_streams' }]);
      // Ten closed (the clients go away): ten open again at once, not at the next ping.
      for (const s of open.splice(0, 10)) await s.reader.close();
      for (let i = 0; i < 10; i++) {
        const s = await eventually(async () => {
          const r = await h.open('cap5', carol.token);
          return r.status === 200 ? r : undefined;
        });
        open.push(s);
      }
      expect((await h.open('cap0', carol.token)).status).toBe(429);
      for (const s of open) await s.reader.close();
    }, 14_000);

    it('ten streams closed free their places in the repository at once: the 11th opens', async () => {
      const dan = await h.signIn('rv-dan', 'dan@revoke.test');
      await h.repo('rv-close', dan.token);
      const ten = [];
      for (let i = 0; i < 10; i++) ten.push(await h.open('rv-close', dan.token));
      expect((await h.open('rv-close', dan.token)).status).toBe(429);
      for (const s of ten) await s.reader.close();
      const eleventh = await eventually(async () => {
        const r = await h.open('rv-close', dan.token);
        return r.status === 200 ? r : undefined;
      });
      await eleventh.reader.close();
    }, 10_000);
  });

  describe(`${kind}: live events past SERVICE_EVENTS_MAX_STREAMS`, () => {
    const h = withTarget(kind, { SERVICE_EVENTS_MAX_STREAMS: '12' });

    it(`past SERVICE_EVENTS_MAX_STREAMS streams ${kind === 'node' ? 'on the server' : "in a repository's object"}: 503 \`server busy\` with Retry-After`, async () => {
      const erin = await h.signIn('rv-erin', 'erin@revoke.test');
      const frank = await h.signIn('rv-frank', 'frank@revoke.test');
      await h.repo('busy1', erin.token);
      await h.repo('busy2', frank.token);
      const held = [];
      // Twelve in all: ten of Erin's and two of Frank's (on Workers all in Erin's repository, as Frank joins it).
      if (kind === 'workers') await h.join('busy1', erin.token, frank.token);
      for (let i = 0; i < 10; i++) held.push(await h.open('busy1', erin.token));
      for (let i = 0; i < 2; i++) held.push(await h.open(kind === 'node' ? 'busy2' : 'busy1', frank.token));
      expect(held.map((s) => s.status)).toEqual(Array(12).fill(200));
      const refused = await h.open(kind === 'node' ? 'busy2' : 'busy1', frank.token);
      expect([refused.status, refused.body, refused.res.headers.get('retry-after')]).toEqual([503, { error: 'server busy', code: 'server_busy' }, '5']);
      if (kind === 'workers') {
        // Another repository's object has room.
        const elsewhere = await h.open('busy2', frank.token);
        expect(elsewhere.status).toBe(200);
        await elsewhere.reader.close();
      }
      await held.pop()!.reader.close();
      const again = await eventually(async () => {
        const r = await h.open(kind === 'node' ? 'busy2' : 'busy1', frank.token);
        return r.status === 200 ? r : undefined;
      });
      for (const s of [...held, again]) await s.reader.close();
    }, 10_000);
  });

  describe(`${kind}: webhooks`, () => {
    const h = withTarget(kind, {
      SERVICE_WEBHOOK_ALLOW_HTTP: '1',
      SERVICE_WEBHOOK_ALLOW_PRIVATE: '1',
      SERVICE_WEBHOOK_RETRY_MS: '150,300',
    });
    let rx: Receiver;
    beforeAll(async () => {
      rx = await startReceiver();
    });
    afterAll(async () => rx?.close());

    const deliveries = async (repo: string, wid: string, token: string, query = '') =>
      (await h.call(`/v1/repos/${repo}/webhooks/${wid}/deliveries${query}`, { token })).body.deliveries as any[];

    it('owners add, list and delete webhooks; members list them without secrets; the refusals', async () => {
      const alice = await h.signIn('wh-alice', 'alice@hooks.test');
      const bob = await h.signIn('wh-bob', 'bob@hooks.test');
      await h.repo('wh1', alice.token);
      await h.join('wh1', alice.token, bob.token);
      const made = await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/crud` } });
      expect(made.status).toBe(201);
      expect(made.body).toEqual({
        webhook: { id: expect.stringMatching(UUID), url: `${rx.url}/crud`, events: ['push', 'member'], created_at: expect.any(Number) },
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9_-]{32}$/),
      });
      const onlyMember = await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/m`, events: ['member', 'member'] } });
      expect(onlyMember.body.webhook.events).toEqual(['member']);
      const list = await h.call('/v1/repos/wh1/webhooks', { token: bob.token });
      expect(list).toEqual({ status: 200, body: { webhooks: [made.body.webhook, onlyMember.body.webhook] } });
      expect(JSON.stringify(list.body)).not.toContain('whsec_');

      expect(await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: bob.token, json: { url: `${rx.url}/x` } })).toEqual({
        status: 403,
        body: { error: 'only an owner can manage webhooks', code: 'owner_only_webhooks' },
      });
      const wid = made.body.webhook.id;
      for (const [method, path] of [
        ['DELETE', `/v1/repos/wh1/webhooks/${wid}`],
        ['POST', `/v1/repos/wh1/webhooks/${wid}/test`],
        ['GET', `/v1/repos/wh1/webhooks/${wid}/deliveries`],
      ] as const) {
        expect(await h.call(path, { method, token: bob.token })).toEqual({ status: 403, body: { error: 'only an owner can manage webhooks', code: 'owner_only_webhooks' } });
      }
      const carol = await h.signIn('wh-carol', 'carol@hooks.test');
      expect((await h.call('/v1/repos/wh1/webhooks', { token: carol.token })).body).toEqual({ error: 'not a member of this repo', code: 'not_a_member' });

      expect((await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: {} })).body).toEqual({
        error: 'invalid request: url: expected string',
        code: 'invalid_request',
      });
      for (const events of [[], ['pull'], 'push']) {
        const r = await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/x`, events } });
        expect(r.status, JSON.stringify(events)).toBe(400);
        expect(r.body.error).toMatch(/^invalid request: events/);
      }
      expect((await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: 'ftp://example.com/' } })).body).toEqual({
        error: 'webhook url must use https',
        code: 'webhook_url_https',
      });

      // At most 20.
      for (let i = 2; i < 20; i++) {
        expect((await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/n${i}` } })).status).toBe(201);
      }
      expect(await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/n20` } })).toEqual({
        status: 409,
        body: { error: 'too many webhooks (max 20)', code: 'too_many_webhooks' },
      });
      expect((await h.call(`/v1/repos/wh1/webhooks/${wid}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
      expect(await h.call(`/v1/repos/wh1/webhooks/${wid}`, { method: 'DELETE', token: alice.token })).toEqual({
        status: 404,
        body: { error: 'webhook not found', code: 'webhook_not_found' },
      });
      expect((await h.call(`/v1/repos/wh1/webhooks/${wid}/deliveries`, { token: alice.token })).body).toEqual({ error: 'webhook not found', code: 'webhook_not_found' });
      expect((await h.call(`/v1/repos/wh1/webhooks/${wid}/test`, { method: 'POST', token: alice.token })).body).toEqual({ error: 'webhook not found', code: 'webhook_not_found' });
      // A webhook id of another repository is not found here either.
      await h.repo('wh1b', alice.token);
      const there = await h.call('/v1/repos/wh1b/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/b` } });
      expect((await h.call(`/v1/repos/wh1/webhooks/${there.body.webhook.id}`, { method: 'DELETE', token: alice.token })).status).toBe(404);
      // The legacy key manages any repository's webhooks.
      expect((await h.call('/v1/repos/wh1/webhooks', { method: 'POST', token: LEGACY_KEY, json: { url: `${rx.url}/n21` } })).status).toBe(201);
      expect((await h.call('/v1/repos/wh1/webhooks', { token: LEGACY_KEY })).body.webhooks).toHaveLength(20);
      expect((await h.call('/v1/repos/no-such-repo/webhooks', { token: LEGACY_KEY })).body).toEqual({ error: 'repo not found', code: 'repo_not_found' });
    });

    it('a push is delivered as a signed POST with the event\'s data, `event` and `delivery_id`; member events to the webhooks that want them', async () => {
      const alice = await h.signIn('wh-alice', 'alice@hooks.test');
      const bob = await h.signIn('wh-bob', 'bob@hooks.test');
      await h.repo('wh2', alice.token);
      const all = await h.call('/v1/repos/wh2/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/wh2-all` } });
      const members = await h.call('/v1/repos/wh2/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/wh2-members`, events: ['member'] } });
      const stream = await h.open('wh2', alice.token);
      const pushed = await h.push('wh2', alice.token, [{ path: 'a.md', content: 'a\n' }]);
      const event = await stream.reader.nextJson();
      const [got] = await rx.waitFor('/wh2-all', 1);
      expect(got!.method).toBe('POST');
      expect(got!.headers['content-type']).toBe('application/json');
      expect(got!.headers['x-kr-event']).toBe('push');
      const body = JSON.parse(got!.raw);
      expect(got!.headers['x-kr-delivery']).toBe(body.delivery_id);
      expect(body).toEqual({ ...event!.data, event: 'push', delivery_id: expect.any(String) });
      expect(body.sha).toBe(pushed.body.new_head);
      expect(signatureValid(got!.headers['x-kr-signature'], got!.raw, all.body.secret)).toBe(true);
      expect(signatureValid(got!.headers['x-kr-signature'], got!.raw, members.body.secret)).toBe(false);
      const t = Number(/t=(\d+)/.exec(String(got!.headers['x-kr-signature']))![1]);
      expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(300);
      const [delivery] = await eventually(async () => {
        const list = await deliveries('wh2', all.body.webhook.id, alice.token);
        return list[0]?.status === 'delivered' ? list : undefined;
      });
      expect(delivery).toEqual({ id: body.delivery_id, event: 'push', status: 'delivered', attempts: 1, last_status: 200, created_at: expect.any(Number) });

      await h.join('wh2', alice.token, bob.token);
      const [toMembers] = await rx.waitFor('/wh2-members', 1);
      const joined = JSON.parse(toMembers!.raw);
      expect(joined).toEqual({
        repo_id: 'wh2',
        user_id: bob.id,
        email: 'bob@hooks.test',
        change: 'joined',
        role: 'member',
        event: 'member',
        delivery_id: toMembers!.headers['x-kr-delivery'],
      });
      expect(signatureValid(toMembers!.headers['x-kr-signature'], toMembers!.raw, members.body.secret)).toBe(true);
      await rx.waitFor('/wh2-all', 2);
      expect(rx.to('/wh2-all').map((r) => r.headers['x-kr-event'])).toEqual(['push', 'member']);
      // The member-only webhook never got the push.
      expect(rx.to('/wh2-members').map((r) => r.headers['x-kr-event'])).toEqual(['member']);
      await stream.reader.close();
    });

    it('test: 202 and a `ping` delivery; the deliveries, newest first, with `limit`', async () => {
      const alice = await h.signIn('wh-alice', 'alice@hooks.test');
      await h.repo('wh3', alice.token);
      const hook = await h.call('/v1/repos/wh3/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/wh3` } });
      const wid = hook.body.webhook.id;
      expect(await h.call(`/v1/repos/wh3/webhooks/${wid}/test`, { method: 'POST', token: alice.token })).toEqual({ status: 202, body: null });
      const [ping] = await rx.waitFor('/wh3', 1);
      expect(ping!.headers['x-kr-event']).toBe('ping');
      expect(JSON.parse(ping!.raw)).toEqual({ repo_id: 'wh3', webhook_id: wid, event: 'ping', delivery_id: ping!.headers['x-kr-delivery'] });
      expect(signatureValid(ping!.headers['x-kr-signature'], ping!.raw, hook.body.secret)).toBe(true);
      await h.push('wh3', alice.token, [{ path: 'a.md', content: 'a\n' }]);
      await rx.waitFor('/wh3', 2);
      const list = await eventually(async () => {
        const l = await deliveries('wh3', wid, alice.token);
        return l.length === 2 && l.every((d) => d.status === 'delivered') ? l : undefined;
      });
      expect(list.map((d) => d.event)).toEqual(['push', 'ping']);
      expect(list.map((d) => d.id)).toEqual([rx.to('/wh3')[1]!.headers['x-kr-delivery'], ping!.headers['x-kr-delivery']]);
      expect((await deliveries('wh3', wid, alice.token, '?limit=1')).map((d) => d.event)).toEqual(['push']);
      expect(await deliveries('wh3', wid, alice.token, '?limit=junk')).toHaveLength(2);
    });

    it('a failing receiver is tried again on the schedule, then the delivery is `failed`', async () => {
      const alice = await h.signIn('wh-alice', 'alice@hooks.test');
      await h.repo('wh4', alice.token);
      const hook = await h.call('/v1/repos/wh4/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/wh4` } });
      const answer = rx.answer;
      rx.answer = (req) => (req.path === '/wh4' ? { status: 500 } : answer(req));
      try {
        await h.push('wh4', alice.token, [{ path: 'a.md', content: 'a\n' }]);
        const tries = await rx.waitFor('/wh4', 3);
        // One delivery, three attempts (the first and the two retries of SERVICE_WEBHOOK_RETRY_MS), each signed anew.
        expect(new Set(tries.map((r) => r.headers['x-kr-delivery'])).size).toBe(1);
        for (const r of tries) expect(signatureValid(r.headers['x-kr-signature'], r.raw, hook.body.secret)).toBe(true);
        const [d] = await eventually(async () => {
          const l = await deliveries('wh4', hook.body.webhook.id, alice.token);
          return l[0]?.status === 'failed' ? l : undefined;
        });
        expect(d).toEqual({ id: tries[0]!.headers['x-kr-delivery'], event: 'push', status: 'failed', attempts: 3, last_status: 500, last_error: 'HTTP 500', created_at: expect.any(Number) });
        expect(rx.to('/wh4')).toHaveLength(3);
      } finally {
        rx.answer = answer;
      }
    });

    it('a redirect is not followed: the attempt failed, the other address never hears of it', async () => {
      const alice = await h.signIn('wh-alice', 'alice@hooks.test');
      await h.repo('wh5', alice.token);
      const hook = await h.call('/v1/repos/wh5/webhooks', { method: 'POST', token: alice.token, json: { url: `${rx.url}/wh5` } });
      const answer = rx.answer;
      rx.answer = (req) => (req.path === '/wh5' ? { status: 302, headers: { location: `${rx.url}/wh5-elsewhere` } } : answer(req));
      try {
        expect((await h.call(`/v1/repos/wh5/webhooks/${hook.body.webhook.id}/test`, { method: 'POST', token: alice.token })).status).toBe(202);
        const [d] = await eventually(async () => {
          const l = await deliveries('wh5', hook.body.webhook.id, alice.token);
          return l[0]?.status === 'failed' ? l : undefined;
        });
        expect(d).toMatchObject({ event: 'ping', status: 'failed', attempts: 3, last_status: 302, last_error: 'HTTP 302 (redirects are not followed)' });
        expect(rx.to('/wh5')).toHaveLength(3);
        expect(rx.to('/wh5-elsewhere')).toEqual([]);
      } finally {
        rx.answer = answer;
      }
    });
  });

  describe(`${kind}: webhook fairness and bounds`, () => {
    // A short delivery timeout (receivers that never answer give up sooner), retries far away, and at most 5
    // pending deliveries per webhook (1,000 by default).
    const h = withTarget(kind, {
      SERVICE_WEBHOOK_ALLOW_HTTP: '1',
      SERVICE_WEBHOOK_ALLOW_PRIVATE: '1',
      SERVICE_WEBHOOK_TIMEOUT_MS: '6000',
      SERVICE_WEBHOOK_RETRY_MS: '600000',
      SERVICE_WEBHOOK_MAX_PENDING: '5',
    });
    let rx: Receiver;
    /** Receivers that never answer. */
    let dead: Receiver;
    beforeAll(async () => {
      rx = await startReceiver();
      dead = await startReceiver();
      dead.answer = () => 'never';
    });
    afterAll(async () => {
      await rx?.close();
      await dead?.close();
    });
    const hook = async (repo: string, token: string, url: string) => {
      const made = await h.call(`/v1/repos/${repo}/webhooks`, { method: 'POST', token, json: { url } });
      expect(made.status).toBe(201);
      return made.body.webhook.id as string;
    };
    /** Requests each dead path holds open now (sent, neither answered nor given up). */
    const open = () => {
      const n = new Map<string, number>();
      for (const r of dead.received) n.set(r.path, (n.get(r.path) ?? 0) + 1);
      for (const r of dead.gaveUp) n.set(r.path, n.get(r.path)! - 1);
      return n;
    };

    it('one repository\'s 20 receivers that never answer do not hold back another repository\'s first delivery past one timeout', async () => {
      const alice = await h.signIn('fair-alice', 'alice@fair.test');
      await h.repo('fa', alice.token);
      await h.repo('fb', alice.token);
      const deadHooks: string[] = [];
      for (let i = 0; i < 20; i++) deadHooks.push(await hook('fa', alice.token, `${dead.url}/fa-${i}`));
      await hook('fb', alice.token, `${rx.url}/fb`);
      for (let i = 0; i < 10; i++) expect((await h.push('fa', alice.token, [{ path: `p${i}.md`, content: `${i}\n` }])).status).toBe(200);
      // The dead receivers hold attempts open (Node: the server's 8 slots; Workers: the repository's own).
      await eventually(() => (dead.hanging() >= 6 ? true : undefined));
      const pushed = await h.push('fb', alice.token, [{ path: 'b.md', content: 'b\n' }]);
      expect(pushed.status).toBe(200);
      // Until the live receiver has its delivery, or more dead attempts than one wave have given up.
      await eventually(() => (rx.to('/fb').length > 0 || dead.gaveUp.length > 8 ? true : undefined));
      expect(rx.to('/fb').map((r) => JSON.parse(r.raw).sha)).toEqual([pushed.body.new_head]);
      // Delivered after at most one wave of timeouts (Node: one per slot; Workers: none, the repository's
      // object delivers its own)...
      expect(dead.gaveUp.length).toBeLessThanOrEqual(kind === 'node' ? 8 : 0);
      // ...and no webhook ever had more than one attempt open at once.
      for (const [path, n] of open()) expect(n, path).toBeLessThanOrEqual(1);
      for (const id of deadHooks) expect((await h.call(`/v1/repos/fa/webhooks/${id}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
    }, 120_000);

    it('a repository\'s receiver that never answers does not hold back its other webhook: one attempt open at a time', async () => {
      const alice = await h.signIn('fair-alice', 'alice@fair.test');
      await h.repo('fc', alice.token);
      const deadHook = await hook('fc', alice.token, `${dead.url}/fc-dead`);
      await hook('fc', alice.token, `${rx.url}/fc-live`);
      const heads: string[] = [];
      for (let i = 0; i < 5; i++) {
        const pushed = await h.push('fc', alice.token, [{ path: `p${i}.md`, content: `${i}\n` }]);
        expect(pushed.status).toBe(200);
        heads.push(pushed.body.new_head);
      }
      const gaveUp = () => dead.gaveUp.filter((r) => r.path === '/fc-dead').length;
      await eventually(() => (rx.to('/fc-live').length === 5 || gaveUp() > 0 ? true : undefined));
      // Every push reached the live webhook while the dead one's first attempt was still open, and only that one.
      expect(rx.to('/fc-live').map((r) => JSON.parse(r.raw).sha)).toEqual(heads);
      expect(gaveUp()).toBe(0);
      expect(dead.to('/fc-dead').map((r) => JSON.parse(r.raw).sha)).toEqual([heads[0]]);
      expect((await h.call(`/v1/repos/fc/webhooks/${deadHook}`, { method: 'DELETE', token: alice.token })).status).toBe(204);
    }, 120_000);

    it('at most SERVICE_WEBHOOK_MAX_PENDING pending deliveries per webhook: the oldest beyond are `failed`, dropped', async () => {
      const alice = await h.signIn('fair-alice', 'alice@fair.test');
      await h.repo('fd', alice.token);
      const wid = await hook('fd', alice.token, `${rx.url}/fd`);
      const answer = rx.answer;
      rx.answer = (req) => (req.path === '/fd' ? { status: 500 } : answer(req));
      try {
        const heads: string[] = [];
        for (let i = 0; i < 7; i++) {
          const pushed = await h.push('fd', alice.token, [{ path: `p${i}.md`, content: `${i}\n` }]);
          expect(pushed.status).toBe(200);
          heads.push(pushed.body.new_head);
          // Each attempted once (and failed) before the next push.
          await rx.waitFor('/fd', i + 1);
          await eventually(async () => {
            const l = (await h.call(`/v1/repos/fd/webhooks/${wid}/deliveries`, { token: alice.token })).body.deliveries as any[];
            return l[0]?.attempts === 1 ? true : undefined;
          });
        }
        const list = (await h.call(`/v1/repos/fd/webhooks/${wid}/deliveries`, { token: alice.token })).body.deliveries as any[];
        const sent = rx.to('/fd').map((r) => r.headers['x-kr-delivery']);
        const pending = { event: 'push', status: 'pending', attempts: 1, last_status: 500, last_error: 'HTTP 500', next_attempt_at: expect.any(Number), created_at: expect.any(Number) };
        const dropped = { event: 'push', status: 'failed', attempts: 1, last_status: 500, last_error: 'dropped: too many pending deliveries', created_at: expect.any(Number) };
        expect(list).toEqual([
          ...[6, 5, 4, 3, 2].map((i) => ({ id: sent[i], ...pending })),
          ...[1, 0].map((i) => ({ id: sent[i], ...dropped })),
        ]);
        expect(rx.to('/fd').map((r) => JSON.parse(r.raw).sha)).toEqual(heads);
      } finally {
        rx.answer = answer;
      }
    }, 120_000);
  });

  describe(`${kind}: webhook addresses`, () => {
    const h = withTarget(kind, {});

    it('https only; no loopback, private, link-local, unique-local or mapped addresses, nor credentials in the URL', async () => {
      const alice = await h.signIn('wa-alice', 'alice@addr.test');
      await h.repo('wa1', alice.token);
      const create = (url: string) => h.call('/v1/repos/wa1/webhooks', { method: 'POST', token: alice.token, json: { url } });
      for (const url of ['http://example.com/hook', 'ftp://example.com/', 'not a url', 'https://', '']) {
        expect(await create(url), url).toEqual({ status: 400, body: { error: 'webhook url must use https', code: 'webhook_url_https' } });
      }
      const refused: Array<[string, string]> = [
        ['https://127.0.0.1/hook', '127.0.0.1 is a loopback address'],
        ['https://127.1.2.3:8443/', '127.1.2.3 is a loopback address'],
        ['https://2130706433/', '127.0.0.1 is a loopback address'],
        ['https://[::1]/', '[::1] is a loopback address'],
        ['https://10.0.0.8/', '10.0.0.8 is a private address'],
        ['https://192.168.1.1/', '192.168.1.1 is a private address'],
        ['https://172.16.5.4/', '172.16.5.4 is a private address'],
        ['https://169.254.169.254/latest/meta-data', '169.254.169.254 is a link-local address'],
        ['https://[fe80::1]/', '[fe80::1] is a link-local address'],
        ['https://[fd12:3456::1]/', '[fd12:3456::1] is a unique-local address'],
        ['https://[::ffff:127.0.0.1]/', '[::ffff:7f00:1] is an IPv4-mapped loopback address (127.0.0.1)'],
        ['https://[::ffff:10.1.1.1]/', '[::ffff:a01:101] is an IPv4-mapped private address (10.1.1.1)'],
        ['https://100.64.0.1/', '100.64.0.1 is a carrier-grade NAT address'],
        // Special-purpose IPv6: IPv4-compatible, NAT64, 6to4 of a refused IPv4, documentation, discard,
        // site-local, multicast, reserved.
        ['https://[::127.0.0.1]/', '[::7f00:1] is an IPv4-compatible address (127.0.0.1)'],
        ['https://[::a00:1]/', '[::a00:1] is an IPv4-compatible address (10.0.0.1)'],
        ['https://[0:0:0:0:0:0:A9FE:A9FE]/', '[::a9fe:a9fe] is an IPv4-compatible address (169.254.169.254)'],
        ['https://[::ffff:8.8.8.8]/', '[::ffff:808:808] is an IPv4-mapped address (8.8.8.8)'],
        ['https://[64:ff9b::10.0.0.1]/', '[64:ff9b::a00:1] is a NAT64 address'],
        ['https://[64:ff9b:1::1]/', '[64:ff9b:1::1] is a NAT64 (local-use) address'],
        ['https://[2002:7F00:1::1]/', '[2002:7f00:1::1] is a 6to4 address of a loopback address (127.0.0.1)'],
        ['https://[2001::1]/', '[2001::1] is a Teredo address'],
        ['https://[2001:db8::1]/', '[2001:db8::1] is a documentation address'],
        ['https://[3fff::1]/', '[3fff::1] is a documentation address'],
        ['https://[100::1]/', '[100::1] is a discard-only address'],
        ['https://[fec0::1]/', '[fec0::1] is a site-local address'],
        ['https://[FF05::2]/', '[ff05::2] is a multicast address'],
        ['https://[1::1]/', '[1::1] is a reserved address'],
        ['https://0.0.0.0/', '0.0.0.0 is an unspecified address'],
        ['https://user:secret@example.com/', 'credentials in the URL (sign with the secret instead)'],
        [`https://example.com/${'x'.repeat(2100)}`, 'longer than 2048 characters'],
      ];
      for (const [url, reason] of refused) {
        expect(await create(url), url).toEqual({ status: 400, body: { error: `webhook url not allowed: ${reason}`, code: 'webhook_url_not_allowed' } });
      }
      const localhost = await create('https://localhost:8443/hook');
      expect(localhost.status).toBe(400);
      expect(localhost.body.error).toBe(
        kind === 'node' ? 'webhook url not allowed: localhost resolves to a non-public address' : 'webhook url not allowed: localhost is a loopback name',
      );
      expect((await h.call('/v1/repos/wa1/webhooks', { token: alice.token })).body).toEqual({ webhooks: [] });
    });
  });
}
