/**
 * `kr watch` end to end, once for both builds: test/cli-watch.test.ts runs these cases against the
 * Node server, test/cli-watch-workers.test.ts against the hosted build under workerd. The real `kr` executable
 * watches Bob's project folder while Alice (signed in through a loopback identity provider) pushes through the
 * API:
 *  - it pulls once at the start, then on each push, and prints one line per change; the folder then holds
 *    what the server holds;
 *  - a page Bob edited here is kept, and named once; a member who joins is a line too; text from others
 *    reaches the terminal without control characters;
 *  - SIGTERM ends it with exit 0;
 *  - Bob's removal from the repository ends it with exit 1 and a message saying so (and `--json`: one JSON
 *    line per event, the error as JSON).
 * The steps run in order and share state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { startKr, type KrProcess } from './helpers/watch.ts';

const REPO = 'live';
const A = 'wiki/concepts/alpha.md';
const B = 'wiki/concepts/beta.md';
const C = 'wiki/entities/gamma.md';
const CASE_TIMEOUT = 300_000;
const TIME = '\\d\\d:\\d\\d:\\d\\d';

export function watchCases(kind: TargetKind): void {
  describe(`${kind}: kr watch`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let root: { path: string; cleanup: () => Promise<void> };
    let aliceToken = '';
    let alice: KrUser;
    let bob: KrUser;
    let watcher: KrProcess;
    const running: KrProcess[] = [];

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
    /** Alice pushes through the API; the new head. */
    const push = async (files: unknown[], token = aliceToken, extra: Record<string, unknown> = {}): Promise<string> => {
      const r = await t.api(`/v1/repos/${REPO}/sync/push`, { method: 'POST', token, json: { message: 'alice edits', files, ...extra } });
      expect(r.status).toBe(200);
      return ((await r.json()) as { new_head: string }).new_head;
    };
    const serverPage = async (path: string): Promise<string> => {
      const r = await t.api(`/v1/repos/${REPO}/pages/${path}`);
      expect(r.status).toBe(200);
      return r.text();
    };
    const watch = (...args: string[]): KrProcess => {
      const w = startKr(bob, 'watch', ...args);
      running.push(w);
      return w;
    };

    beforeAll(async () => {
      idp = await startIdp();
      root = await tempDir('kr-watch-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      aliceToken = await signIn('alice@example.com');
      const bobToken = await signIn('bob@example.com');
      alice = await krUser(root.path, `${kind}-alice`);
      bob = await krUser(root.path, `${kind}-bob`);
      await ok(alice, 'login', '--server', t.url, '--token', aliceToken);
      await ok(bob, 'login', '--server', t.url, '--token', bobToken);
      await ok(alice, 'repos', 'create', REPO);
      const key = JSON.parse((await ok(alice, 'invite', 'create', '--json')).stdout).token as string;
      await ok(bob, 'join', key);
      await ok(bob, 'init', '--repo', REPO, '--no-mcp');
    }, CASE_TIMEOUT);
    afterAll(async () => {
      for (const w of running) w.signal('SIGKILL');
      await Promise.all(running.map((w) => w.exit));
      await t?.stop();
      await idp?.close();
      await root?.cleanup();
    });

    it(
      'pulls once at the start, then on each push: one line per change, the folder as the server has it',
      async () => {
        await push([{ path: A, content: '## One\n1\n' }]);
        watcher = watch();
        const started = await watcher.line(new RegExp(`^${TIME} pulled ${REPO} at [0-9a-f]{7}: 1 added, 0 updated, 0 deleted$`));
        expect(started, watcher.show()).toBeTruthy();
        expect(watcher.stderr[0]).toBe(`Watching ${REPO} on ${t.url} (Ctrl-C stops).`);
        expect(await bob.read(A)).toBe('## One\n1\n');

        const second = await push([
          { path: A, content: '## One\n1, then 2\n' },
          { path: B, content: '## Beta\nb\n' },
        ]);
        await watcher.line(new RegExp(`^${TIME} alice@example\\.com pushed 2 page\\(s\\) \\(${second.slice(0, 7)}\\): ${A} modified, ${B} added$`));
        expect(await bob.read(A)).toBe(await serverPage(A));
        expect(await bob.read(B)).toBe('## Beta\nb\n');

        const third = await push([{ path: A, delete: true }]);
        await watcher.line(new RegExp(`^${TIME} alice@example\\.com pushed 1 page\\(s\\) \\(${third.slice(0, 7)}\\): ${A} deleted$`));
        await expect(bob.read(A)).rejects.toThrow(/ENOENT/);
        const status = await ok(bob, 'status', '--json');
        expect(JSON.parse(status.stdout)).toMatchObject({ head: third, up_to_date: true });
      },
      CASE_TIMEOUT,
    );

    it(
      'a page edited here is kept and named once; a member joining is a line; others\' text has no control characters',
      async () => {
        await bob.write(B, '## Beta\nbob was here\n');
        const from = watcher.stdout.length;
        const fourth = await push([{ path: B, content: '## Beta\nalice was here\n' }]);
        await watcher.line(new RegExp(`^${TIME} alice@example\\.com pushed 1 page\\(s\\) \\(${fourth.slice(0, 7)}\\): ${B} modified$`), from);
        await watcher.line(new RegExp(`^  conflict ${B}: changed locally and on the server; your file was kept$`), from);
        expect(await bob.read(B)).toBe('## Beta\nbob was here\n');

        // The next push names only its own change: the kept page is not reported again.
        const next = watcher.stdout.length;
        const fifth = await push([{ path: C, content: 'gamma\n' }]);
        await watcher.line(new RegExp(`\\(${fifth.slice(0, 7)}\\): ${C} added$`), next);
        const carolToken = await signIn('carol@example.com');
        const key = JSON.parse((await ok(alice, 'invite', 'create', '--json')).stdout).token as string;
        const joined = await t.api('/v1/repos/join', { method: 'POST', token: carolToken, json: { key } });
        expect(joined.status).toBe(200);
        await watcher.line(new RegExp(`^${TIME} carol@example\\.com joined \\(member\\)$`), next);
        expect(watcher.stdout.slice(next).filter((l) => l.includes('conflict'))).toEqual([]);
        expect(await bob.read(C)).toBe('gamma\n');

        // The legacy key names its own author: a C1 control (CSI) in the email reaches the terminal as "?".
        const sixth = await push([{ path: C, content: 'gamma 2\n' }], LEGACY_KEY, { author_name: 'Robot', author_email: 'robot\u009b2J@example.com' });
        const line = await watcher.line(new RegExp(`\\(${sixth.slice(0, 7)}\\)`), next);
        expect(line).toMatch(new RegExp(`^${TIME} robot\\?2J@example\\.com pushed 1 page\\(s\\) \\(${sixth.slice(0, 7)}\\): ${C} modified$`));
        expect(watcher.stdout.join('\n')).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
      },
      CASE_TIMEOUT,
    );

    it(
      'SIGTERM ends it with exit 0',
      async () => {
        watcher.signal('SIGTERM');
        const end = await watcher.exit;
        expect(end, watcher.show()).toEqual({ code: 0, signal: null });
        expect(watcher.stderr.filter((l) => l.startsWith('error'))).toEqual([]);
      },
      CASE_TIMEOUT,
    );

    it(
      'removal from the repository ends it with exit 1 and says so; --json prints one object per line',
      async () => {
        // One watcher at a time pulls into the folder: two would race for each push's pages.
        const json = watch('--json');
        const first = JSON.parse(await json.line(/^\{"event":"pull"/));
        // A pull brings what changed since the last one: Bob's kept page was reported by the watcher before.
        expect(first).toEqual({ event: 'pull', new_head: expect.stringMatching(/^[0-9a-f]{40}$/), added: [], updated: [], deleted: [], conflicts: [], will_merge: [] });

        const head = await push([{ path: C, content: 'gamma 3\n' }]);
        const pushed = JSON.parse(await json.line(/^\{"event":"push"/));
        expect(pushed).toEqual({
          event: 'push',
          id: expect.stringMatching(/^\S+$/),
          repo_id: REPO,
          sha: head,
          author: 'alice',
          email: 'alice@example.com',
          time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
          message: 'alice edits',
          paths: [{ path: C, status: 'modified' }],
          pulled: { new_head: head, added: [], updated: [C], deleted: [], conflicts: [], will_merge: [] },
        });
        const text = watch();
        await text.line(new RegExp(`^${TIME} ${REPO} is up to date at [0-9a-f]{7}$`));

        await ok(alice, 'members', 'remove', 'bob@example.com');
        for (const w of [text, json]) expect((await w.exit).code, w.show()).toBe(1);
        expect(text.stderr.at(-1)).toBe(
          `error: you were removed from ${REPO}: the server ended its event stream (removed from this repo); ask an owner for a new invite key, then run "kr join <key>"`,
        );
        expect(JSON.parse(json.stdout.at(-1)!)).toEqual({ event: 'revoked', reason: 'removed from this repo' });
        expect(JSON.parse(json.stderr.at(-1)!)).toEqual({
          error: `you were removed from ${REPO}: the server ended its event stream (removed from this repo); ask an owner for a new invite key, then run "kr join <key>"`,
          code: 'revoked',
        });
        // Every line of --json is one JSON object.
        for (const l of json.stdout) expect(() => JSON.parse(l)).not.toThrow();
      },
      CASE_TIMEOUT,
    );
  });
}
