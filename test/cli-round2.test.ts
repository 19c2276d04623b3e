/**
 * The command-line client as a new user meets it — each item something a new user hit, checked through the real
 * `kr` executable (HOME in a temp dir) against the real server: how to get a token without an identity
 * provider, deleting pages, the body cap, timeouts, reads without a checkout, the folder's own repository,
 * the first commit's diff, one path rule, broken frontmatter, a push whose answer was lost, expired tokens
 * and JSON errors, and the small ones.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { startIdpTestServer, signIn, type IdpTestServer } from './helpers/idp.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';

const LEGACY = 'test-legacy-key';
const page = (title: string, body = '## Notes\nSome notes.\n') => `---\ntitle: ${title}\n---\n${body}`;

let server: TestServer;
let root: { path: string; cleanup: () => Promise<void> };
let n = 0;
const user = async () => krUser(root.path, `v${++n}`);

async function writeJson(file: string, value: unknown, mode = 0o600): Promise<void> {
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, JSON.stringify(value), { mode });
}
const writeCreds = (u: KrUser, url: string, token = LEGACY) => writeJson(join(u.configDir, 'credentials.json'), { server_url: url, token });

/** What `kr init` makes, linked to `repo` (or to nothing). */
async function layout(u: KrUser, repo?: string, dir = u.project): Promise<void> {
  for (const d of ['wiki/concepts', 'wiki/entities', 'wiki/analyses', 'raw/sessions']) await mkdir(join(dir, '.kr', d), { recursive: true });
  await writeFile(join(dir, '.kr', 'state.json'), JSON.stringify({ version: 1, head: '', pages: {}, ...(repo ? { repo } : {}) }));
}

/** A user logged in with the legacy key whose project folder is linked to repository `r<n>`. */
async function legacyUser(srv: TestServer = server): Promise<KrUser & { repo: string }> {
  const u = await user();
  const repo = `r${n}`;
  await writeCreds(u, srv.url);
  await layout(u, repo);
  return Object.assign(u, { repo });
}

