/**
 * A push of the most files allowed (10,000) succeeds on a server process whose file
 * descriptor limit is 256 — object writes run with bounded concurrency, so no EMFILE and no 500 whatever
 * the file count — and leaves a repository that plain git accepts. (Before the fix every object of the push
 * was opened at once: this push answered 500 with `EMFILE: too many open files` in the log.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fsck, gitIn, tempDir } from '../helpers/env.ts';
import { call, logProblems, spawnServer, type ServerProc } from '../reliability/helpers/server-process.ts';

const FILES = 10_000;
const FD_LIMIT = 256;

let dir: { path: string; cleanup: () => Promise<void> };
let srv: ServerProc;

beforeAll(async () => {
  dir = await tempDir('kr-files-');
  srv = await spawnServer({ dataRoot: dir.path });
  execFileSync('prlimit', ['--pid', String(srv.pid), `--nofile=${FD_LIMIT}:${FD_LIMIT}`]);
  const limits = execFileSync('prlimit', ['--pid', String(srv.pid), '--nofile', '--noheadings', '--output=SOFT']).toString();
  expect(Number(limits.trim())).toBe(FD_LIMIT);
});
afterAll(async () => {
  await srv?.stop();
  await dir?.cleanup();
});

const files = (version: string) =>
  Array.from({ length: FILES }, (_, i) => ({
    path: `wiki/concepts/d${i % 100}/page-${i}.md`,
    content: `---\ntitle: page ${i}\n---\n## Body\n${version} ${i}\n`,
  }));

describe('a 10,000-file push under a 256-descriptor limit', () => {
  it('creates the repository with every page in one commit, twice over, and git accepts it', async () => {
    for (const version of ['first', 'second']) {
      const res = await call(srv.url, '/v1/repos/bulk/sync/push', { method: 'POST', json: { message: version, files: files(version) } });
      const body = (await res.json()) as { pushed: Array<{ path: string; sha: string }>; conflicts: unknown[]; new_head: string };
      expect(res.status).toBe(200);
      expect(body.conflicts).toEqual([]);
      expect(body.pushed).toHaveLength(FILES);
      expect(new Set(body.pushed.map((p) => p.sha))).toEqual(new Set([body.new_head]));
    }
    const gitdir = join(dir.path, 'repos', 'bulk.git');
    fsck(gitdir);
    expect(gitIn(gitdir, 'rev-list', '--count', 'main').trim()).toBe('2');
    expect(gitIn(gitdir, 'ls-tree', '-r', '--name-only', 'main').trim().split('\n')).toHaveLength(FILES);
    expect(gitIn(gitdir, 'show', 'main:wiki/concepts/d7/page-4207.md')).toBe('---\ntitle: page 4207\n---\n## Body\nsecond 4207\n');
    expect(logProblems(srv.events())).toEqual([]);
    // No temporary object file is left behind.
    expect(execFileSync('find', [join(gitdir, 'objects'), '-name', 'tmp_obj_*']).toString()).toBe('');
  });
});
