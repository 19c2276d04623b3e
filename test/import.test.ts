import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { importCases, git } from './import-cases.ts';
import { fsck, startTestServer, tempDir, type TestServer } from './helpers/env.ts';

/** Imports of git bundles over HTTP against the Node server (test/import-cases.ts): git's own packs kept on disk. */
importCases('node');

describe('node: a larger import does not hold the event loop', () => {
  let srv: TestServer;
  let work: { path: string; cleanup: () => Promise<void> };
  beforeAll(async () => {
    work = await tempDir('kr-import-big-');
    srv = await startTestServer();
  });
  afterAll(async () => {
    await srv?.stop();
    await work?.cleanup();
  });

  it('2,000 pages over two commits: other requests get turns throughout (the longest gap of a 5 ms timer)', async () => {
    const src = join(work.path, 'src');
    mkdirSync(src, { recursive: true });
    git(src, ['init', '-q', '-b', 'main']);
    for (let c = 0; c < 2; c++) {
      for (let i = 0; i < 2000; i++) {
        const dir = join(src, 'wiki', `d${i % 30}`);
        mkdirSync(dir, { recursive: true });
        writeFileSync(join(dir, `p${i}.md`), `---\ntitle: Page ${i}\n---\n## Body\n${`word${i} version ${c} [[p${(i + 1) % 2000}]]\n`.repeat(20)}`);
      }
      git(src, ['add', '-A']);
      git(src, ['commit', '-q', '-m', `round ${c}`], { GIT_AUTHOR_DATE: `${1_767_000_000 + c} +0000`, GIT_COMMITTER_DATE: `${1_767_000_000 + c} +0000` });
    }
    git(src, ['bundle', 'create', '-q', join(work.path, 'big.bundle'), 'main']);
    const bundle = new Uint8Array(readFileSync(join(work.path, 'big.bundle')));
    let last = performance.now();
    let longest = 0;
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 5);
    try {
      const r = await srv.api('/v1/repos/big/import', { method: 'POST', body: bundle, headers: { 'content-type': 'application/x-git-bundle' } });
      expect({ status: r.status, body: await r.json() }).toEqual({
        status: 201,
        body: { id: 'big', head: git(src, ['rev-parse', 'HEAD']).trim(), commits: 2, pages: 2000 },
      });
    } finally {
      clearInterval(timer);
    }
    // Generous: the machine is shared, and the bound is about seconds (the whole import), not milliseconds.
    expect(longest).toBeLessThan(1500);
    fsck(join(srv.dataRoot, 'repos', 'big.git'));
    const search = (await (await srv.api('/v1/repos/big/search?q=word1999')).json()) as { total: number };
    expect(search.total).toBe(1);
  });
});
