/**
 * The agent tool server's live updates (docs/agents.md "Live updates"), once for both builds (mcp-live.test.ts: the Node server;
 * mcp-live-workers.test.ts: the hosted build under workerd). The SDK's own `Client` over stdio spawns the real
 * `kr mcp` in Alice's project folder; Bob pushes through the API, then as a second agent:
 *  - the server declares `resources.subscribe`; a URI it sends no updates for is refused;
 *  - subscribed to a page and `kr://index`, the agent hears of Bob's push to that page (one notification for
 *    each) and its folder already holds Bob's version; a page edited here is kept;
 *  - after unsubscribing a page, a push to it notifies only the index; the stream closes once nothing is
 *    subscribed (seen through the server's cap of 10 streams per person and repository);
 *  - two agents (Alice's and Bob's folders) write different sections of one page through kr_write_page from
 *    the same base: both stamp frontmatter `updated`, both pushes succeed, the page holds both sections and
 *    the `updated` of the first push.
 * The steps run in order and share state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { KR_ENTRY, krUser, show, type KrUser } from './helpers/cli.ts';
import { parsePage } from '../lib/core/page/parse.ts';

const REPO = 'heard';
const ALPHA = 'wiki/concepts/alpha.md';
const BETA = 'wiki/concepts/beta.md';
const SHARED = 'wiki/concepts/shared-notes.md';
const INDEX = 'kr://index';
const CASE_TIMEOUT = 600_000;

type ToolResult = { content: Array<{ type: string; text?: string }>; isError?: boolean };

/** An agent: the SDK client of a `kr mcp` in `user`'s folder, and the URIs it was notified of, in order. */
interface Agent {
  client: Client;
  updates: string[];
  /** Resolves once `updates` (from index `from` on) satisfies `ok`; bounded by the test's own timeout. */
  until(ok: (u: string[]) => boolean, from?: number): Promise<string[]>;
  call(name: string, args?: Record<string, unknown>): Promise<{ text: string; isError: boolean }>;
  stderr(): string;
}

async function agent(user: KrUser, name: string): Promise<Agent> {
  const env: Record<string, string> = { HOME: user.home, PATH: process.env.PATH ?? '' };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  const client = new Client({ name, version: '1.0.0' });
  const updates: string[] = [];
  const waiters = new Set<() => void>();
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updates.push(n.params.uri);
    for (const w of [...waiters]) w();
  });
  const transport = new StdioClientTransport({ command: process.execPath, args: [KR_ENTRY, 'mcp'], cwd: user.project, env, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
  });
  await client.connect(transport);
  return {
    client,
    updates,
    until: (ok, from = 0) =>
      new Promise((resolve) => {
        const check = () => {
          if (ok(updates.slice(from))) {
            waiters.delete(check);
            resolve(updates.slice(from));
          }
        };
        waiters.add(check);
        check();
      }),
    call: async (tool, args = {}) => {
      const r = (await client.callTool({ name: tool, arguments: args })) as ToolResult;
      return { text: r.content.map((c) => c.text ?? '').join('\n'), isError: r.isError === true };
    },
    stderr: () => err,
  };
}

