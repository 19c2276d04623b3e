/**
 * The dashboard's "Import a repository" form in a real browser: a git bundle file made by git becomes a new
 * repository the user owns, commit for commit; a refusal (an id that is not empty, a file that is no bundle)
 * is shown in the server's words and changes nothing; axe-core finds nothing serious. Screenshot in
 * test-artifacts/dashboard/.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hasChromium, startDashboard, warnIfNoChromium, type DashboardHarness, type SignedUp } from './helpers/dashboard.ts';
import { tempDir } from './helpers/env.ts';

warnIfNoChromium('test/dashboard-import.test.ts');

describe.skipIf(!hasChromium)('importing a repository from the dashboard in chromium', () => {
  let h: DashboardHarness;
  let alice: SignedUp;
  let work: { path: string; cleanup: () => Promise<void> };
  let head = '';

  beforeAll(async () => {
    work = await tempDir('kr-dash-import-');
    const src = join(work.path, 'src');
    mkdirSync(join(src, 'wiki'), { recursive: true });
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=Ada', '-c', 'user.email=ada@example.com', ...args], { cwd: src, encoding: 'utf8' });
    git('init', '-q', '-b', 'main');
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(src, 'wiki', 'a.md'), `---\ntitle: A\n---\nversion ${i}\n`);
      if (i === 1) writeFileSync(join(src, 'README.md'), '# Docs\n');
      git('add', '-A');
      git('commit', '-q', '-m', `version ${i}`);
    }
    git('bundle', 'create', '-q', join(work.path, 'docs.bundle'), 'HEAD', 'main');
    head = git('rev-parse', 'HEAD').trim();
    writeFileSync(join(work.path, 'junk.bundle'), 'not a bundle\n');
    h = await startDashboard();
    alice = await h.signUp('alice', 'Alice');
    await h.signInWithToken(alice.pat);
  }, 120_000);

  afterAll(async () => {
    await h?.close();
    await work?.cleanup();
  });

  const form = () => h.page.getByRole('form', { name: 'Import a repository' });
  const submit = async (id: string, file: string) => {
    await form().getByLabel('Repository id').fill(id);
    await form().getByLabel('Bundle file').setInputFiles(join(work.path, file));
    await form().getByRole('button', { name: 'Import' }).click();
  };

  it('a bundle file becomes a new repository with its whole history; refusals are shown as the server words them', async () => {
    await submit('docs', 'docs.bundle');
    await expect.poll(() => form().getByRole('status').textContent()).toBe('Imported docs: 3 commits, 2 pages.');
    const item = h.page.getByRole('list', { name: 'Repositories' }).getByRole('listitem').filter({ hasText: 'docs' });
    await item.waitFor();
    expect(await item.getByText('owner').count()).toBe(1);
    const timeline = (await (await h.srv.api('/v1/repos/docs/timeline', { token: alice.session })).json()) as { commits: Array<{ sha: string }> };
    expect(timeline.commits[0]!.sha).toBe(head);
    expect(timeline.commits).toHaveLength(3);
    expect(await h.axe()).toEqual([]);
    await h.shot('import-done');

    await submit('docs', 'docs.bundle');
    await expect.poll(() => form().getByRole('alert').textContent()).toBe('Repository is not empty (HTTP 409).');
    await submit('junk', 'junk.bundle');
    await expect.poll(() => form().getByRole('alert').textContent()).toBe('Invalid bundle: not a git bundle (v2 or v3) (HTTP 400).');
    expect((await h.srv.api('/v1/repos/junk/pages')).status).toBe(404);
    expect(await h.axe()).toEqual([]);
    await h.shot('import-refused');
  });
});
