/**
 * The command-line client reads `.kr/` only inside `.kr/` and only regular files: a page
 * file that is a symbolic link (to a secret outside, or to another page), a folder linked out of `.kr/`, or
 * a FIFO is refused with a clear message and exit 1 by `kr diff --local`, `kr status` and `kr push` —
 * never shown, diffed or sent. Through the real `kr` executable against the real server (legacy key).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';
import { krUser, show, type KrUser } from './helpers/cli.ts';

const LEGACY = 'test-legacy-key';
const SECRET = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-not-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n';
const page = (title: string) => `---\ntitle: ${title}\n---\n## Notes\nSome notes.\n`;

let server: TestServer;
let root: { path: string; cleanup: () => Promise<void> };
let n = 0;

/**
 * A user logged in with the legacy key on repository `links<n>` (which has one page, so that the server
 * answers every read), `kr init` done, and a secret file in HOME.
 */
async function user(): Promise<KrUser & { repo: string; secret: string }> {
  const u = await krUser(root.path, `u${++n}`);
  const repo = `links${n}`;
  const seeded = await server.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files: [{ path: 'wiki/concepts/seed.md', content: page('Seed') }] } });
  expect(seeded.status).toBe(200);
  for (const args of [['login', '--server', server.url, '--token', LEGACY], ['init', '--repo', repo, '--no-mcp']]) {
    const r = await u.kr(...args);
    expect(r.code, show(r)).toBe(0);
  }
  const secret = join(u.home, '.ssh', 'id_rsa');
  await mkdir(join(u.home, '.ssh'), { recursive: true });
  await writeFile(secret, SECRET);
  return Object.assign(u, { repo, secret });
}

/** No output of the command shows the secret. */
const leaks = (r: { stdout: string; stderr: string }): boolean => r.stdout.includes('OPENSSH') || r.stderr.includes('OPENSSH');

beforeAll(async () => {
  server = await startTestServer();
  root = await tempDir('kr-cli-links-');
});
afterAll(async () => {
  await server?.stop();
  await root?.cleanup();
});

describe('kr reads .kr/ only inside .kr/ and only regular files', () => {
  it('kr diff --local refuses a page file that is a symbolic link to a file outside', async () => {
    const u = await user();
    await symlink(u.secret, join(u.project, '.kr', 'wiki', 'concepts', 'x.md'));
    const r = await u.kr('diff', '--local', 'wiki/concepts/x.md');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('refusing to read .kr/wiki/concepts/x.md');
    expect(r.stderr).toContain('is a symbolic link (kr reads only regular files under .kr/)');
    expect(leaks(r), show(r)).toBe(false);
  });

  it('kr diff --local refuses a page under a folder linked out of .kr/', async () => {
    const u = await user();
    const outside = join(u.home, 'elsewhere');
    await mkdir(outside);
    await writeFile(join(outside, 'keys.md'), SECRET);
    await rm(join(u.project, '.kr', 'wiki', 'entities'), { recursive: true });
    await symlink(outside, join(u.project, '.kr', 'wiki', 'entities'));
    const r = await u.kr('diff', '--local', 'wiki/entities/keys.md');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('refusing to read .kr/wiki/entities/keys.md');
    expect(r.stderr).toContain('is a symbolic link leading out of .kr/');
    expect(leaks(r), show(r)).toBe(false);
  });

  it('a link to another page inside .kr/ is refused as well (kr reads regular files only)', async () => {
    const u = await user();
    await u.write('wiki/concepts/real.md', page('Real'));
    await symlink(join(u.project, '.kr', 'wiki', 'concepts', 'real.md'), join(u.project, '.kr', 'wiki', 'concepts', 'alias.md'));
    const r = await u.kr('diff', '--local', 'wiki/concepts/alias.md');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('refusing to read .kr/wiki/concepts/alias.md');
    expect(r.stderr).toContain('is a symbolic link');
  });

  it('kr diff --local refuses a FIFO instead of hanging on it', async () => {
    const u = await user();
    execFileSync('mkfifo', [join(u.project, '.kr', 'wiki', 'concepts', 'pipe.md')]);
    const r = await u.kr('diff', '--local', 'wiki/concepts/pipe.md');
    expect(r.code, show(r)).toBe(1);
    expect(r.stderr).toContain('refusing to read .kr/wiki/concepts/pipe.md: not a regular file');
  });

  it('a pushed page later replaced by a link: kr status and kr push refuse it, and nothing reaches the server', async () => {
    const u = await user();
    await u.write('wiki/concepts/notes.md', page('Notes'));
    const p = await u.kr('push', '-m', 'notes');
    expect(p.code, show(p)).toBe(0);
    const file = join(u.project, '.kr', 'wiki', 'concepts', 'notes.md');
    await rm(file);
    await symlink(u.secret, file);

    const st = await u.kr('status');
    expect(st.code, show(st)).toBe(1);
    expect(st.stderr).toContain('refusing to read .kr/wiki/concepts/notes.md');
    expect(leaks(st), show(st)).toBe(false);

    const push = await u.kr('push', '-m', 'leak');
    expect(push.code, show(push)).toBe(1);
    expect(push.stderr).toContain('refusing to read .kr/wiki/concepts/notes.md');
    const onServer = await server.api(`/v1/repos/${u.repo}/pages/wiki/concepts/notes.md`);
    expect(onServer.status).toBe(200);
    expect(await onServer.text()).toBe(page('Notes'));
    const history = (await (await server.api(`/v1/repos/${u.repo}/history/wiki/concepts/notes.md`)).json()) as { commits: unknown[] };
    expect(history.commits).toHaveLength(1);
    // The link itself is left alone.
    expect(await readFile(file, 'utf8')).toBe(SECRET);
  });
});