async function seed(repo: string, files: Record<string, string>, srv: TestServer = server): Promise<string> {
  const res = await srv.api(`/v1/repos/${repo}/sync/push`, {
    method: 'POST',
    json: { files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { new_head: string }).new_head;
}

async function serverPage(repo: string, path: string, srv: TestServer = server): Promise<{ status: number; text: string; sha: string | null }> {
  const res = await srv.api(`/v1/repos/${repo}/pages/${path}`);
  return { status: res.status, text: await res.text(), sha: res.headers.get('x-page-sha') };
}

const state = async (u: KrUser, dir = u.project) => JSON.parse(await readFile(join(dir, '.kr', 'state.json'), 'utf8'));

beforeAll(async () => {
  server = await startTestServer();
  root = await tempDir('kr-cli-round2-');
});
afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('1. kr login says how to get a token', () => {
  it('without an identity provider: the server admin command, for a checkout and for the container', async () => {
    const u = await user();
    const r = await u.kr('login', '--server', server.url);
    expect(r.code, show(r)).toBe(2);
    const lines = r.stderr.split('\n');
    expect(lines[0]).toBe('error: no token given: pass --token <token>, or --token - to read it from stdin');
    expect(lines).toContain(`${server.url} has no identity provider, so there is no sign-in page: a token comes from the server's operator,`);
    expect(lines).toContain("  npm run admin -- user add <your email>        # in the server's checkout");
    expect(lines).toContain('  npm run admin -- token <your email>           # prints a krp_... token, once');
    expect(lines).toContain('  docker exec <container> node dist/admin.mjs token <your email>');
    expect(lines).toContain(`Then: kr login --server ${server.url} --token krp_...   (or --token - to read it from stdin)`);

    // A token the server does not know: the same explanation after the refusal.
    const bad = await u.kr('login', '--server', server.url, '--token', 'krp_nope');
    expect(bad.code, show(bad)).toBe(1);
    expect(bad.stderr).toContain(`error: login failed: ${server.url} does not accept this token (invalid token: unknown, expired or revoked)\n`);
    expect(bad.stderr).toContain('npm run admin -- token <your email>');
  });

  it('with an identity provider: sign in on the dashboard (the probe is POST /v1/auth/idp with an empty body)', async () => {
    const idp = await startIdpTestServer();
    try {
      const u = await user();
      const r = await u.kr('login', '--server', idp.url);
      expect(r.code, show(r)).toBe(2);
      expect(r.stderr).toContain(`${idp.url} signs people in through its identity provider: sign in on the dashboard to get a token,`);
      expect(r.stderr).not.toContain('has no identity provider');
    } finally {
      await idp.stop();
    }
  });
});

describe('2. deleting pages', () => {
  it('a page deleted locally is deleted on the server by kr push: listed by status and --dry-run, conflict-safe', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/a.md': page('A'), 'wiki/concepts/b.md': page('B'), 'wiki/concepts/c.md': page('C') });
    expect((await u.kr('pull')).code).toBe(0);
    await unlink(join(u.project, '.kr', 'wiki', 'concepts', 'a.md'));

    const st = await u.kr('status', '--json');
    expect(JSON.parse(st.stdout).pages).toEqual([expect.objectContaining({ path: 'wiki/concepts/a.md', status: 'deleted' })]);
    const dry = await u.kr('push', '--dry-run');
    expect(dry.code, show(dry)).toBe(0);
    expect(dry.stdout).toBe('Would push 1 page(s):\n  deleted   wiki/concepts/a.md\n');
    expect((await serverPage(u.repo, 'wiki/concepts/a.md')).status).toBe(200);

    const push = await u.kr('push', '-m', 'drop a');
    expect(push.code, show(push)).toBe(0);
    expect(push.stdout).toMatch(/^Pushed 1 page\(s\) to r\d+ as [0-9a-f]{7}:\n {2}deleted {3}wiki\/concepts\/a\.md\n$/);
    expect((await serverPage(u.repo, 'wiki/concepts/a.md')).status).toBe(404);
    expect((await state(u)).pages).not.toHaveProperty(['wiki/concepts/a.md']);
    expect((await u.kr('status')).stdout).toContain('Up to date');

    // Changed on the server meanwhile: a conflict, nothing deleted.
    await seed(u.repo, { 'wiki/concepts/b.md': page('B', '## Notes\nChanged on the server.\n') });
    await unlink(join(u.project, '.kr', 'wiki', 'concepts', 'b.md'));
    const clash = await u.kr('push');
    expect(clash.code, show(clash)).toBe(1);
    expect(clash.stdout).toContain('conflict  wiki/concepts/b.md: the server has');
    expect(clash.stdout).toContain('you deleted the page, and it changed on the server since. Nothing was deleted.');
    const clashJson = await u.kr('push', '--json');
    expect(clashJson.code).toBe(1);
    expect(JSON.parse(clashJson.stderr)).toMatchObject({ code: 'conflict' });
    expect((await serverPage(u.repo, 'wiki/concepts/b.md')).text).toBe(page('B', '## Notes\nChanged on the server.\n'));
  });

  it('kr rm <slug> deletes the page on the server and the file; a page with unpushed changes needs --force', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/old.md': page('Old'), 'wiki/entities/keep.md': page('Keep') });
    expect((await u.kr('pull')).code).toBe(0);
    const dry = await u.kr('rm', 'old', '--dry-run');
    expect(dry.stdout).toBe('Would delete 1 page(s) on the server and here:\n  deleted   wiki/concepts/old.md\n');

    await u.write('wiki/concepts/old.md', page('Old', '## Notes\nEdited, never pushed.\n'));
    const refusedRm = await u.kr('rm', 'old');
    expect(refusedRm.code, show(refusedRm)).toBe(1);
    expect(refusedRm.stderr).toBe('error: .kr/wiki/concepts/old.md has changes that were never pushed; pass --force to delete it anyway\n');

    const r = await u.kr('rm', 'old', '--force', '-m', 'superseded');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toMatch(/^Deleted 1 page\(s\) from r\d+ as [0-9a-f]{7}:\n {2}deleted {3}wiki\/concepts\/old\.md\n$/);
    await expect(stat(join(u.project, '.kr', 'wiki', 'concepts', 'old.md'))).rejects.toThrow();
    expect((await serverPage(u.repo, 'wiki/concepts/old.md')).status).toBe(404);
    const tl = await server.api(`/v1/repos/${u.repo}/timeline`);
    expect(((await tl.json()) as { commits: Array<{ message: string }> }).commits[0]!.message).toBe('superseded');

    const never = await u.kr('rm', 'nothing-here');
    expect(never.code).toBe(1);
    expect(never.stderr).toContain('no local page "nothing-here"');
  });
});