export function mcpLiveCases(kind: TargetKind): void {
  describe(`${kind}: kr mcp resource subscriptions`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let root: { path: string; cleanup: () => Promise<void> };
    let alice: KrUser;
    let bob: KrUser;
    let aliceToken = '';
    let bobToken = '';
    let a: Agent;
    const agents: Agent[] = [];

    const signIn = async (email: string): Promise<string> => {
      const idToken = await idp.signIdToken({ sub: `sub-${email}`, email, name: email.split('@')[0] });
      const res = await t.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(res.status).toBe(200);
      return ((await res.json()) as { access_token: string }).access_token;
    };
    const ok = async (u: KrUser, ...args: string[]) => {
      const r = await u.kr(...args);
      expect(r.code, `kr ${args.join(' ')}\n${show(r)}`).toBe(0);
      return r;
    };
    /** Bob pushes through the API; the new head. */
    const bobPushes = async (files: unknown[]): Promise<string> => {
      const r = await t.api(`/v1/repos/${REPO}/sync/push`, { method: 'POST', token: bobToken, json: { message: 'bob edits', files } });
      expect(r.status).toBe(200);
      return ((await r.json()) as { new_head: string }).new_head;
    };
    const serverPage = async (path: string) => {
      const r = await t.api(`/v1/repos/${REPO}/pages/${path}`);
      expect(r.status).toBe(200);
      return { text: await r.text(), sha: r.headers.get('x-page-sha')! };
    };
    const openStream = () => t.api(`/v1/repos/${REPO}/events`, { token: aliceToken });

    beforeAll(async () => {
      idp = await startIdp();
      root = await tempDir('kr-mcp-live-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      aliceToken = await signIn('alice@example.com');
      bobToken = await signIn('bob@example.com');
      alice = await krUser(root.path, `${kind}-alice`);
      bob = await krUser(root.path, `${kind}-bob`);
      await ok(alice, 'login', '--server', t.url, '--token', aliceToken);
      await ok(bob, 'login', '--server', t.url, '--token', bobToken);
      await ok(alice, 'repos', 'create', REPO);
      const key = JSON.parse((await ok(alice, 'invite', 'create', '--json')).stdout).token as string;
      await ok(bob, 'join', key);
      await ok(alice, 'init', '--no-mcp');
      await bobPushes([
        { path: ALPHA, content: '## Alpha\none\n' },
        { path: BETA, content: '## Beta\none\n' },
      ]);
      a = await agent(alice, 'alice-agent');
      agents.push(a);
      const pulled = await a.call('kr_pull');
      expect(pulled.isError, pulled.text).toBe(false);
    }, CASE_TIMEOUT);
    afterAll(async () => {
      for (const x of agents) await x.client.close();
      await t?.stop();
      await idp?.close();
      await root?.cleanup();
    });

    it('declares resources.subscribe; refuses a URI it sends no updates for', async () => {
      expect(a.client.getServerCapabilities()?.resources).toMatchObject({ subscribe: true });
      await expect(a.client.subscribeResource({ uri: 'kr://search/alpha' })).rejects.toThrow(
        'cannot subscribe to kr://search/alpha: updates are sent for kr://index and kr://page/{slug}',
      );
      await expect(a.client.subscribeResource({ uri: 'kr://page/a%2Fb' })).rejects.toThrow('cannot subscribe to kr://page/a%2Fb: updates are sent for kr://index and kr://page/{slug}');
    });

    it(
      'subscribed to a page and the index: a teammate\'s push notifies both, and the folder already holds it; a local edit is kept',
      async () => {
        await a.client.subscribeResource({ uri: 'kr://page/alpha' });
        await a.client.subscribeResource({ uri: INDEX });
        const s = await a.call('kr_status');
        expect(s.text).toContain('Live updates: on for 2 subscribed resource(s); pushes by others are pulled as they happen.');

        await bobPushes([{ path: ALPHA, content: '## Alpha\none, two\n' }]);
        expect(await a.until((u) => u.length >= 2), a.stderr()).toEqual(['kr://page/alpha', INDEX]);
        // The notification comes after the pull: the agent reads the new version from its folder.
        expect(await alice.read(ALPHA)).toBe('## Alpha\none, two\n');
        const read = await a.client.readResource({ uri: 'kr://page/alpha' });
        expect(JSON.stringify(read.contents)).toContain('one, two');

        // Alice's unpushed edit of the page is never overwritten by a live pull.
        await alice.write(ALPHA, '## Alpha\nalice was here\n');
        const from = a.updates.length;
        await bobPushes([{ path: ALPHA, content: '## Alpha\nbob again\n' }]);
        expect(await a.until((u) => u.length >= 2, from)).toEqual(['kr://page/alpha', INDEX]);
        expect(await alice.read(ALPHA)).toBe('## Alpha\nalice was here\n');
        const st = await a.call('kr_status');
        expect(st.text).toMatch(new RegExp(`Changed here and on the server \\(conflicts\\):[\\s\\S]*${ALPHA}`));
        // Alice takes the server's version back, so later steps start clean.
        await alice.write(ALPHA, (await serverPage(ALPHA)).text);
        const pulled = await a.call('kr_pull', { full: true });
        expect(pulled.isError, pulled.text).toBe(false);
      },
      CASE_TIMEOUT,
    );

    it(
      'unsubscribed from a page: its pushes notify only the index; nothing subscribed: the stream is closed',
      async () => {
        await a.client.unsubscribeResource({ uri: 'kr://page/alpha' });
        await a.client.subscribeResource({ uri: 'kr://page/beta' });
        const from = a.updates.length;
        await bobPushes([{ path: ALPHA, content: '## Alpha\nthree\n' }]);
        await bobPushes([{ path: BETA, content: '## Beta\ntwo\n' }]);
        // Each push event: a pull, then the index, then the subscribed pages among what changed — beta's push names
        // beta; alpha's pull may already bring beta too. Alpha is never named again.
        const indexes = (u: string[]) => u.filter((x) => x === INDEX).length;
        const got = await a.until((u) => indexes(u) === 2 && u.at(-1) === 'kr://page/beta' && u.lastIndexOf(INDEX) < u.length - 1, from);
        expect(indexes(got)).toBe(2);
        expect(got.filter((x) => x !== INDEX && x !== 'kr://page/beta')).toEqual([]);
        expect(got[0]).toBe(INDEX);
        expect(await alice.read(ALPHA)).toBe('## Alpha\nthree\n');
        expect(await alice.read(BETA)).toBe('## Beta\ntwo\n');

        // The agent's stream and 9 more are Alice's 10: the 11th is refused.
        const held: Response[] = [];
        try {
          for (let i = 0; i < 9; i++) {
            const r = await openStream();
            expect(r.status).toBe(200);
            held.push(r);
          }
          const refused = await openStream();
          expect(refused.status).toBe(429);
          expect(await refused.json()).toEqual({ error: 'too many event streams', code: 'too_many_streams' });

          await a.client.unsubscribeResource({ uri: 'kr://page/beta' });
          await a.client.unsubscribeResource({ uri: INDEX });
          expect((await a.call('kr_status')).text).not.toContain('Live updates');
          // The agent closed its stream: once the server has seen it go, a 10th is taken again.
          for (;;) {
            const r = await openStream();
            if (r.status === 200) {
              held.push(r);
              break;
            }
            expect(r.status).toBe(429);
            await r.body?.cancel();
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        } finally {
          for (const r of held) await r.body?.cancel();
        }
      },
      CASE_TIMEOUT,
    );

    it(
      'two agents write different sections of one page from the same base: both pushes succeed, the page holds both',
      async () => {
        await ok(bob, 'init', '--repo', REPO, '--no-mcp');
        const b = await agent(bob, 'bob-agent');
        agents.push(b);
        const body = '## Context\nWe need a store.\n\n## Decision\nUse git.\n\n## Consequences\nHistory for free.\n';
        const w0 = await a.call('kr_write_page', { slug: 'shared-notes', type: 'concept', body });
        expect(w0.isError, w0.text).toBe(false);
        const p0 = await a.call('kr_push', { message: 'notes' });
        expect(p0.isError, p0.text).toBe(false);
        const pb = await b.call('kr_pull');
        expect(pb.isError, pb.text).toBe(false);
        expect(await bob.read(SHARED)).toBe(await alice.read(SHARED));

        // Both agents write from the same base, each its own section; each write stamps `updated`.
        const wa = await a.call('kr_write_page', { slug: 'shared-notes', type: 'concept', body: body.replace('Use git.', 'Use git, one repository per project.') });
        expect(wa.isError, wa.text).toBe(false);
        const wb = await b.call('kr_write_page', { slug: 'shared-notes', type: 'concept', body: body.replace('History for free.', 'History for free; backups are clones.') });
        expect(wb.isError, wb.text).toBe(false);
        const stampA = parsePage(await alice.read(SHARED)).frontmatter!.updated as string;
        const stampB = parsePage(await bob.read(SHARED)).frontmatter!.updated as string;
        expect(typeof stampA).toBe('string');
        expect(stampB).not.toBe(stampA);

        const pa = await a.call('kr_push', { message: 'decision' });
        expect(pa.isError, pa.text).toBe(false);
        expect(pa.text.split('\n')[0]).toMatch(new RegExp(`^Pushed 1 page\\(s\\) to ${REPO}; HEAD=[0-9a-f]{8}$`));
        const pushed = await b.call('kr_push', { message: 'consequences' });
        expect(pushed.isError, pushed.text).toBe(false);
        const head = await serverPage(SHARED);
        expect(pushed.text.split('\n')[0]).toBe(`Pushed 1 page(s) to ${REPO}; HEAD=${head.sha.slice(0, 8)}`);
        expect(pushed.text).toContain(
          `frontmatter "updated" was stamped by you (${stampB}) and on the server (${stampA}) at once, so the page was pushed again with the server's value, which it keeps`,
        );
        expect(pushed.text).not.toContain('conflict');

        // The page holds both sections, and the first push's `updated`; Bob's folder holds the merged page.
        expect(head.text).toContain('Use git, one repository per project.');
        expect(head.text).toContain('History for free; backups are clones.');
        expect(parsePage(head.text).frontmatter!.updated).toBe(stampA);
        expect(await bob.read(SHARED)).toBe(head.text);
        const sb = await b.call('kr_status');
        expect(sb.text).toContain('Modified here, not pushed: none');
        expect(sb.text).toContain('Changed here and on the server (conflicts): none');
      },
      CASE_TIMEOUT,
    );
  });
}
