/**
 * Section merge in `kr push`, once for both builds: test/cli-merge.test.ts runs them against the
 * Node server, test/cli-merge-workers.test.ts against the hosted build under workerd. The real `kr`
 * executable (HOME in a temp dir) in the project folders of users signed in through a loopback identity
 * provider:
 *  - two folders edit different sections of one page from one parent: the second push merges, says which
 *    parts came from where, writes the merged page into `.kr/`, `kr status` is level; a third push from the
 *    first folder merges too;
 *  - a real conflict names only the parts that conflict, and who changed the server's side; the resolve flow
 *    still works;
 *  - `--no-merge` is the original conflict;
 *  - a file edited while its push ran is not overwritten by the merged page (the push's steps run in-process
 *    here, to edit the file between them);
 *  - six folders push edits of six sections of one page from one parent at once: all succeed.
 * Every repository is checked with `git fsck --strict` on a clone of its export bundle.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startIdp, type IdpStandIn } from './helpers/idp.ts';
import { tempDir } from './helpers/env.ts';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';
import { krUser, show, type KrResult, type KrUser } from './helpers/cli.ts';
import { Api } from '../client/api.ts';
import { planPush, sendPushes } from '../client/sync.ts';
import { Project, loadState } from '../client/project.ts';

/** Each case runs kr a few dozen times, each a node start: room for a loaded machine. */
const CASE_TIMEOUT = 600_000;
const ADR = 'wiki/analyses/adr.md';

/** Neither an ESC nor a BEL anywhere in the output. */
function expectNoEscapes(r: KrResult): void {
  expect(r.stdout.includes('\u001b') || r.stderr.includes('\u001b'), show(r)).toBe(false);
  expect(r.stdout.includes('\u0007') || r.stderr.includes('\u0007'), show(r)).toBe(false);
}

