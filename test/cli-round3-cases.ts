/**
 * The command-line client's hardening, once for both builds: test/cli-round3.test.ts runs them
 * against the Node server, test/cli-round3-workers.test.ts against the hosted build under workerd. Each
 * case drives the real `kr` executable (HOME in a temp dir) with users signed in through a loopback
 * identity provider:
 *  - 8: text others chose (an identity's name and email, labels, commit messages, titles, paths) never
 *    reaches the terminal with an escape sequence or a line of its own;
 *  - 9: a repository id the server would strip is refused before anything is sent, naming what it would be;
 *  - 16: `kr search` ranks instead of printing raw scores; `kr status` tells the last pull and the last push
 *    apart and says when the folder is level with the server's head; after a removal, commands say so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { KR_ENTRY, krUser, show, type KrResult, type KrUser } from './helpers/cli.ts';

/** What a hostile identity puts in its name, email or label: retitle the window, clear the screen, a forged row. */
export const EVIL = '\u001b]0;x\u0007\u001b[2J\nforged row';

const SHA7 = /^[0-9a-f]{7}$/;
/** Each case runs kr a few dozen times, each a node start: room for a loaded machine. */
const CASE_TIMEOUT = 300_000;
const page = (title: string, body = '## Notes\nSome notes.\n') => `---\ntitle: ${JSON.stringify(title)}\n---\n${body}`;

/** Neither an ESC nor a BEL anywhere, and no line that starts with the forged text. */
export function expectTerminalSafe(r: KrResult, label: string): void {
  const all = r.stdout + r.stderr;
  expect(all.includes('\u001b'), `${label}: ESC in the output\n${show(r)}`).toBe(false);
  expect(all.includes('\u0007'), `${label}: BEL in the output\n${show(r)}`).toBe(false);
  const forged = all.split('\n').filter((l) => l.trimStart().startsWith('forged row'));
  expect(forged, `${label}: a forged line\n${show(r)}`).toEqual([]);
}

/** Runs kr under a pseudo-terminal (util-linux `script`), so that stdout is a TTY. */
function krOnTerminal(u: KrUser, args: string[]): Promise<KrResult> {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const command = [process.execPath, KR_ENTRY, ...args].map(quote).join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
      cwd: u.project,
      env: { PATH: process.env.PATH ?? '', HOME: u.home, NO_COLOR: '1', SHELL: '/bin/sh', TERM: 'xterm' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.end();
  });
}

