/**
 * The README's way of getting `kr` on the PATH works from a fresh clone: `npm ci` (here:
 * the checkout's node_modules, linked in) then `npm link`, after which `kr` runs from any folder. npm's
 * global folder is a temp dir (NPM_CONFIG_PREFIX), so nothing outside the test's own folders changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { mkdir, readlink, realpath, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { tempDir } from './helpers/env.ts';

const run = promisify(execFile);
const PKG_ROOT = fileURLToPath(new URL('..', import.meta.url));

describe('kr on the PATH (README: npm ci, then npm link)', () => {
  let dir: { path: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('kr-install-');
  });
  afterAll(async () => {
    await dir?.cleanup();
  });

  it('npm link in a fresh clone puts a kr on the PATH that runs from any folder', async () => {
    const clone = join(dir.path, 'clone');
    const prefix = join(dir.path, 'npm-global');
    const elsewhere = join(dir.path, 'some-project');
    await mkdir(prefix, { recursive: true });
    await mkdir(elsewhere, { recursive: true });
    await run('git', ['clone', '--quiet', '--shared', PKG_ROOT, clone]);
    // What `npm ci` would install, without the download.
    await symlink(join(PKG_ROOT, 'node_modules'), join(clone, 'node_modules'));
    const env = {
      ...process.env,
      NPM_CONFIG_PREFIX: prefix,
      NPM_CONFIG_UPDATE_NOTIFIER: 'false',
      NPM_CONFIG_FUND: 'false',
      NPM_CONFIG_AUDIT: 'false',
    };
    await run('npm', ['link', '--offline'], { cwd: clone, env });

    const bin = join(prefix, 'bin', 'kr');
    expect(await realpath(bin)).toBe(await realpath(join(clone, 'cli', 'kr.mjs')));
    expect(await readlink(join(prefix, 'lib', 'node_modules', 'knowledge-repository-service'))).toContain('clone');

    // From a folder outside the checkout, with the linked bin first on the PATH. KR_NO_BUNDLE: the clone's
    // node_modules is the checkout's, whose bundle cache is not this test's to write.
    const krEnv = { PATH: `${join(prefix, 'bin')}:${process.env.PATH}`, HOME: dir.path, KR_NO_BUNDLE: '1' };
    const version = await run('kr', ['--version'], { cwd: elsewhere, env: krEnv });
    expect(version.stdout).toBe('0.1.0\n');
    const remote = await run('kr', ['remote', 'get', '--json'], { cwd: elsewhere, env: krEnv });
    expect(JSON.parse(remote.stdout)).toMatchObject({ server_url: null, project: null, logged_in: false });
  }, 180_000);
});