describe('3. a file over the server body cap', () => {
  it('is named with the limit; the rest goes in as few pushes as fit, each one commit', async () => {
    const small = await startTestServer({ env: { SERVICE_MAX_BODY_BYTES: '20000' } });
    try {
      const u = await legacyUser(small);
      const limits = await small.api('/v1/limits');
      expect(await limits.json()).toEqual({ max_body_bytes: 20000, max_files_per_push: 10000, max_page_path_bytes: 512 });
      await u.write('wiki/concepts/big.md', page('Big', `## Notes\n${'x'.repeat(30_000)}\n`));
      for (let i = 0; i < 5; i++) await u.write(`wiki/concepts/p${i}.md`, page(`P${i}`, `## Notes\n${'y'.repeat(6000)}\n`));

      const dry = await u.kr('push', '--dry-run');
      expect(dry.code, show(dry)).toBe(0);
      expect(dry.stdout).toContain('Would push 5 page(s) in 2 pushes (server limit 19.5 KiB per push):');
      expect(dry.stdout).toMatch(/Would not push wiki\/concepts\/big\.md is 29\.\d KiB as sent, over the server's limit of 19\.5 KiB per push \(max_body_bytes 20000\)\./);

      const r = await u.kr('push', '-m', 'many');
      expect(r.code, show(r)).toBe(1);
      expect(r.stdout).toMatch(/^Pushed 5 page\(s\) to r\d+ in 2 commits \([0-9a-f]{7}, [0-9a-f]{7}\):\n/);
      expect(r.stderr).toMatch(
        /^error: 1 page\(s\) too large to push, not sent \(the rest was pushed\):\n {2}wiki\/concepts\/big\.md is 29\.\d KiB as sent, over the server's limit of 19\.5 KiB per push \(max_body_bytes 20000\)\n$/,
      );
      const tl = (await (await small.api(`/v1/repos/${u.repo}/timeline`)).json()) as { commits: Array<{ message: string; paths: string[] }> };
      expect(tl.commits.map((c) => c.message).sort()).toEqual(['many (part 1 of 2)', 'many (part 2 of 2)']);
      expect(tl.commits.flatMap((c) => c.paths).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `wiki/concepts/p${i}.md`));
      const st = JSON.parse((await u.kr('status', '--json')).stdout);
      expect(st.pages).toEqual([{ path: 'wiki/concepts/big.md', status: 'new' }]);
    } finally {
      await small.stop();
    }
  });
});

describe('4. every request has a time limit', () => {
  let hung: TcpServer;
  let hungUrl = '';
  const sockets = new Set<Socket>();
  beforeAll(async () => {
    // Accepts connections and never answers.
    hung = createTcpServer((s) => {
      sockets.add(s);
      s.on('error', () => {});
    });
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    hungUrl = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => hung.close(() => r()));
  });

  it('a hung server is reported as such (--timeout <seconds>); with --json as {"error","code":"timeout"}', async () => {
    const u = await user();
    await writeCreds(u, hungUrl);
    const started = Date.now();
    const r = await u.kr('--timeout', '1', 'repos');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe(`error: the server at ${hungUrl} did not answer within 1 s\n`);
    expect(Date.now() - started).toBeLessThan(10_000);
    const j = await u.kr('repos', '--json', '--timeout', '0.5');
    expect(j.code).toBe(1);
    expect(j.stderr).toBe(JSON.stringify({ error: `the server at ${hungUrl} did not answer within 0.5 s`, code: 'timeout' }) + '\n');
    const bad = await u.kr('--timeout', 'soon', 'repos');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('error: --timeout must be a number of seconds greater than zero (at most 86400), not "soon"\n');
  });
});