export function cliRound3Cases(kind: TargetKind): void {
  describe(`${kind}: kr, terminal text, stripped ids, search and status`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let root: { path: string; cleanup: () => Promise<void> };
    let n = 0;

    /** A user signed in through the identity provider and logged in with kr (session token). */
    async function member(name: string, email: string): Promise<KrUser & { email: string; token: string }> {
      const idToken = await idp.signIdToken({ sub: `user-${++n}`, email, name });
      const res = await t.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
      expect(res.status).toBe(200);
      const { access_token } = (await res.json()) as { access_token: string };
      const u = await krUser(root.path, `${kind}-user-${n}`);
      const login = await u.kr('login', '--server', t.url, '--token', access_token);
      expect(login.code, show(login)).toBe(0);
      return Object.assign(u, { email: email.trim().toLowerCase(), token: access_token });
    }

    /** Alice creates `repo` (as owner), invites `others` and each joins and inits a folder linked to it. */
    async function team(repo: string, ...others: Array<KrUser>): Promise<void> {
      const owner = others.shift()!;
      const created = await owner.kr('repos', 'create', repo);
      expect(created.code, show(created)).toBe(0);
      const init = await owner.kr('init', '--repo', repo, '--no-mcp');
      expect(init.code, show(init)).toBe(0);
      for (const u of others) {
        const inv = await owner.kr('invite', 'create', '--json');
        expect(inv.code, show(inv)).toBe(0);
        const joined = await u.kr('join', JSON.parse(inv.stdout).token);
        expect(joined.code, show(joined)).toBe(0);
        const ui = await u.kr('init', '--repo', repo, '--no-mcp');
        expect(ui.code, show(ui)).toBe(0);
      }
    }

    beforeAll(async () => {
      idp = await startIdp();
      root = await tempDir('kr-cli-round3-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
    }, CASE_TIMEOUT);
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
      await root?.cleanup();
    });

    it('8. an identity, labels, messages and titles with escape sequences and a newline: no ESC, no BEL, no forged row', async () => {
      const alice = await member('alice', 'alice@example.com');
      const eve = await member(`Eve${EVIL}`, `eve${EVIL}@example.com`);
      await team('esc', alice, eve);

      // Eve's own login names her email.
      const login = await eve.kr('login', '--server', t.url, '--token', eve.token);
      expect(login.code, show(login)).toBe(0);
      expectTerminalSafe(login, 'kr login');
      expect(login.stdout.split('\n')[0]).toBe(`Logged in to ${t.url} as eve?]0;x??[2j?forged row@example.com.`);

      const path = 'wiki/concepts/evil.md';
      await eve.write(path, page(`Title ${EVIL}`, `## Notes ${EVIL}\nforged words ${EVIL}\n`));
      const pushed = await eve.kr('push', '-m', `message ${EVIL}`);
      expect(pushed.code, show(pushed)).toBe(0);
      expectTerminalSafe(pushed, 'kr push');

      const invite = await alice.kr('invite', 'create', '--label', `label ${EVIL}`);
      expect(invite.code, show(invite)).toBe(0);
      expectTerminalSafe(invite, 'kr invite create');
      expect(invite.stdout).toContain('(label ?]0;x??[2J?forged row)');

      const pat = await alice.kr('pats', 'create', '--label', `pat ${EVIL}`);
      expect(pat.code, show(pat)).toBe(0);
      expectTerminalSafe(pat, 'kr pats create');

      const reads: string[][] = [
        ['members'],
        ['log'],
        ['timeline'],
        ['pages'],
        ['history', path],
        ['evolution', path, '--blame'],
        ['diff', path, '--blame'],
        ['search', 'forged'],
        ['invite', 'list'],
        ['pats', 'list'],
        ['status'],
      ];
      for (const args of reads) {
        const r = await alice.kr(...args);
        expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(0);
        expectTerminalSafe(r, `kr ${args.join(' ')}`);
      }
      // The members table keeps one row per member, Eve's email shown with "?" for each control character.
      const members = await alice.kr('members');
      const rows = members.stdout.trimEnd().split('\n');
      expect(rows).toHaveLength(3);
      expect(rows.some((l) => l.startsWith('eve?]0;x??[2j?forged row@example.com'))).toBe(true);
      // The timeline shows the commit message on the commit's line (how the server records the author's
      // email in the commit is its business: here only that it stays on that line).
      const timeline = await alice.kr('timeline');
      expect(timeline.stdout).toMatch(/^[0-9a-f]{7} {2}\S+ {2}eve\S*0;x\S*forged row@example\.com {2}message \?\]0;x\?\?\[2J/m);

      // JSON carries the exact values, escaped.
      const json = await alice.kr('members', '--json');
      expect(json.stdout.includes('\u001b')).toBe(false);
      expect(JSON.parse(json.stdout).members.map((m: { email: string }) => m.email)).toContain(eve.email);

      // kr show: the exact page into a pipe; on a terminal, the page without its control characters.
      const piped = await alice.kr('show', path);
      expect(piped.stdout).toBe(page(`Title ${EVIL}`, `## Notes ${EVIL}\nforged words ${EVIL}\n`));
      const tty = await krOnTerminal(alice, ['show', path]);
      expect(tty.code, show(tty)).toBe(0);
      expect(tty.stdout.includes('\u001b')).toBe(false);
      expect(tty.stdout.includes('\u0007')).toBe(false);
      expect(tty.stdout).toContain('## Notes ?]0;x??[2J\r\nforged row\r\nforged words');

      // Removing Eve names her email on one line.
      const removed = await alice.kr('members', 'remove', eve.email);
      expect(removed.code, show(removed)).toBe(0);
      expectTerminalSafe(removed, 'kr members remove');
      expect(removed.stdout).toBe('Removed eve?]0;x??[2j?forged row@example.com from esc. Their past commits keep their name and email.\n');
    }, CASE_TIMEOUT);

    it('9. a repository id the server would strip is refused before anything is sent, naming the id it would become', async () => {
      const alice = await member('alice9', 'alice9@example.com');
      await team('teamx', alice);
      await alice.write('wiki/concepts/secret.md', page('Secret', '## Notes\nneedle in teamx\n'));
      expect((await alice.kr('push')).code).toBe(0);

      const strip = 'the server would strip it to "teamx", another repository; if you mean teamx, give that';
      const cases: Array<[string[], string]> = [
        [['--repo', 'team;x', 'pages'], `invalid repository id "team;x" (letters, digits, _ and -, at most 64): ${strip}`],
        [['search', 'needle', '--repo', 'team;x'], `invalid repository id "team;x" (letters, digits, _ and -, at most 64): ${strip}`],
        [['--repo', 'team.x', 'log'], `invalid repository id "team.x" (letters, digits, _ and -, at most 64): ${strip}`],
        [['members', '--repo', 'team/x'], `invalid repository id "team/x" (letters, digits, _ and -, at most 64): ${strip}`],
        [['repos', 'create', 'team;x'], `invalid repository id "team;x" (must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}): ${strip}`],
        [['remote', 'set-repo', 'team x'], `invalid repository id "team x" (letters, digits, _ and -, at most 64): ${strip}`],
        [
          ['--repo', 'x%2F..%2Fteam', 'pages'],
          'invalid repository id "x%2F..%2Fteam" (letters, digits, _ and -, at most 64): the server would strip it to "x2F2Fteam", another repository; if you mean x2F2Fteam, give that',
        ],
        [['--repo', ';;', 'pages'], 'invalid repository id ";;" (letters, digits, _ and -, at most 64): nothing of it would be left once stripped to those characters'],
      ];
      for (const [args, message] of cases) {
        const r = await alice.kr(...args);
        expect(r.code, `${args.join(' ')}\n${show(r)}`).toBe(2);
        expect(r.stdout, args.join(' ')).toBe('');
        expect(r.stderr, args.join(' ')).toBe(`error: ${message}\n`);
      }
      // A folder linked by hand to such an id: the file is named.
      const other = await krUser(root.path, `${kind}-nine-${++n}`);
      await mkdir(join(other.project, '.kr'), { recursive: true });
      await writeFile(join(other.project, '.kr', 'state.json'), JSON.stringify({ version: 1, head: '', pages: {}, repo: 'team;x' }));
      await mkdir(other.configDir, { recursive: true });
      await writeFile(join(other.configDir, 'credentials.json'), JSON.stringify({ server_url: t.url, token: 'x' }), { mode: 0o600 });
      const linked = await other.kr('pull');
      expect(linked.code, show(linked)).toBe(2);
      expect(linked.stderr).toBe(
        `error: invalid repository id "team;x" in ${join(other.project, '.kr', 'state.json')} (letters, digits, _ and -, at most 64): ${strip}\n`,
      );
      // With --json, the same refusal as JSON.
      const j = await alice.kr('search', 'needle', '--repo', 'team;x', '--json');
      expect(j.code).toBe(2);
      expect(JSON.parse(j.stderr)).toEqual({ error: `invalid repository id "team;x" (letters, digits, _ and -, at most 64): ${strip}`, code: 'usage' });
    }, CASE_TIMEOUT);

    it('16. kr search ranks the results instead of printing raw scores (--json keeps them)', async () => {
      const alice = await member('alice16', 'alice16@example.com');
      await team('ranked', alice);
      await alice.write('wiki/concepts/a.md', page('Rollout', '## Notes\nrollout rollout rollout plan\n'));
      await alice.write('wiki/concepts/b.md', page('Other', '## Notes\nthe rollout once, among many other words of no interest here\n'));
      await alice.write('wiki/concepts/c.md', page('Third', '## Notes\nrollout twice: rollout\n'));
      expect((await alice.kr('push')).code).toBe(0);

      const json = await alice.kr('search', 'rollout', '--repo', 'ranked', '--json');
      expect(json.code, show(json)).toBe(0);
      const results = JSON.parse(json.stdout).results as Array<{ path: string; score: number; sha: string }>;
      expect(results).toHaveLength(3);
      expect(results.every((r) => typeof r.score === 'number')).toBe(true);

      const r = await alice.kr('search', 'rollout', '--repo', 'ranked');
      expect(r.code, show(r)).toBe(0);
      const heads = r.stdout.split('\n').filter((l) => /^\d+\. /.test(l));
      expect(heads).toEqual(results.map((x, i) => expect.stringMatching(new RegExp(`^${i + 1}\\. ${x.path.replace(/\./g, '\\.')}  \\S.* ${x.sha.slice(0, 7)}$`))));
      expect(heads.map((l) => l.slice(0, 3))).toEqual(['1. ', '2. ', '3. ']);
      expect(r.stdout).not.toMatch(/\d\.\d{2,}|\de-\d|·/);
      expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('1–3 of 3, best first');

      const next = await alice.kr('search', 'rollout', '--repo', 'ranked', '--offset', '1', '--limit', '1');
      expect(next.stdout.split('\n')[0]).toMatch(new RegExp(`^2\\. ${results[1]!.path.replace(/\./g, '\\.')}  `));
      expect(next.stdout.trimEnd().split('\n').at(-1)).toBe('2–2 of 3, best first');
    }, CASE_TIMEOUT);

    it('16. kr status tells the last pull from the last push, and when the folder is level with the server', async () => {
      const alice = await member('alice16s', 'alice16s@example.com');
      const bob = await member('bob16s', 'bob16s@example.com');
      await team('statuses', alice, bob);
      const first = (r: KrResult) => r.stdout.split('\n')[0];
      const UTC = '\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ';

      const fresh = await alice.kr('status');
      expect(fresh.code, show(fresh)).toBe(0);
      expect(first(fresh)).toBe(`Repository statuses on ${t.url}: last pull never; last push never.`);
      expect(fresh.stdout).toContain('Up to date: nothing to push or pull.');

      await alice.write('wiki/concepts/plan.md', page('Plan'));
      const pushed = await alice.kr('push', '--json');
      expect(pushed.code, show(pushed)).toBe(0);
      const aliceHead = JSON.parse(pushed.stdout).new_head as string;

      const afterPush = await alice.kr('status');
      expect(first(afterPush)).toMatch(new RegExp(`^Repository statuses on \\S+: last pull never; last push ${aliceHead.slice(0, 7)} at ${UTC}\\.$`));
      expect(afterPush.stdout).toMatch(new RegExp(`^Up to date with the server at ${aliceHead.slice(0, 7)} \\(your push, ${UTC}\\): nothing to push or pull\\.$`, 'm'));
      const afterPushJson = JSON.parse((await alice.kr('status', '--json')).stdout);
      expect(afterPushJson).toMatchObject({ head: '', server_head: aliceHead, last_pull: null, last_push: { head: aliceHead, at: expect.any(Number) }, up_to_date: true });

      // Bob changes the page: Alice is behind, and says so; her last pull and push stay what they were.
      expect((await bob.kr('pull')).code).toBe(0);
      await bob.write('wiki/concepts/plan.md', page('Plan', '## Notes\nBob was here.\n'));
      const bobPush = await bob.kr('push', '--json');
      expect(bobPush.code, show(bobPush)).toBe(0);
      const bobHead = JSON.parse(bobPush.stdout).new_head as string;
      const behind = await alice.kr('status');
      expect(first(behind)).toBe(first(afterPush));
      expect(behind.stdout).toContain('  behind    wiki/concepts/plan.md');
      expect(behind.stdout).not.toContain('Up to date');

      const pulled = await alice.kr('pull');
      expect(pulled.code, show(pulled)).toBe(0);
      const level = await alice.kr('status');
      expect(first(level)).toMatch(new RegExp(`^Repository statuses on \\S+: last pull ${bobHead.slice(0, 7)} at ${UTC}; last push ${aliceHead.slice(0, 7)} at ${UTC}\\.$`));
      expect(level.stdout).toMatch(new RegExp(`^Up to date with the server at ${bobHead.slice(0, 7)} \\(by bob16s@example\\.com, ${UTC}\\): nothing to push or pull\\.$`, 'm'));
      expect(JSON.parse((await alice.kr('status', '--json')).stdout)).toMatchObject({
        head: bobHead,
        server_head: bobHead,
        last_pull: { head: bobHead, at: expect.any(Number) },
        last_push: { head: aliceHead },
        up_to_date: true,
      });
      expect(SHA7.test(bobHead.slice(0, 7))).toBe(true);
    }, CASE_TIMEOUT);

    it('16. after a removal, kr pull says the member was removed and what to do; kr join with the old key, the server’s removal message', async () => {
      const alice = await member('alice16r', 'alice16r@example.com');
      const bob = await member('bob16r', 'bob16r@example.com');
      const inv = await alice.kr('repos', 'create', 'removal');
      expect(inv.code, show(inv)).toBe(0);
      const key = JSON.parse((await alice.kr('invite', 'create', '--repo', 'removal', '--json')).stdout).token as string;
      expect((await bob.kr('join', key)).code).toBe(0);
      expect((await bob.kr('init', '--repo', 'removal', '--no-mcp')).code).toBe(0);
      expect((await bob.kr('pull')).code).toBe(0);
      const removed = await alice.kr('members', 'remove', bob.email, '--repo', 'removal');
      expect(removed.code, show(removed)).toBe(0);

      const hint =
        'not a member of this repo: you are not, or no longer, a member of removal (an owner may have removed you); ask an owner for a new invite key, then run "kr join <key>"';
      for (const args of [['pull'], ['status'], ['log']]) {
        const r = await bob.kr(...args);
        expect(r.code, show(r)).toBe(1);
        expect(r.stderr).toBe(`error: ${hint}\n`);
      }
      const j = await bob.kr('pull', '--json');
      expect(JSON.parse(j.stderr)).toEqual({ error: hint, code: 'forbidden' });
      const again = await bob.kr('join', key);
      expect(again.code, show(again)).toBe(1);
      expect(again.stderr).toBe('error: removed from this repo; ask an owner for a new invite key\n');
    }, CASE_TIMEOUT);
  });
}
