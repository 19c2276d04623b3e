/**
 * A page changed both here and on the server, as `kr status`, `kr pull` and `kr watch` show it, once for both
 * builds: test/cli-will-merge.test.ts runs these cases against the Node server, test/cli-will-merge-workers.test.ts
 * against the hosted build under workerd. The real `kr` executable in Bob's project folder while Alice
 * (signed in through a loopback identity provider) pushes with kr too:
 *  - edits in different sections are `mergeable` ("will merge on push"), apart from real conflicts (the same
 *    section changed on both sides), in `kr status` and `kr pull` (text and `--json`); a pull whose only
 *    such pages merge exits 0; `kr push` then merges exactly those, and `kr status` is level;
 *  - `kr watch` says "will merge on push" for such a page once, and "conflict" for a real one;
 *  - `kr log` shows each push's commit and message and marks the merged one; `--no-pulls` leaves pulls out.
 * The steps run in order and share state.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { startKr, type KrProcess } from './helpers/watch.ts';

const REPO = 'both';
const ADR = 'wiki/analyses/adr.md';
const PLAN = 'wiki/analyses/plan.md';
const CASE_TIMEOUT = 600_000;

const page = (title: string) => `---\ntitle: ${title}\n---\nIntro.\n\n## Context\nMany writers.\n\n## Decision\nPostgres.\n\n## Consequences\nBackups.\n`;

export function willMergeCases(kind: TargetKind): void {
  describe(`${kind}: pages changed on both sides that kr push will merge`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let root: { path: string; cleanup: () => Promise<void> };
    let alice: KrUser;
    let bob: KrUser;
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
    const serverPage = async (path: string) => {
      const r = await t.api(`/v1/repos/${REPO}/pages/${path}`);
      expect(r.status).toBe(200);
      return { text: await r.text(), sha: r.headers.get('x-page-sha')! };
    };

    beforeAll(async () => {
      idp = await startIdp();
      root = await tempDir('kr-will-merge-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
      alice = await krUser(root.path, `${kind}-alice`);
      bob = await krUser(root.path, `${kind}-bob`);
      await ok(alice, 'login', '--server', t.url, '--token', await signIn('alice@example.com'));
      await ok(bob, 'login', '--server', t.url, '--token', await signIn('bob@example.com'));
      await ok(alice, 'repos', 'create', REPO);
      const key = JSON.parse((await ok(alice, 'invite', 'create', '--json')).stdout).token as string;
      await ok(bob, 'join', key);
      await ok(alice, 'init', '--repo', REPO, '--no-mcp');
      await ok(bob, 'init', '--repo', REPO, '--no-mcp');
    }, CASE_TIMEOUT);
    afterAll(async () => {
      for (const w of running) w.signal('SIGKILL');
      await Promise.all(running.map((w) => w.exit));
      await t?.stop();
      await idp?.close();
      await root?.cleanup();
    });

    it('status and pull: different sections are "will merge on push", the same section a conflict; push merges the first', async () => {
      await alice.write(ADR, page('ADR'));
      await alice.write(PLAN, page('Plan'));
      await ok(alice, 'push', '-m', 'two pages');
      await ok(bob, 'pull');

      // Alice changes both decisions; Bob changes ADR's consequences (merges) and PLAN's decision (conflicts).
      await alice.write(ADR, page('ADR').replace('Postgres.', 'Postgres 16.'));
      await alice.write(PLAN, page('Plan').replace('Postgres.', 'MySQL.'));
      await ok(alice, 'push', '-m', 'decide');
      const bobsAdr = page('ADR').replace('Backups.', 'Nightly backups.');
      const bobsPlan = page('Plan').replace('Postgres.', 'SQLite.');
      await bob.write(ADR, bobsAdr);
      await bob.write(PLAN, bobsPlan);

      const st = JSON.parse((await ok(bob, 'status', '--json')).stdout) as { pages: Array<{ path: string; status: string }>; up_to_date: boolean };
      expect(st.pages.map((r) => [r.path, r.status])).toEqual([
        [ADR, 'mergeable'],
        [PLAN, 'conflict'],
      ]);
      expect(st.up_to_date).toBe(false);
      const text = await ok(bob, 'status');
      expect(text.stdout).toContain(`  mergeable  ${ADR}: changed here and on the server in different parts; will merge on push\n`);
      expect(text.stdout).toContain(`  conflict  ${PLAN}\n`);
      expect(text.stderr).toContain('"kr push" merges pages marked mergeable');

      const pulled = await bob.kr('pull', '--json');
      expect(pulled.code, show(pulled)).toBe(1);
      const answer = JSON.parse(pulled.stdout);
      expect(answer.will_merge).toEqual([ADR]);
      expect(answer.conflicts).toEqual([{ path: PLAN, why: 'changed locally and on the server' }]);
      // Both files are kept as they are.
      expect(await bob.read(ADR)).toBe(bobsAdr);
      expect(await bob.read(PLAN)).toBe(bobsPlan);

      // Bob takes the server's plan: the pull that remains has only a page that merges, and exits 0.
      await ok(bob, 'resolve', 'plan', '--theirs');
      await alice.write(ADR, page('ADR').replace('Postgres.', 'Postgres 16.').replace('Many writers.', 'Many writers, one page.'));
      await ok(alice, 'push', '-m', 'context');
      const again = await ok(bob, 'pull');
      expect(again.stdout).toContain(`  will merge on push ${ADR}: changed here and on the server in different parts; your file was kept, and "kr push" merges the two\n`);
      expect(again.stdout).not.toContain('conflict');

      // The push merges it, as status said.
      const pushed = await ok(bob, 'push', '-m', 'nightly');
      expect(pushed.stdout).toContain(`merged ${ADR}`);
      const merged = page('ADR').replace('Postgres.', 'Postgres 16.').replace('Many writers.', 'Many writers, one page.').replace('Backups.', 'Nightly backups.');
      expect((await serverPage(ADR)).text).toBe(merged);
      expect(JSON.parse((await ok(bob, 'status', '--json')).stdout).pages).toEqual([]);
    }, CASE_TIMEOUT);

    it('kr watch says "will merge on push" for a page that merges and "conflict" for one that does not, once each', async () => {
      await ok(bob, 'pull');
      await ok(alice, 'pull');
      const base = (await serverPage(ADR)).text;
      const plan = (await serverPage(PLAN)).text;
      await bob.write(ADR, base.replace('Intro.', 'Intro, by Bob.'));
      await bob.write(PLAN, plan.replace('MySQL.', 'MariaDB.'));
      const w = startKr(bob, 'watch');
      running.push(w);
      await w.line(/is up to date at/);
      await alice.write(ADR, base.replace('Nightly backups.', 'Hourly backups.'));
      await alice.write(PLAN, plan.replace('MySQL.', 'Oracle.'));
      await ok(alice, 'push', '-m', 'alice again');
      await w.line(new RegExp(`^  will merge on push ${ADR}: changed here and on the server in different parts`));
      await w.line(new RegExp(`^  conflict ${PLAN}: changed locally and on the server; your file was kept$`));
      // Another push to an unrelated page: neither is named again.
      const from = w.stdout.length;
      await alice.write('wiki/concepts/other.md', '# Other\n');
      await ok(alice, 'push', '-m', 'other');
      await w.line(/alice@example.com pushed/, from);
      w.signal('SIGTERM');
      expect((await w.exit).code, w.show()).toBe(0);
      expect(w.stdout.slice(from).filter((l) => l.includes(ADR) || l.includes(PLAN))).toEqual([]);
    }, CASE_TIMEOUT);

    it('kr log --detail: each push with its commit and message, the merged one marked; --no-pulls leaves pulls out', async () => {
      // Three columns by default, as the original client's (SPEC: actor email, action, UTC time).
      const plain = (await ok(bob, 'log', '--limit', '50')).stdout.split('\n');
      expect(plain[0]).toMatch(/^ACTOR\s+ACTION\s+TIME \(UTC\)$/);
      expect(plain.some((l) => l.includes('nightly'))).toBe(false);
      const r = await ok(bob, 'log', '--limit', '50', '--detail');
      const lines = r.stdout.split('\n');
      expect(lines[0]).toMatch(/^ACTOR\s+ACTION\s+TIME \(UTC\)\s+DETAIL$/);
      const nightly = lines.find((l) => l.includes('nightly'));
      expect(nightly).toMatch(new RegExp(`^bob@example.com\\s+push\\s+\\S+Z\\s+[0-9a-f]{7}  nightly  \\(merged: ${ADR}\\)$`));
      const decide = lines.find((l) => l.includes('  decide'));
      expect(decide).toMatch(/^alice@example.com\s+push\s+\S+Z\s+[0-9a-f]{7}  decide$/);
      expect(lines.some((l) => /\spull\s/.test(l))).toBe(true);

      const pushes = await ok(bob, 'log', '--no-pulls', '--json');
      const feed = JSON.parse(pushes.stdout) as { events: Array<{ action: string; detail?: { message?: string } }>; total: number };
      expect(feed.events.length).toBeGreaterThan(0);
      expect(feed.events.every((e) => e.action === 'push')).toBe(true);
      expect(feed.total).toBe(feed.events.length);
      expect(feed.events.map((e) => e.detail?.message)).toEqual(['other', 'alice again', 'nightly', 'context', 'decide', 'two pages']);
    }, CASE_TIMEOUT);
  });
}
