/**
 * An export of a repository of a few thousand pages in several packs, on the Node server: the bundle is made
 * on an export thread (lib/runtime/node/export-threads.ts), so the event loop stays free all along — it is
 * busy a small part of the export's time (perf.eventLoopUtilization of this thread, which runs the
 * server), and a setInterval on it never waits long — and the bundle holds every object of the repository
 * (git bundle verify, a clone that fsck accepts, the same object list as the repository's own).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance as perf } from 'node:perf_hooks';
import { gitIn, startTestServer, tempDir, type TestServer } from './helpers/env.ts';

/** Four pushes of 900 pages of about 1.5 KiB: four packs of over 1 MiB each, which are never merged. */
const PUSHES = 4;
const PER_PUSH = 900;
const pageText = (i: number) => {
  let text = `---\ntitle: Page ${i}\n---\n## Notes\n`;
  for (let k = 0; text.length < 1500; k++) text += `${createHash('sha256').update(`${i}:${k}`).digest('hex')} words ${k}\n`;
  return text;
};

let srv: TestServer;
let work: { path: string; cleanup: () => Promise<void> };

beforeAll(async () => {
  srv = await startTestServer();
  work = await tempDir('kr-export-thread-');
  for (let p = 0; p < PUSHES; p++) {
    const files = Array.from({ length: PER_PUSH }, (_, k) => {
      const i = p * PER_PUSH + k;
      return { path: `wiki/area-${i % 5}/page-${String(i).padStart(5, '0')}.md`, content: pageText(i) };
    });
    const r = await srv.api('/v1/repos/many/sync/push', { method: 'POST', json: { files, message: `part ${p}` } });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
  }
  await srv.deps.repos.git.packMerges();
}, 600_000);
afterAll(async () => {
  await srv?.stop();
  await work?.cleanup();
});

describe('an export of a repository of thousands of pages', () => {
  it('leaves the event loop free, and the bundle holds every object', async () => {
    const gitdir = join(srv.dataRoot, 'repos', 'many.git');
    const packs = readdirSync(join(gitdir, 'objects', 'pack')).filter((n) => n.endsWith('.pack'));
    expect(packs.length).toBeGreaterThanOrEqual(PUSHES);

    // A first export starts the thread (from the sources here, through tsx); the one measured finds it running.
    const first = await srv.api('/v1/repos/many/export');
    expect(first.status).toBe(200);
    const firstBytes = new Uint8Array(await first.arrayBuffer());

    // The longest wait of a timer on this thread (the server's) while the export runs.
    let gap = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      gap = Math.max(gap, now - last);
      last = now;
    }, 5);
    const before = perf.eventLoopUtilization();
    let bytes: Uint8Array;
    try {
      const r = await srv.api('/v1/repos/many/export');
      expect(r.status).toBe(200);
      bytes = new Uint8Array(await r.arrayBuffer());
    } finally {
      clearInterval(timer);
    }
    const used = perf.eventLoopUtilization(before);
    console.log(`export of ${PUSHES * PER_PUSH} pages: ${(bytes.byteLength / 2 ** 20).toFixed(1)} MiB, event loop busy ${(used.utilization * 100).toFixed(0)}% of ${used.idle + used.active | 0} ms, longest timer gap ${gap.toFixed(0)} ms`);
    // Made on the event loop (in slices), an export kept it busy nearly all along (over 90% here); on its
    // thread, the loop only passes chunks on.
    expect(used.utilization).toBeLessThan(0.5);
    expect(gap).toBeLessThan(1000);
    expect(srv.deps.exports.size).toBeGreaterThanOrEqual(1);
    expect(Buffer.from(bytes).equals(Buffer.from(firstBytes))).toBe(true);

    const file = join(work.path, 'many.bundle');
    writeFileSync(file, bytes);
    execFileSync('git', ['init', '-q', join(work.path, 'verify')]);
    execFileSync('git', ['bundle', 'verify', '-q', file], { cwd: join(work.path, 'verify'), stdio: 'pipe' });
    execFileSync('git', ['clone', '-q', '--bare', file, join(work.path, 'clone.git')], { stdio: 'pipe' });
    const clone = join(work.path, 'clone.git');
    execFileSync('git', ['--git-dir', clone, 'fsck', '--strict', '--no-dangling'], { stdio: 'pipe' });
    const objects = (dir: string) => gitIn(dir, 'rev-list', '--objects', 'main').trim().split('\n').sort();
    expect(objects(clone)).toEqual(objects(gitdir));
    expect(objects(clone).length).toBeGreaterThan(PUSHES * PER_PUSH);
  }, 300_000);
});
