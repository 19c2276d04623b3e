import { afterEach, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { startTestServer, tempDir, type TestServer } from './helpers/env.ts';

/**
 * A push's link and full-text rows are made right after it is answered (lib/repo/derived-later.ts), not in its
 * transaction. A process killed between the two leaves them behind head: the next server on the same data
 * root does not make them at boot (nothing that grows with the data runs before it listens), but its first
 * search or links request of the repository levels them first, and answers with the push in it.
 */

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Runs test/fixtures/push-then-die.ts on `dataRoot`: the sha it acknowledged, once it died by SIGKILL. */
async function pushThenDie(dataRoot: string): Promise<string> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/push-then-die.ts', dataRoot], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  expect(exit, err).toEqual({ code: null, signal: 'SIGKILL' });
  const sha = /^ACK ([0-9a-f]{40})$/m.exec(out)?.[1];
  expect(sha, out + err).toBeDefined();
  return sha!;
}

/** The link rows of `tide` as the database holds them: sources (path → blob) and links (source → target). */
async function linkRows(dataRoot: string) {
  const db = await openDatabaseFile(join(dataRoot, 'service.db'), Math.floor(Date.now() / 1000));
  try {
    const sources = await db.all<Record<string, unknown>>("SELECT path FROM page_link_sources WHERE repo_id = 'tide' ORDER BY path");
    const links = await db.all<Record<string, unknown>>("SELECT source, target FROM page_links WHERE repo_id = 'tide' ORDER BY source, ord");
    const head = await db.all<Record<string, unknown>>("SELECT path FROM git_head WHERE repo_id = 'tide' ORDER BY path");
    return {
      head: head.map((r) => String(r.path)),
      sources: sources.map((r) => String(r.path)),
      links: links.map((r) => `${String(r.source)} → ${String(r.target)}`),
    };
  } finally {
    await db.close();
  }
}

describe('derived rows cut by a crash', () => {
  it('are behind head after a kill right after the answer, untouched at boot, and made before the next links or search request answers', async () => {
    const dir = await tempDir('kr-derived-restart-');
    cleanup.push(() => dir.cleanup());
    const dataRoot = join(dir.path, 'data');
    const sha = await pushThenDie(dataRoot);
    const pages = ['wiki/concepts/mudflats.md', 'wiki/concepts/tides.md'];
    // The commit and its head rows are durable; the link rows were never made.
    expect(await linkRows(dataRoot)).toEqual({ head: pages, sources: [], links: [] });

    const server: TestServer = await startTestServer({ dataRoot });
    cleanup.push(() => server.stop());
    // Listening, and nothing made at boot.
    expect((await server.api('/health')).status).toBe(200);
    expect((await linkRows(dataRoot)).sources).toEqual([]);

    const links = await server.api('/v1/repos/tide/links/wiki/concepts/mudflats.md');
    expect([links.status, await links.json()]).toEqual([
      200,
      { path: 'wiki/concepts/mudflats.md', outgoing: [], incoming: [{ path: 'wiki/concepts/tides.md', title: 'Tides' }] },
    ]);
    expect(await linkRows(dataRoot)).toEqual({ head: pages, sources: pages, links: ['wiki/concepts/tides.md → mudflats'] });
    const search = await server.api('/v1/repos/tide/search?q=whimbrel');
    const found = (await search.json()) as { results: Array<{ path: string; sha: string }> };
    expect([search.status, found.results.map((r) => [r.path, r.sha])]).toEqual([200, [['wiki/concepts/tides.md', sha]]]);
  });
});
