/**
 * One client cannot hold every body (docs/limits.md "Request bodies"), on both builds: the Node
 * server and the hosted build under workerd, over real HTTP. Bodies trickle over bare sockets.
 *
 * - Each client address and each identity holds at most a quarter of the push bodies' ceiling (8 MiB of the
 *   default 32 MiB): one identity trickling 8 MiB pushes from one address holds one of them; its further
 *   bodies, from that address or another, get 503 `server busy`, and so do other identities' bodies from its
 *   address; everyone else gets in.
 * - Small JSON bodies (sign-in, PATs, repository creation, invite keys, join, the billing webhook) have a
 *   budget of their own: four clients filling the push ceiling turn away pushes, not them.
 * - Every body is whole within SERVICE_BODY_TIMEOUT_MS (120 s; shortened here) of its first byte, however
 *   steadily it trickles: 408 `request body timeout`.
 *
 * The client address is given as X-Forwarded-For (the Node server trusts its loopback peer as a proxy) and
 * as CF-Connecting-IP (what the Workers build reads); each build ignores the other header.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from '../helpers/idp.ts';
import { startTarget, type Target, type TargetKind } from '../helpers/targets.ts';
import { HOSTED_TEST_ENV, signatureHeader } from '../helpers/hosted-cases.ts';
import { head, rawRequest, type RawExchange, type RawResponse } from './helpers/raw-http.ts';

const MIB = 1024 * 1024;
const BUSY = '{"error":"server busy","code":"server_busy"}';

/** The headers that give a request's client address on either build. */
const from = (ip: string) => ({ 'X-Forwarded-For': ip, 'CF-Connecting-IP': ip });

interface Trickle {
  x: RawExchange;
  /** The answer, once there is one. */
  answer: RawResponse | undefined;
  stop(): void;
}

/**
 * A push declaring `declared` bytes whose body trickles: its first bytes at once, then one byte every
 * `everyMs` until it is answered or stopped.
 */