describe('5. read commands without a local checkout, given --repo', () => {
  it('pages, show, history, diff, evolution and log take page paths; slugs ask for the local folder', async () => {
    const u = await user();
    await writeCreds(u, server.url);
    const repo = `r${n}`;
    await seed(repo, { 'wiki/concepts/x.md': page('X') });
    await seed(repo, { 'wiki/concepts/x.md': page('X', '## Notes\nSome notes.\n\n## More\nAdded later.\n') });
    const here = (...args: string[]) => u.krWith({ cwd: u.home }, '--repo', repo, ...args);

    const pages = await here('pages');
    expect(pages.code, show(pages)).toBe(0);
    expect(pages.stdout).toMatch(/^PATH\s+SHA\s+TIME \(UTC\)\s+LAST CHANGED BY\nwiki\/concepts\/x\.md\s+[0-9a-f]{7}\s+\S+Z\s+unknown@service\.local\n$/);
    const shown = await here('show', 'wiki/concepts/x.md');
    expect(shown.code, show(shown)).toBe(0);
    expect(shown.stdout).toBe(page('X', '## Notes\nSome notes.\n\n## More\nAdded later.\n'));
    const hist = await here('history', 'wiki/concepts/x.md', '--json');
    expect(JSON.parse(hist.stdout).commits).toHaveLength(2);
    const d = await here('diff', 'wiki/concepts/x.md');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toMatch(/## More\s+added/);
    const evo = await here('evolution', 'wiki/concepts/x.md');
    expect(evo.code, show(evo)).toBe(0);
    expect(evo.stdout).toMatch(/added\s+## More/);
    const log = await here('log');
    expect(log.code, show(log)).toBe(0);
    expect(log.stdout).toBe('No activity yet.\n'); // the legacy key's actions are never recorded

    const slug = await here('show', 'x');
    expect(slug.code).toBe(1);
    expect(slug.stderr).toBe(
      'error: slugs are looked up in the local .kr/ folder, and there is none here: give the page path instead (e.g. wiki/concepts/x.md; "kr pages" lists them)\n',
    );
    const none = await u.krWith({ cwd: u.home }, 'pages');
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('error: no repository: pass --repo <id>');
  });
});

describe('6. the current repository belongs to the project folder', () => {
  it('each folder has its own; the global config keeps only a default (a global repo is still read)', async () => {
    const u = await user();
    await writeCreds(u, server.url);
    await seed('alpha6', { 'wiki/concepts/a.md': page('A') });
    await seed('beta6', { 'wiki/concepts/b.md': page('B') });
    const alpha = join(u.home, 'alpha');
    const beta = join(u.home, 'beta');
    await mkdir(alpha);
    await mkdir(beta);
    const init = await u.krWith({ cwd: alpha }, 'init', '--repo', 'alpha6');
    expect(init.code, show(init)).toBe(0);
    expect(init.stdout).toContain('This folder (.kr) is now linked to alpha6: commands run in it use alpha6.');
    expect((await u.krWith({ cwd: beta }, 'init', '--repo', 'beta6')).code).toBe(0);
    expect((await u.krWith({ cwd: alpha }, 'pull')).code).toBe(0);
    expect((await u.krWith({ cwd: beta }, 'pull')).code).toBe(0);
    expect(await readFile(join(alpha, '.kr', 'wiki', 'concepts', 'a.md'), 'utf8')).toBe(page('A'));
    expect(await readFile(join(beta, '.kr', 'wiki', 'concepts', 'b.md'), 'utf8')).toBe(page('B'));
    await expect(stat(join(u.configDir, 'config.json'))).rejects.toThrow(); // nothing global was written

    const get = JSON.parse((await u.krWith({ cwd: join(beta, '.kr', 'wiki') }, 'remote', 'get', '--json')).stdout);
    expect(get).toMatchObject({ repo: 'beta6', repo_from: 'project', default_repo: null, project: beta });
    const switchRepo = await u.krWith({ cwd: beta }, 'remote', 'set-repo', 'alpha6');
    expect(switchRepo.code).toBe(1);
    expect(switchRepo.stderr).toContain('is linked to beta6 and has synced with it; a folder keeps its repository.');

    // Migration: a repo in the global config is the default of a folder that has none, and links it.
    await writeJson(join(u.configDir, 'config.json'), { repo: 'alpha6' }, 0o644);
    const old = join(u.home, 'old');
    await mkdir(old);
    await layout(u, undefined, old);
    const pull = await u.krWith({ cwd: old }, 'pull');
    expect(pull.code, show(pull)).toBe(0);
    expect(pull.stdout).toContain('Pulled alpha6 at');
    expect((await state(u, old)).repo).toBe('alpha6');
    // The folders linked before keep theirs.
    expect(JSON.parse((await u.krWith({ cwd: beta }, 'status', '--json')).stdout).repo).toBe('beta6');
  });
});

describe('7. the diff of a page with one commit', () => {
  it('is against the empty page, as evolution’s first entry', async () => {
    const u = await legacyUser();
    const sha = await seed(u.repo, { 'wiki/concepts/solo.md': page('Solo') });
    expect((await u.kr('pull')).code).toBe(0);
    const r = await u.kr('diff', 'solo');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe(
      [
        `wiki/concepts/solo.md  (empty page) → ${sha.slice(0, 7)}`,
        'frontmatter',
        '  + title: "Solo" (new field)',
        '## Notes  added',
        '    + Some notes.',
        '',
      ].join('\n'),
    );
    const j = JSON.parse((await u.kr('diff', 'solo', '--json')).stdout);
    expect(j).toMatchObject({ from_sha: '', to_sha: sha });
    const viaTo = JSON.parse((await u.kr('diff', 'solo', '--to', sha.slice(0, 9), '--json')).stdout);
    expect(viaTo).toEqual(j);
  });
});

describe('8. one path rule: the server’s', () => {
  it('tracks and pushes exactly the paths the server accepts, reports the others and why; kr push <path> takes any tracked path', async () => {
    const u = await legacyUser();
    await u.write('wiki/concepts/CON.md', page('Device'));
    await u.write('wiki/concepts/what?.md', page('Question'));
    await u.write('wiki/concepts/Readme.md', page('Readme'));
    await u.write('wiki/concepts/README.md', page('README'));
    await u.write('notes/extra.md', page('Outside the layout'));
    await u.write('wiki/concepts/fine.md', page('Fine'));
    await u.write('.hidden.md', 'editor junk');

    const st = await u.kr('status');
    expect(st.stdout).toContain('  skipped   wiki/concepts/CON.md: Windows device name: the server refuses this page path\n');
    const r = await u.kr('push');
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toBe(
      [
        '3 file(s) under .kr/ skipped (not sent):',
        '  wiki/concepts/CON.md: Windows device name: the server refuses this page path',
        '  wiki/concepts/Readme.md: differs only in letter case from wiki/concepts/README.md (one file on macOS and Windows)',
        '  wiki/concepts/what?.md: character not allowed on Windows: the server refuses this page path',
        '',
      ].join('\n'),
    );
    expect(r.stdout).toContain('Pushed 3 page(s)');
    const pages = (await (await server.api(`/v1/repos/${u.repo}/pages`)).json()) as { pages: Array<{ path: string }> };
    expect(pages.pages.map((p) => p.path)).toEqual(['notes/extra.md', 'wiki/concepts/README.md', 'wiki/concepts/fine.md']);

    // Named explicitly, a file the server would refuse is still only reported.
    const named = await u.kr('push', '.kr/wiki/concepts/CON.md');
    expect(named.code, show(named)).toBe(0);
    expect(named.stderr).toBe('1 file(s) under .kr/ skipped (not sent):\n  wiki/concepts/CON.md: Windows device name: the server refuses this page path\n');
    expect(named.stdout).toBe('Nothing to push: no new, changed or deleted pages.\n');

    // Any tracked path, inside or outside the layout folders.
    await u.write('notes/extra.md', page('Outside the layout', '## Notes\nEdited.\n'));
    const one = await u.kr('push', 'notes/extra.md');
    expect(one.code, show(one)).toBe(0);
    expect(one.stdout).toMatch(/Pushed 1 page\(s\)[^\n]*\n {2}modified {2}notes\/extra\.md\n/);
    const hist = await u.kr('history', 'notes/extra.md', '--json');
    expect(JSON.parse(hist.stdout).commits).toHaveLength(2);

    // Slugs follow the same rule: CON would be CON.md, which the server refuses.
    const slug = await u.kr('history', 'CON');
    expect(slug.code).toBe(2);
    expect(slug.stderr).toContain('invalid slug: "CON"');
  });
});

describe('9. broken frontmatter', () => {
  it('is pushed, with a warning naming the file and the line', async () => {
    const u = await legacyUser();
    const text = '---\ntitle: Broken\ntitle: Twice\n---\n## Notes\nx\n';
    await u.write('wiki/concepts/broken.md', text);
    const r = await u.kr('push');
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toBe(
      'warning: .kr/wiki/concepts/broken.md:3: the frontmatter does not parse (invalid YAML: Map keys must be unique); ' +
        'the page is pushed as is, but its diffs compare the whole file until the frontmatter is fixed\n',
    );
    expect((await serverPage(u.repo, 'wiki/concepts/broken.md')).text).toBe(text);
  });
});

describe('10. a push whose answer was lost', () => {
  it('kr status checks the server before calling anything a conflict; kr push records it as pushed', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/a.md': page('A'), 'wiki/concepts/b.md': page('B') });
    expect((await u.kr('pull')).code).toBe(0);
    const base = (await state(u)).pages['wiki/concepts/a.md'].sha;
    // The user's push reached the server, but its answer never came back: the server has the new
    // versions, the state still has the old bases.
    const newA = page('A', '## Notes\nEdited by me.\n');
    const newC = page('C');
    await u.write('wiki/concepts/a.md', newA);
    await u.write('wiki/concepts/c.md', newC);
    const res = await server.api(`/v1/repos/${u.repo}/sync/push`, {
      method: 'POST',
      json: { files: [{ path: 'wiki/concepts/a.md', content: newA, parent_sha: base }, { path: 'wiki/concepts/c.md', content: newC }] },
    });
    expect(res.status).toBe(200);

    const st = await u.kr('status');
    expect(st.code, show(st)).toBe(0);
    expect(st.stdout).toContain('  in sync   wiki/concepts/a.md: the server already has your version (a push whose answer was lost); recorded as pushed\n');
    expect(st.stdout).toContain('  in sync   wiki/concepts/c.md:');
    expect(st.stdout).not.toContain('conflict');
    const s = await state(u);
    expect(s.pages['wiki/concepts/a.md'].sha).toBe((await serverPage(u.repo, 'wiki/concepts/a.md')).sha);
    expect((await u.kr('push')).stdout).toBe('Nothing to push: no new, changed or deleted pages.\n');

    // Straight to kr push after a lost answer: the server's copy equals the file, no conflict.
    const newB = page('B', '## Notes\nMine too.\n');
    await u.write('wiki/concepts/b.md', newB);
    const bBase = s.pages['wiki/concepts/b.md'].sha;
    await server.api(`/v1/repos/${u.repo}/sync/push`, { method: 'POST', json: { files: [{ path: 'wiki/concepts/b.md', content: newB, parent_sha: bBase }] } });
    const p = await u.kr('push');
    expect(p.code, show(p)).toBe(0);
    expect(p.stdout).toBe(
      '1 page(s) were already on the server exactly as yours (an earlier push whose answer was lost); recorded as pushed:\n  wiki/concepts/b.md\n',
    );
    expect((await u.kr('status')).stdout).toContain('Up to date');
  });
});

describe('11. expired or revoked tokens; --json errors', () => {
  let idp: IdpTestServer;
  beforeAll(async () => {
    idp = await startIdpTestServer();
  });
  afterAll(async () => {
    await idp?.stop();
  });

  it('a revoked token says what to do; with --json every error is {"error","code"} on stderr', async () => {
    const alice = await signIn(idp, { sub: 'alice-14', email: 'alice@example.com', name: 'Alice' });
    const minted = (await (await idp.api('/v1/pats', { method: 'POST', token: alice.token, json: { label: 'cli' } })).json()) as {
      pat: { id: string };
      token: string;
    };
    const u = await user();
    expect((await u.kr('login', '--server', idp.url, '--token', minted.token)).code).toBe(0);
    expect((await u.kr('repos')).code).toBe(0);
    const del = await idp.api(`/v1/pats/${minted.pat.id}`, { method: 'DELETE', token: alice.token });
    expect(del.status).toBe(204);

    const r = await u.kr('repos');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toBe('error: token expired or revoked; run kr login\n');
    const j = await u.kr('repos', '--json');
    expect(j.code).toBe(1);
    expect(j.stdout).toBe('');
    expect(j.stderr).toBe('{"error":"token expired or revoked; run kr login","code":"token_invalid"}\n');

    // Usage errors too, the client's own and commander's.
    const usage = await u.kr('log', '--limit', 'many', '--json');
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toEqual({ error: '--limit must be an integer greater than zero, not "many"', code: 'usage' });
    const unknown = await u.kr('push', '--bogus', '--json');
    expect(unknown.code).toBe(2);
    expect(JSON.parse(unknown.stderr)).toEqual({ error: "unknown option '--bogus'", code: 'usage' });
    const noProject = await u.krWith({ cwd: u.home }, 'status', '--json');
    expect(JSON.parse(noProject.stderr)).toMatchObject({ code: 'no_project' });
  });
});

describe('12. small ones', () => {
  it('kr login --server host:port assumes http://', async () => {
    const u = await user();
    const hostPort = server.url.replace(/^http:\/\//, '');
    const r = await u.kr('login', '--server', hostPort, '--token', LEGACY);
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain(`Logged in to ${server.url} with the legacy shared key.`);
    expect(JSON.parse(await readFile(join(u.configDir, 'credentials.json'), 'utf8')).server_url).toBe(server.url);
  });

  it('the first pull says added, a later one updated', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/a.md': page('A') });
    const first = await u.kr('pull');
    expect(first.stdout).toMatch(/^Pulled r\d+ at [0-9a-f]{7}: 1 added, 0 updated, 0 deleted\.\n {2}added {4}wiki\/concepts\/a\.md\n$/);
    await seed(u.repo, { 'wiki/concepts/a.md': page('A', '## Notes\nNew.\n') });
    const second = await u.kr('pull');
    expect(second.stdout).toMatch(/: 0 added, 1 updated, 0 deleted\.\n {2}updated {2}wiki\/concepts\/a\.md\n$/);
  });

  it('a new member of a frontmatter list reads as an added list item; the preamble has one name everywhere', async () => {
    const u = await legacyUser();
    const v1 = '---\ntitle: T\ntags: [a, b]\n---\nIntro.\n\n## Notes\nx\n';
    const v2 = '---\ntitle: T\ntags: [a, b, c]\nstatus: draft\n---\nIntro, longer.\n\n## Notes\nx\n';
    await seed(u.repo, { 'wiki/concepts/t.md': v1 });
    await seed(u.repo, { 'wiki/concepts/t.md': v2 });
    expect((await u.kr('pull')).code).toBe(0);
    const d = await u.kr('diff', 't');
    expect(d.code, show(d)).toBe(0);
    expect(d.stdout).toContain('frontmatter\n  ~ tags: added list item "c"\n  + status: "draft" (new field)\n');
    expect(d.stdout).toContain('(preamble)  modified\n');
    const evo = await u.kr('evolution', 't');
    expect(evo.stdout).toContain('    frontmatter tags[+"c"] +status\n');
    expect(evo.stdout).toContain('    modified  (preamble)\n');
    await u.write('wiki/concepts/t.md', v2.replace('Intro, longer.', 'Intro, mine.').replace('[a, b, c]', '[a, c]'));
    const local = await u.kr('diff', 't', '--local');
    expect(local.stdout).toContain('  ~ tags: removed list item "b"\n');
    expect(local.stdout).toContain('(preamble)  modified\n');
    expect(local.stdout).not.toContain('text before the first heading');
  });

  it('bare kr invite lists the invite keys, like kr repos lists repositories', async () => {
    const u = await legacyUser();
    await seed(u.repo, { 'wiki/concepts/a.md': page('A') });
    const r = await u.kr('invite');
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toBe('No invite keys ("kr invite create" mints one).\n');
    expect((await u.kr('invite', '--json')).stdout).toBe('{\n  "keys": []\n}\n');
  });

  it('npm start stops cleanly on SIGTERM sent to npm', async () => {
    const pkgRoot = fileURLToPath(new URL('..', import.meta.url));
    const data = join(root.path, 'npm-start-data');
    const child = spawn('npm', ['start'], {
      cwd: pkgRoot,
      detached: true,
      env: { ...process.env, SERVICE_DATA_ROOT: data, SERVICE_LISTEN_ADDR: '127.0.0.1:0', PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const exited = new Promise<void>((r) => child.on('exit', () => r()));
    try {
      for (let i = 0; i < 300 && !output.includes('"listening"'); i++) await new Promise((r) => setTimeout(r, 100));
      expect(output).toContain('"listening"');
      const url = /"url":"(http:\/\/[^"]+)"/.exec(output)![1]!;
      expect((await fetch(`${url}/health`)).status).toBe(200);
      child.kill('SIGTERM'); // npm alone, as a service manager that signals only its child would
      await exited;
      await new Promise((r) => setTimeout(r, 500));
      // The start script execs the server in place of npm's shell, so npm's SIGTERM reaches it.
      for (let i = 0; i < 100 && (await fetch(`${url}/health`).then(() => true, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await fetch(`${url}/health`).then(() => true, () => false)).toBe(false);
      await new Promise((r) => setTimeout(r, 300));
      expect(output).toContain('"event":"shutdown","signal":"SIGTERM"');
    } finally {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // gone already
      }
      await rm(data, { recursive: true, force: true });
    }
  }, 60_000);
});
