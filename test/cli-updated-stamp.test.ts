/**
 * The `updated` stamp in a section merge in `kr push` (client/updated-stamp.ts): two project folders edit
 * different sections of one page from the same base, each stamping frontmatter `updated` with its own time.
 * The second push's merge conflicts on `frontmatter.updated` alone; kr pushes that page once more with the
 * server's `updated`, so both pushes succeed, the page holds both sections and keeps the first push's
 * `updated`. Anything else (another key on both sides, a value that is no timestamp) stays a conflict. The
 * repository is checked with `git fsck --strict`. And the text rewrite itself, case by case.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { mintSession } from '../lib/auth/session.ts';
import { fsck, startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';
import { onlyUpdatedConflicts, takeTheirUpdated } from '../client/updated-stamp.ts';

const REPO = 'stamps';
const PAGE = 'wiki/concepts/plan.md';
const CASE_TIMEOUT = 300_000;

const page = (updated: string, decision = 'Use git.', consequences = 'History for free.', extra = '') =>
  `---\ntitle: Plan\ntype: concept\n${extra}updated: ${updated}\n---\n\n## Context\nWe need a store.\n\n## Decision\n${decision}\n\n## Consequences\n${consequences}\n`;

describe('takeTheirUpdated', () => {
  const ours = page('2026-05-17T10:00:02.000Z', 'Ours.');
  const theirs = page('2026-05-17T10:00:01.000Z', 'Use git.', 'Theirs.');

  it('puts the server\'s `updated` line into ours, nothing else changed', () => {
    expect(takeTheirUpdated(ours, theirs)).toEqual({ text: page('2026-05-17T10:00:01.000Z', 'Ours.'), ours: '2026-05-17T10:00:02.000Z', theirs: '2026-05-17T10:00:01.000Z' });
    // Dates alone, and CRLF line ends kept as they are.
    const crlf = (s: string) => s.replace(/\n/g, '\r\n');
    expect(takeTheirUpdated(crlf(page('2026-05-18', 'Ours.')), page('2026-05-17'))?.text).toBe(crlf(page('2026-05-17', 'Ours.')));
  });

  it('refuses what is not a timestamp on both sides, or a page without exactly one `updated` line', () => {
    expect(takeTheirUpdated(page('yesterday', 'Ours.'), theirs)).toBeNull();
    expect(takeTheirUpdated(ours, page('2026-13-45T99:00:00Z'))).toBeNull();
    expect(takeTheirUpdated(ours, page('[1, 2]'))).toBeNull();
    expect(takeTheirUpdated('## No frontmatter\n', theirs)).toBeNull();
    expect(takeTheirUpdated(ours.replace('title: Plan\n', 'title: Plan\nupdated: 2026-05-17\n'), theirs)).toBeNull();
  });

  it('names only a conflict on frontmatter.updated alone', () => {
    expect(onlyUpdatedConflicts(['frontmatter.updated'])).toBe(true);
    expect(onlyUpdatedConflicts(['frontmatter.updated', 'frontmatter.title'])).toBe(false);
    expect(onlyUpdatedConflicts(['## Decision'])).toBe(false);
    expect(onlyUpdatedConflicts(undefined)).toBe(false);
  });
});

describe('kr push: both folders stamped `updated`', () => {
  let srv: TestServer;
  let root: { path: string; cleanup: () => Promise<void> };
  let n = 0;
  let token = '';

  beforeAll(async () => {
    srv = await startTestServer();
    root = await tempDir('kr-stamp-');
    const { user } = await srv.deps.users.upsert({ issuer: 'https://stamp.invalid', subject: 'alice', email: 'alice@example.com', name: 'alice' });
    token = await mintSession(srv.deps.config.sessionSecret, srv.deps.clock, { id: user.id, email: user.email });
    expect((await srv.api('/v1/repos', { method: 'POST', token, json: { id: REPO } })).status).toBe(201);
  }, CASE_TIMEOUT);
  afterAll(async () => {
    await srv?.stop();
    await root?.cleanup();
  });

  const ok = async (u: KrUser, ...args: string[]) => {
    const r = await u.kr(...args);
    expect(r.code, `kr ${args.join(' ')}\n${show(r)}`).toBe(0);
    return r;
  };
  /** A folder linked to the repository, pulled. */
  const folder = async (): Promise<KrUser> => {
    const u = await krUser(root.path, `f${++n}`);
    await ok(u, 'login', '--server', srv.url, '--token', token);
    await ok(u, 'init', '--repo', REPO, '--no-mcp');
    await ok(u, 'pull');
    return u;
  };
  const serverPage = async (): Promise<string> => {
    const r = await srv.api(`/v1/repos/${REPO}/pages/${PAGE}`);
    expect(r.status).toBe(200);
    return r.text();
  };

  it(
    'different sections from one base: both pushes succeed, the page holds both and the first push\'s `updated`',
    async () => {
      const a = await folder();
      await a.write(PAGE, page('2026-05-17T09:00:00.000Z'));
      await ok(a, 'push', '-m', 'plan');
      const b = await folder();
      expect(await b.read(PAGE)).toBe(page('2026-05-17T09:00:00.000Z'));

      await a.write(PAGE, page('2026-05-17T10:00:01.000Z', 'Use git, one repository per project.'));
      await b.write(PAGE, page('2026-05-17T10:00:02.000Z', 'Use git.', 'History for free; backups are clones.'));
      await ok(a, 'push', '-m', 'decision');
      const r = await ok(b, 'push', '-m', 'consequences', '--json');
      const out = JSON.parse(r.stdout) as { conflicts: unknown[]; merged: Array<Record<string, unknown>> };
      expect(out.conflicts).toEqual([]);
      expect(out.merged).toMatchObject([{ path: PAGE, written: true, updated_kept: '2026-05-17T10:00:01.000Z' }]);

      const both = page('2026-05-17T10:00:01.000Z', 'Use git, one repository per project.', 'History for free; backups are clones.');
      expect(await serverPage()).toBe(both);
      expect(await b.read(PAGE)).toBe(both);
      expect(JSON.parse((await ok(b, 'status', '--json')).stdout)).toMatchObject({ up_to_date: true, pages: [] });

      // The text output says what happened to `updated`.
      await ok(a, 'pull');
      await a.write(PAGE, page('2026-05-17T11:00:01.000Z', 'Use git, one bare repository per project.', 'History for free; backups are clones.'));
      await b.write(PAGE, page('2026-05-17T11:00:02.000Z', 'Use git, one repository per project.', 'History and backups for free.'));
      await ok(a, 'push', '-m', 'decision 2');
      const text = await ok(b, 'push', '-m', 'consequences 2');
      expect(text.stdout).toContain(
        '    frontmatter "updated" was stamped here (2026-05-17T11:00:02.000Z) and on the server (2026-05-17T11:00:01.000Z) at once: pushed again with the server\'s value, which the page keeps',
      );
      expect(await serverPage()).toBe(page('2026-05-17T11:00:01.000Z', 'Use git, one bare repository per project.', 'History and backups for free.'));
      fsck(join(srv.dataRoot, 'repos', `${REPO}.git`));
    },
    CASE_TIMEOUT,
  );

  it(
    'another key changed on both sides too: still a conflict, nothing pushed again',
    async () => {
      const a = await folder();
      const b = await folder();
      const base = await a.read(PAGE);
      await a.write(PAGE, base.replace(/updated: .*/, 'updated: 2026-05-17T12:00:01.000Z').replace('title: Plan', 'title: Plan A'));
      await b.write(PAGE, base.replace(/updated: .*/, 'updated: 2026-05-17T12:00:02.000Z').replace('title: Plan', 'title: Plan B'));
      await ok(a, 'push', '-m', 'title a');
      const r = await b.kr('push', '-m', 'title b', '--json');
      expect(r.code, show(r)).toBe(1);
      const out = JSON.parse(r.stdout) as { conflicts: Array<{ path: string; conflicting: string[] }> };
      expect(out.conflicts).toMatchObject([{ path: PAGE, conflicting: ['frontmatter.title', 'frontmatter.updated'] }]);
      expect(await serverPage()).toContain('title: Plan A');
      fsck(join(srv.dataRoot, 'repos', `${REPO}.git`));
    },
    CASE_TIMEOUT,
  );
});