export function cliMergeCases(kind: TargetKind): void {
  describe(`${kind}: kr push merges sections`, () => {
    let t: Target;
    let idp: IdpStandIn;
    let root: { path: string; cleanup: () => Promise<void> };
    let n = 0;

    type Member = KrUser & { email: string; token: string };

    /** A user signed in through the identity provider and logged in with kr in a folder of its own. */
    async function member(email: string, token?: string): Promise<Member> {
      if (token === undefined) {
        const idToken = await idp.signIdToken({ sub: `user-${email}`, email, name: email.split('@')[0] });
        const res = await t.api('/v1/auth/idp', { method: 'POST', token: null, json: { id_token: idToken } });
        expect(res.status).toBe(200);
        token = ((await res.json()) as { access_token: string }).access_token;
      }
      const u = await krUser(root.path, `${kind}-${++n}`);
      const login = await u.kr('login', '--server', t.url, '--token', token);
      expect(login.code, show(login)).toBe(0);
      return Object.assign(u, { email, token });
    }

    /** `owner` creates `repo`; each other user joins it (an invite); every folder is linked to it. */
    async function team(repo: string, owner: Member, ...others: Member[]): Promise<void> {
      const created = await owner.kr('repos', 'create', repo);
      expect(created.code, show(created)).toBe(0);
      for (const u of [owner, ...others]) {
        if (u !== owner && u.token !== owner.token) {
          const inv = await owner.kr('invite', 'create', '--json');
          expect(inv.code, show(inv)).toBe(0);
          const joined = await u.kr('join', JSON.parse(inv.stdout).token);
          expect(joined.code, show(joined)).toBe(0);
        }
        const init = await u.kr('init', '--repo', repo, '--no-mcp');
        expect(init.code, show(init)).toBe(0);
      }
    }

    const ok = async (u: KrUser, ...args: string[]): Promise<KrResult> => {
      const r = await u.kr(...args);
      expect(r.code, `kr ${args.join(' ')}\n${show(r)}`).toBe(0);
      return r;
    };
    /** The page on the server now, and the commit that last touched it. */
    const serverPage = async (repo: string, path: string) => {
      const r = await t.api(`/v1/repos/${repo}/pages/${path}`);
      expect(r.status).toBe(200);
      return { text: await r.text(), sha: r.headers.get('x-page-sha')! };
    };
    const stateOf = async (u: KrUser) => JSON.parse(await readFile(join(u.project, '.kr', 'state.json'), 'utf8'));

    /** The repository's export bundle, cloned bare: `git fsck --strict` passes; its commit subjects, newest first. */
    async function fsckedSubjects(repo: string): Promise<string[]> {
      const r = await t.api(`/v1/repos/${repo}/export`);
      expect(r.status).toBe(200);
      const file = join(root.path, `${kind}-${repo}.bundle`);
      await writeFile(file, new Uint8Array(await r.arrayBuffer()));
      const dir = join(root.path, `${kind}-${repo}.git`);
      execFileSync('git', ['clone', '-q', '--bare', file, dir], { stdio: 'pipe' });
      execFileSync('git', ['--git-dir', dir, 'fsck', '--strict', '--no-dangling'], { stdio: 'pipe' });
      return execFileSync('git', ['--git-dir', dir, 'log', '--format=%s', 'HEAD'], { encoding: 'utf8' }).trimEnd().split('\n');
    }

    /** The page all cases start from; its last heading carries escape sequences (page text is untrusted). */
    const HOSTILE = '## Consequences \u001b]0;x\u0007';
    const base = `---\ntitle: ADR 7\ntags: [db]\n---\nWhy we pick a database.\n\n## Context\nMany writers.\n\n## Decision\nPostgres.\n\n${HOSTILE}\nBackups.\n`;

    beforeAll(async () => {
      idp = await startIdp();
      root = await tempDir('kr-cli-merge-');
      t = await startTarget(kind, { IDP_OAUTH_CLIENT_ID: idp.clientId, IDP_JWKS_URL: idp.jwksUrl, IDP_ISSUERS: idp.issuer });
    }, CASE_TIMEOUT);
    afterAll(async () => {
      await t?.stop();
      await idp?.close();
      await root?.cleanup();
    });

    it('different sections from one parent: the second push merges, writes the merged page, status is level; a third push merges too', async () => {
      const alice = await member('alice@example.com');
      const bob = await member('bob@example.com');
      await team('adr', alice, bob);
      await alice.write(ADR, base);
      await ok(alice, 'push', '-m', 'adr 7');
      await ok(bob, 'pull');

      // Alice changes the decision and pushes first.
      await alice.write(ADR, base.replace('Postgres.', 'Postgres 16.'));
      const first = await ok(alice, 'push', '-m', 'decide');
      expect(first.stdout).not.toContain('merged');
      const a = (await serverPage('adr', ADR)).sha;

      // Bob, still on the parent, changes the consequences: merged, not a conflict.
      const bobs = base.replace('Backups.', 'Nightly backups.');
      await bob.write(ADR, bobs);
      const second = await ok(bob, 'push', '-m', 'backups');
      expectNoEscapes(second);
      const merged = base.replace('Postgres.', 'Postgres 16.').replace('Backups.', 'Nightly backups.');
      const b = await serverPage('adr', ADR);
      expect(b.text).toBe(merged);
      expect(second.stdout).toBe(
        `Pushed 1 page(s) to adr as ${b.sha.slice(0, 7)}:\n` +
          `  modified  ${ADR}\n` +
          `merged ${ADR} with ${a.slice(0, 7)}: ## Decision (theirs), ## Consequences ?]0;x? (yours)\n`,
      );
      // .kr/ holds the merged page, recorded as based on the merge commit: level with the server.
      expect(await bob.read(ADR)).toBe(merged);
      expect((await stateOf(bob)).pages[ADR].sha).toBe(b.sha);
      const status = await ok(bob, 'status', '--json');
      expect(JSON.parse(status.stdout)).toMatchObject({ up_to_date: true, pages: [], server_head: b.sha, last_push: { head: b.sha } });
      const human = await ok(bob, 'status');
      expect(human.stdout).toContain(`Up to date with the server at ${b.sha.slice(0, 7)} (your push, `);
      expect((await ok(bob, 'push')).stdout).toBe('Nothing to push: no new, changed or deleted pages.\n');

      // Alice's folder is still based on her own push; her next edit merges with Bob's.
      const alices = base.replace('Postgres.', 'Postgres 16.').replace('Many writers.', 'Many writers, one page.');
      await alice.write(ADR, alices);
      const third = await ok(alice, 'push', '-m', 'context');
      const final = merged.replace('Many writers.', 'Many writers, one page.');
      const c = await serverPage('adr', ADR);
      expect(c.text).toBe(final);
      expect(third.stdout.split('\n')).toContain(`merged ${ADR} with ${b.sha.slice(0, 7)}: ## Context (yours), ## Consequences ?]0;x? (theirs)`);
      expect(await alice.read(ADR)).toBe(final);
      expect(JSON.parse((await ok(alice, 'status', '--json')).stdout)).toMatchObject({ up_to_date: true, pages: [] });
      // Bob's pull brings Alice's merge; each push is one commit.
      await ok(bob, 'pull');
      expect(await bob.read(ADR)).toBe(final);
      expect(await fsckedSubjects('adr')).toEqual(['context', 'backups', 'decide', 'adr 7']);
    }, CASE_TIMEOUT);

    it('a real conflict names only the conflicting section and who changed it; the file is untouched; resolve still works', async () => {
      const alice = await member('alice2@example.com');
      const bob = await member('bob2@example.com');
      await team('clash', alice, bob);
      const hostileDecision = '## Decision \u001b[2J';
      const page = base.replace('## Decision', hostileDecision);
      await alice.write(ADR, page);
      await ok(alice, 'push');
      await ok(bob, 'pull');

      // Both change the decision (differently) and one other section each.
      await alice.write(ADR, page.replace('Postgres.', 'MySQL.').replace('Many writers.', 'Many writers, one page.'));
      await ok(alice, 'push', '-m', 'mysql');
      const theirs = await serverPage('clash', ADR);
      const bobs = page.replace('Postgres.', 'SQLite.').replace('Backups.', 'Nightly backups.');
      await bob.write(ADR, bobs);
      const r = await bob.kr('push');
      expect(r.code, show(r)).toBe(1);
      expectNoEscapes(r);
      expect(r.stdout).toBe(`conflict  ${ADR}: ## Decision ?[2J changed on the server (by alice2@example.com, ${theirs.sha.slice(0, 7)}) and here; your file was left as it is.\n`);
      expect(r.stderr).toContain(`1 page(s) not pushed because they changed on the server: ${ADR}`);
      expect(r.stderr).toContain('"kr resolve <slug>"');
      expect(await bob.read(ADR)).toBe(bobs);
      expect((await serverPage('clash', ADR)).sha).toBe(theirs.sha);

      const json = await bob.kr('push', '--json');
      expect(json.code, show(json)).toBe(1);
      const answer = JSON.parse(json.stdout);
      expect(answer.merged).toEqual([]);
      expect(answer.conflicts).toEqual([{ path: ADR, current_sha: theirs.sha, expected_parent_sha: expect.stringMatching(/^[0-9a-f]{40}$/), conflicting: [hostileDecision] }]);

      // The resolve flow: pull (the file is kept), merge by hand on the server's version, resolve, push.
      const pull = await bob.kr('pull');
      expect(pull.code, show(pull)).toBe(1);
      expect(pull.stdout).toContain(`conflict ${ADR}: changed locally and on the server; your file was kept`);
      const resolved = theirs.text.replace('MySQL.', 'MySQL, or SQLite for tests.').replace('Backups.', 'Nightly backups.');
      await bob.write(ADR, resolved);
      await ok(bob, 'resolve', 'adr');
      const pushed = await ok(bob, 'push', '-m', 'resolved');
      expect(pushed.stdout).not.toContain('merged');
      expect((await serverPage('clash', ADR)).text).toBe(resolved);
      expect(await fsckedSubjects('clash')).toHaveLength(3);
    }, CASE_TIMEOUT);

    it('a page deleted on the server since the file\'s base: named with who deleted it, never re-created silently; resolve then push creates it again', async () => {
      const alice = await member('alice4@example.com');
      const bob = await member('bob4@example.com');
      await team('gone', alice, bob);
      await alice.write(ADR, base);
      await ok(alice, 'push');
      await ok(bob, 'pull');
      // Alice deletes the page; Bob, not knowing, edits his copy.
      const rm = await ok(alice, 'rm', 'adr');
      const deletion = JSON.parse((await ok(alice, 'status', '--json')).stdout).last_push.head as string;
      expect(rm.stdout).toContain(deletion.slice(0, 7));
      const bobs = base.replace('Postgres.', 'SQLite.');
      await bob.write(ADR, bobs);
      for (const args of [['push'], ['push', '--no-merge']]) {
        const r = await bob.kr(...args);
        expect(r.code, show(r)).toBe(1);
        expectNoEscapes(r);
        expect(r.stdout).toBe(
          `conflict  ${ADR}: deleted on the server by alice4@example.com in ${deletion.slice(0, 7)}, after the version your file is based on ` +
            `(${JSON.parse(await readFile(join(bob.project, '.kr', 'state.json'), 'utf8')).pages[ADR].sha.slice(0, 7)}); your file was left as it is, and the page stays deleted.\n` +
            `    (to create it again from your file: "kr resolve <slug>", then "kr push"; to drop your file: "kr resolve <slug> --theirs")\n`,
        );
        expect(r.stderr).toContain(`deleted on the server: ${ADR}; "kr resolve <slug>" then "kr push" creates a page again from your file`);
        expect(r.stderr).not.toContain('kr diff');
      }
      const json = await bob.kr('push', '--json');
      expect(json.code, show(json)).toBe(1);
      expect(JSON.parse(json.stdout).conflicts).toEqual([
        { path: ADR, current_sha: deletion, expected_parent_sha: expect.stringMatching(/^[0-9a-f]{40}$/), deleted: true, deleted_by: 'alice4@example.com' },
      ]);
      // Still deleted on the server; Bob's file untouched.
      expect((await t.api(`/v1/repos/gone/pages/${ADR}`)).status).toBe(404);
      expect(await bob.read(ADR)).toBe(bobs);

      // The explicit step: resolve bases the file on "no page", and the push creates it again.
      const resolved = await ok(bob, 'resolve', 'adr');
      expect(resolved.stdout).toContain('not on the server; "kr push" creates it from your file.');
      const again = await ok(bob, 'push', '-m', 'bring back');
      expect(again.stdout).toContain(`new       ${ADR}`);
      expect((await serverPage('gone', ADR)).text).toBe(bobs);
      expect(await fsckedSubjects('gone')).toEqual(['bring back', `delete ${ADR}`, `update ${ADR}`]);
    }, CASE_TIMEOUT);

    it('--no-merge: the original conflict with its section summary, and the original JSON; without it the same push merges', async () => {
      const alice = await member('alice3@example.com');
      const bob = await member('bob3@example.com');
      await team('plain', alice, bob);
      await alice.write(ADR, base);
      await ok(alice, 'push');
      await ok(bob, 'pull');
      const parent = (await serverPage('plain', ADR)).sha;
      await alice.write(ADR, base.replace('Postgres.', 'Postgres 16.'));
      await ok(alice, 'push');
      const head = (await serverPage('plain', ADR)).sha;
      const bobs = base.replace('Backups.', 'Nightly backups.');
      await bob.write(ADR, bobs);

      const r = await bob.kr('push', '--no-merge');
      expect(r.code, show(r)).toBe(1);
      expectNoEscapes(r);
      expect(r.stdout).toBe(
        `conflict  ${ADR}: the server has ${head.slice(0, 7)}, your copy is based on ${parent.slice(0, 7)}; your file was left as it is. Sections (yours vs the server's):\n` +
          `    changed on the server   ## Decision\n` +
          `    changed by you          ## Consequences ?]0;x?\n`,
      );
      expect(r.stderr).toBe(
        `error: 1 page(s) not pushed because they changed on the server: ${ADR}\n` +
          `  next: "kr pull", compare with "kr diff <slug> --local", merge into your file, then "kr resolve <slug>" and "kr push"\n`,
      );
      const json = await bob.kr('push', '--no-merge', '--json');
      expect(json.code, show(json)).toBe(1);
      expect(JSON.parse(json.stdout)).toEqual({
        new_head: null,
        commits: [],
        pushed: [],
        deleted: [],
        already_on_server: [],
        conflicts: [{ path: ADR, current_sha: head, expected_parent_sha: parent }],
        too_large: [],
        skipped: [],
      });
      expect(await bob.read(ADR)).toBe(bobs);
      expect((await stateOf(bob)).pages[ADR].sha).toBe(parent);

      const merged = await ok(bob, 'push');
      expect(merged.stdout).toContain(`merged ${ADR} with ${head.slice(0, 7)}: ## Decision (theirs), ## Consequences ?]0;x? (yours)`);
      expect(await bob.read(ADR)).toBe(base.replace('Postgres.', 'Postgres 16.').replace('Backups.', 'Nightly backups.'));
    }, CASE_TIMEOUT);

    it('a file changed while the push ran is left as it is, on its old base; the next push merges it again', async () => {
      const alice = await member('alice4@example.com');
      const bob = await member('bob4@example.com');
      await team('race', alice, bob);
      await alice.write(ADR, base);
      await ok(alice, 'push');
      await ok(bob, 'pull');
      const parent = (await serverPage('race', ADR)).sha;
      await alice.write(ADR, base.replace('Postgres.', 'Postgres 16.'));
      await ok(alice, 'push');

      // Bob's push is planned (his file read), then he edits the file again before the answer is taken.
      await bob.write(ADR, base.replace('Backups.', 'Nightly backups.'));
      const project = new Project(bob.project, await loadState(bob.project));
      await project.scan();
      const plan = await planPush(project, [], undefined, 'backups');
      const later = base.replace('Backups.', 'Nightly backups.').replace('Many writers.', 'Many writers, one page.');
      await bob.write(ADR, later);
      const res = await sendPushes(project, new Api({ baseUrl: t.url, token: bob.token }), 'race', [plan.files], plan.message, { merge: true });
      const first = base.replace('Postgres.', 'Postgres 16.').replace('Backups.', 'Nightly backups.');
      expect(res.merged).toEqual([expect.objectContaining({ path: ADR, text: first, parent, notWritten: 'your file changed while the push ran' })]);
      expect((await serverPage('race', ADR)).text).toBe(first);
      expect(await bob.read(ADR)).toBe(later);
      expect((await stateOf(bob)).pages[ADR].sha).toBe(parent);

      // His next push is based on the old parent again: the merge keeps Alice's change and adds his new one.
      const again = await ok(bob, 'push');
      const final = first.replace('Many writers.', 'Many writers, one page.');
      expect((await serverPage('race', ADR)).text).toBe(final);
      expect(await bob.read(ADR)).toBe(final);
      expect(again.stdout).toMatch(new RegExp(`^merged ${ADR} with [0-9a-f]{7}: ## Context \\(yours\\), ## Decision \\(theirs\\), `, 'm'));
      expect(JSON.parse((await ok(bob, 'status', '--json')).stdout)).toMatchObject({ up_to_date: true, pages: [] });
    }, CASE_TIMEOUT);

    it('six folders push edits of six sections of one page from one parent at once: all succeed, the page holds every edit', async () => {
      // One member working in six folders (the same token in six homes).
      const owner = await member('owner@example.com');
      const WRITERS = 6;
      const folders: Member[] = [owner];
      for (let i = 1; i < WRITERS; i++) folders.push(await member(owner.email, owner.token));
      await team('many', owner, ...folders.slice(1));
      const sections = Array.from({ length: WRITERS }, (_, i) => `## Part ${i + 1}\nline ${i + 1}\n`);
      const page = `---\ntitle: Many\n---\n${sections.join('\n')}`;
      await owner.write(ADR, page);
      await ok(owner, 'push', '-m', 'many');
      await Promise.all(folders.slice(1).map((u) => ok(u, 'pull')));
      const edited = (i: number) => page.replace(`line ${i + 1}\n`, `line ${i + 1}, edited by writer ${i}\n`);
      await Promise.all(folders.map((u, i) => u.write(ADR, edited(i))));

      const results = await Promise.all(folders.map((u, i) => u.kr('push', '--json', '-m', `edit ${i}`)));
      const answers = results.map((r) => {
        expect(r.code, show(r)).toBe(0);
        return JSON.parse(r.stdout) as { new_head: string; merged: Array<{ path: string; merged_with: string; written: boolean; parts: Array<{ name: string; side: string }> }> };
      });
      let final = page;
      for (let i = 0; i < WRITERS; i++) final = final.replace(`line ${i + 1}\n`, `line ${i + 1}, edited by writer ${i}\n`);
      const onServer = await serverPage('many', ADR);
      expect(onServer.text).toBe(final);
      // One push found the page as it was; every other was merged with the pushes before it.
      expect(answers.filter((a) => a.merged.length === 0)).toHaveLength(1);
      answers.forEach((a, i) => {
        for (const m of a.merged) {
          expect(m).toMatchObject({ path: ADR, written: true });
          expect(m.parts).toContainEqual({ name: `## Part ${i + 1}`, side: 'ours', change: 'modified' });
          expect(m.parts.filter((p) => p.side === 'theirs').length).toBeGreaterThan(0);
        }
      });
      const subjects = await fsckedSubjects('many');
      expect(subjects.slice(0, WRITERS).sort()).toEqual(Array.from({ length: WRITERS }, (_, i) => `edit ${i}`).sort());
      expect(subjects).toHaveLength(WRITERS + 1);
      // Every folder ends level with the server after a pull.
      for (const u of folders) {
        await ok(u, 'pull');
        expect(await u.read(ADR)).toBe(final);
        expect(JSON.parse((await ok(u, 'status', '--json')).stdout)).toMatchObject({ up_to_date: true, pages: [] });
      }
    }, CASE_TIMEOUT);
  });
}