function trickle(t: Target, token: string, ip: string, repo: string, declared = 8 * MIB, everyMs = 500): Trickle {
  const x = rawRequest(
    t.url,
    head('POST', `/v1/repos/${repo}/sync/push`, { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': declared, ...from(ip) }),
    '{"files":[',
  );
  const timer = setInterval(() => void x.write(' ').catch(() => undefined), everyMs);
  const out: Trickle = {
    x,
    answer: undefined,
    stop() {
      clearInterval(timer);
      x.destroy();
    },
  };
  x.response.then(
    (r) => {
      out.answer = r;
      clearInterval(timer);
    },
    () => clearInterval(timer),
  );
  return out;
}

/** Resolves once `n` of the trickles have been answered. */
function answered(trickles: Trickle[], n: number): Promise<void> {
  let count = 0;
  return new Promise((resolve) => {
    for (const tr of trickles) void tr.x.response.then(() => ++count === n && resolve(), () => undefined);
  });
}

async function json(res: Response): Promise<[number, unknown]> {
  const text = await res.text();
  return [res.status, text === '' ? null : JSON.parse(text)];
}

/** A server of the hosted build (billing webhook mounted) with its own identity provider stand-in. */
async function hostedTarget(kind: TargetKind, env: Record<string, string> = {}) {
  const idp: IdpStandIn = await startIdp();
  const t = await startTarget(kind, { ...HOSTED_TEST_ENV, IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer, ...env });
  const signInBody = async (sub: string) =>
    JSON.stringify({ id_token: await idp.signIdToken({ sub, email: `${sub}@example.test`, name: sub }) });
  return {
    t,
    idp,
    signInBody,
    /** Signs `sub` in from `ip`: its session token and user id. */
    async signIn(sub: string, ip = '192.0.2.1') {
      const res = await t.api('/v1/auth/idp', { method: 'POST', token: null, headers: { 'content-type': 'application/json', ...from(ip) }, body: await signInBody(sub) });
      const body = (await res.json()) as { access_token: string; user: { id: string } };
      expect(res.status).toBe(200);
      return { token: body.access_token, id: body.user.id };
    },
    async stop() {
      await t.stop();
      await idp.close();
    },
  };
}

describe.each<TargetKind>(['node', 'workers'])('%s build', (kind) => {
  describe('one identity at one address trickling 8 MiB pushes (defaults: 8 MiB bodies, 32 MiB ceiling)', () => {
    let s: Awaited<ReturnType<typeof hostedTarget>>;
    let mallory: { token: string; id: string };
    let alice: { token: string; id: string };
    let bob: { token: string; id: string };
    const trickles: Trickle[] = [];
    beforeAll(async () => {
      s = await hostedTarget(kind);
      mallory = await s.signIn('mallory');
      alice = await s.signIn('alice');
      bob = await s.signIn('bob');
    });
    afterAll(async () => {
      for (const tr of trickles) tr.stop();
      await s?.stop();
    });

    it('holds one share; everyone else still pushes, makes PATs, signs in and gets webhooks through', async () => {
      const MALLORY_IP = '203.0.113.66';
      // Five bodies of Mallory at once, each declaring 8 MiB. Before the shares, four of them held the whole
      // 32 MiB ceiling; now one holds Mallory's 8 MiB share. Either way, the first answer is a 503 that says
      // the bodies are being held.
      for (let i = 0; i < 5; i++) trickles.push(trickle(s.t, mallory.token, MALLORY_IP, `mallory-${i}`));
      const first = await Promise.race(trickles.map((tr) => tr.x.response));
      expect([first.status, first.body, first.headers['retry-after']]).toEqual([503, BUSY, '5']);

      // Meanwhile, from other addresses: another identity's push, a PAT, a sign-in, the billing webhook.
      const push = await s.t.api('/v1/repos/alice-notes/sync/push', {
        method: 'POST',
        token: alice.token,
        headers: from('198.51.100.20'),
        json: { files: [{ path: 'a.md', content: `# A\n\n${'a'.repeat(64 * 1024)}\n` }] },
      });
      expect(push.status).toBe(200);
      const pushed = (await push.json()) as { pushed: Array<{ path: string }>; conflicts: unknown[] };
      expect([pushed.pushed.map((p) => p.path), pushed.conflicts]).toEqual([['a.md'], []]);

      const pat = await s.t.api('/v1/pats', { method: 'POST', token: alice.token, headers: from('198.51.100.20'), json: { label: 'laptop' } });
      expect(pat.status).toBe(201);
      expect(((await pat.json()) as { token: string }).token).toMatch(/^krp_/);

      const signedIn = await s.t.api('/v1/auth/idp', {
        method: 'POST',
        token: null,
        headers: { 'content-type': 'application/json', ...from('198.51.100.30') },
        body: await s.signInBody('carol'),
      });
      expect(signedIn.status).toBe(200);
      const carol = (await signedIn.json()) as { access_token: string; user: { email: string } };
      expect(carol.user.email).toBe('carol@example.test');

      const event = JSON.stringify({ type: 'subscription.activated', user_id: alice.id });
      const hook = await s.t.api('/billing/webhook', {
        method: 'POST',
        token: null,
        headers: { 'content-type': 'application/json', 'x-billing-signature': signatureHeader(event, Math.floor(Date.now() / 1000)), ...from('192.0.2.200') },
        body: event,
      });
      expect([hook.status, await hook.text()]).toEqual([204, '']);
      expect(await json(await s.t.api('/v1/billing', { token: alice.token, headers: from('198.51.100.20') }))).toEqual([
        200,
        { plan: 'pro', subscribed: true, limits: { repos: null, members: null }, usage: { repos_owned: 1 } },
      ]);

      // Of Mallory's five, four were turned away; one is still being read, trickling.
      await answered(trickles, 4);
      const refused = trickles.filter((tr) => tr.answer);
      expect(refused.map((tr) => [tr.answer!.status, tr.answer!.body, tr.answer!.headers['retry-after']])).toEqual(Array(4).fill([503, BUSY, '5']));
      expect(trickles.filter((tr) => !tr.answer)).toHaveLength(1);

      // A further body of Mallory: refused from her address, and from another (her identity's share), and
      // so is another identity's body from her address (the address's share). Her small bodies go through.
      for (const [token, ip] of [
        [mallory.token, MALLORY_IP],
        [mallory.token, '198.51.100.99'],
        [bob.token, MALLORY_IP],
      ] as const) {
        const res = await s.t.api('/v1/repos/extra/sync/push', { method: 'POST', token, headers: from(ip), json: { files: [{ path: 'x.md', content: '# X\n' }] } });
        expect([res.status, await res.text(), res.headers.get('retry-after')], `${token === bob.token ? 'bob' : 'mallory'} from ${ip}`).toEqual([503, BUSY, '5']);
      }
      const malloryPat = await s.t.api('/v1/pats', { method: 'POST', token: mallory.token, headers: from(MALLORY_IP), json: { label: 'x' } });
      expect(malloryPat.status).toBe(201);
      // Bob from his own address is unaffected.
      const bobPush = await s.t.api('/v1/repos/bob-notes/sync/push', { method: 'POST', token: bob.token, headers: from('198.51.100.40'), json: { files: [{ path: 'b.md', content: '# B\n' }] } });
      expect(bobPush.status).toBe(200);
      expect(trickles.filter((tr) => !tr.answer)).toHaveLength(1);

      // An IPv6 client is one address per /64: two identities from two addresses of one /64, 8 MiB declared
      // each, and one of them is turned away.
      const v6 = [trickle(s.t, alice.token, '2001:db8:66:1::1', 'alice-v6'), trickle(s.t, carol.access_token, '2001:db8:66:1:ffff:ffff:ffff:ffff', 'carol-v6')];
      trickles.push(...v6);
      const v6first = await Promise.race(v6.map((tr) => tr.x.response));
      expect([v6first.status, v6first.body]).toEqual([503, BUSY]);
    });
  });

  describe('four clients filling the push ceiling (1 MiB bodies, 4 MiB ceiling)', () => {
    let s: Awaited<ReturnType<typeof hostedTarget>>;
    const trickles: Trickle[] = [];
    beforeAll(async () => {
      s = await hostedTarget(kind, { SERVICE_MAX_BODY_BYTES: String(MIB), SERVICE_MAX_INFLIGHT_BODY_BYTES: String(4 * MIB) });
    });
    afterAll(async () => {
      for (const tr of trickles) tr.stop();
      await s?.stop();
    });

    it('turn away pushes but not the small JSON routes, which have a budget of their own', async () => {
      const users = await Promise.all(['u0', 'u1', 'u2', 'u3', 'u4'].map((u) => s.signIn(u)));
      // Four users, four addresses, four 1 MiB bodies: each holds its share, together the whole ceiling.
      // A fifth of the same kind is the proof they are all held: 503 with an empty share of its own.
      for (let i = 0; i < 4; i++) trickles.push(trickle(s.t, users[i]!.token, `203.0.113.${i + 1}`, `r${i}`, MIB));
      const fifth = trickle(s.t, users[4]!.token, '203.0.113.5', 'r4', MIB);
      trickles.push(fifth);
      const first = await Promise.race(trickles.map((tr) => tr.x.response));
      expect([first.status, first.body]).toEqual([503, BUSY]);
      await answered(trickles, 1);
      expect(trickles.filter((tr) => tr.answer)).toHaveLength(1);

      // The ceiling is full: any push body is turned away, even a small one from a new client...
      const push = await s.t.api('/v1/repos/r5/sync/push', { method: 'POST', token: users[4]!.token, headers: from('198.51.100.5'), json: { files: [{ path: 'a.md', content: '# A\n' }] } });
      expect([push.status, await push.text()]).toEqual([503, BUSY]);
      // ...but sign-in, PAT and repository creation, invite keys, join and the webhook are not.
      const signedIn = await s.t.api('/v1/auth/idp', { method: 'POST', token: null, headers: { 'content-type': 'application/json', ...from('198.51.100.6') }, body: await s.signInBody('dave') });
      expect(signedIn.status).toBe(200);
      const dave = ((await signedIn.json()) as { access_token: string }).access_token;
      const as = { token: dave, headers: from('198.51.100.6') };
      expect((await s.t.api('/v1/pats', { method: 'POST', ...as, json: { label: 'ci' } })).status).toBe(201);
      expect(await json(await s.t.api('/v1/repos', { method: 'POST', ...as, json: { id: 'dave-notes' } }))).toEqual([201, { id: 'dave-notes', role: 'owner' }]);
      const key = await s.t.api('/v1/repos/dave-notes/invite-keys', { method: 'POST', ...as, json: {} });
      expect(key.status).toBe(201);
      const joined = await s.t.api('/v1/repos/join', {
        method: 'POST',
        token: users[4]!.token,
        headers: from('198.51.100.5'),
        json: { key: ((await key.json()) as { token: string }).token },
      });
      expect(joined.status).toBe(200);
      const event = JSON.stringify({ type: 'subscription.activated', user_id: users[4]!.id });
      const hook = await s.t.api('/billing/webhook', {
        method: 'POST',
        token: null,
        headers: { 'content-type': 'application/json', 'x-billing-signature': signatureHeader(event, Math.floor(Date.now() / 1000)), ...from('192.0.2.200') },
        body: event,
      });
      expect(hook.status).toBe(204);
      expect(trickles.filter((tr) => !tr.answer)).toHaveLength(4);
    });
  });

  describe('a body that keeps trickling past the deadline (SERVICE_BODY_TIMEOUT_MS 1500, idle timeout 20 s)', () => {
    let s: Awaited<ReturnType<typeof hostedTarget>>;
    beforeAll(async () => {
      s = await hostedTarget(kind, { SERVICE_BODY_TIMEOUT_MS: '1500', SERVICE_BODY_IDLE_TIMEOUT_MS: '20000' });
    });
    afterAll(async () => s?.stop());

    it('is cut off: 408 request body timeout (connection closed on Node), nothing written', async () => {
      const user = await s.signIn('slow');
      const body = JSON.stringify({ files: [{ path: 'slow.md', content: `# Slow\n\n${'s'.repeat(1000)}\n` }] });
      // One byte every 50 ms: never idle, and the whole would take a minute.
      const x = rawRequest(
        s.t.url,
        head('POST', '/v1/repos/slow/sync/push', { Authorization: `Bearer ${user.token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...from('198.51.100.9') }),
        body.slice(0, 1),
      );
      let sent = 1;
      const timer = setInterval(() => {
        if (sent < body.length) void x.write(body.slice(sent, ++sent)).catch(() => undefined);
      }, 50);
      try {
        const res = await x.response;
        expect([res.status, res.body]).toEqual([408, '{"error":"request body timeout","code":"body_timeout"}']);
        // workerd owns its connections: it drops a Worker's Connection header and keeps the socket its own.
        if (kind === 'node') {
          expect(res.headers.connection).toBe('close');
          await x.closed;
        }
        expect(sent).toBeLessThan(body.length);
      } finally {
        clearInterval(timer);
        x.destroy();
      }
      // Nothing was written: the repository does not exist.
      expect(await json(await s.t.api('/v1/repos/slow/pages', { headers: from('198.51.100.9') }))).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
    });
  });
});
