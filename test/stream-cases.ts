/**
 * Streamed answers over HTTP, once for both builds (test/stream.test.ts: the Node server;
 * test/stream-workers.test.ts: the hosted build in workerd, where the repository's Durable Object streams
 * them to the Worker): a full pull and a pull since are exactly the JSON of the whole answer, an export is
 * a bundle git verifies and clones, a client that goes away stops the server's work (its `stream_cancelled`
 * line says how little was made; checked on Node, see the case), and `/health` is answered all along while
 * a big export, pull or push runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from './helpers/env.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';

/** Pages of the big repository: more than one batch of a pull (1,024) and of an export's reads. */
export const PAGES = 2_600;

const pagePath = (i: number) => `area-${i % 7}/page-${String(i).padStart(5, '0')}.md`;
/** A page's text: different for every page and push, some of it not ASCII. */
const pageText = (i: number, round: number) => `---\ntitle: Page ${i}\n---\n## One\nround ${round} é ${'x'.repeat(i % 300)}\n"quoted" \\ ${i}\n`;

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });

/** The JSON log lines of `t` whose event is `event`. */
function logLines(t: Target, event: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of t.logs) {
    const at = line.indexOf('{');
    if (at < 0 || !line.includes(event)) continue;
    try {
      const parsed = JSON.parse(line.slice(at)) as Record<string, unknown>;
      if (parsed.event === event) out.push(parsed);
    } catch {
      // Not a JSON line.
    }
  }
  return out;
}

/**
 * Polls `GET /health` on its own every few milliseconds while `big` runs: how many polls were answered
 * after `big` started and before it ended, and how many were still unanswered when it ended.
 */
async function healthDuring(t: Target, big: () => Promise<void>): Promise<{ during: number; late: number }> {
  let running = true;
  let during = 0;
  let late = 0;
  const poll = (async () => {
    while (running) {
      const r = await fetch(`${t.url}/health`);
      await r.arrayBuffer();
      expect(r.status).toBe(200);
      if (running) during++;
      else late++;
      await sleep(2);
    }
  })();
  try {
    await big();
  } finally {
    running = false;
  }
  await poll;
  return { during, late };
}

export function streamCases(kind: TargetKind): void {
  describe(`streamed pulls and exports (${kind})`, () => {
    let t: Target;
    let work: { path: string; cleanup: () => Promise<void> };
    /** What a full pull must answer, as the server should serialise it. */
    const pages = new Map<string, { content: string; sha: string }>();
    let firstHead = '';
    let head = '';

    const push = async (files: unknown[], message: string): Promise<string> => {
      const r = await t.api('/v1/repos/big/sync/push', { method: 'POST', json: { files, message } });
      expect(r.status).toBe(200);
      return ((await r.json()) as { new_head: string }).new_head;
    };

    beforeAll(async () => {
      t = await startTarget(kind);
      work = await tempDir('kr-stream-');
      // Two pushes of the whole set, then one changing a few pages and deleting two.
      for (let round = 0; round < 2; round++) {
        const half = PAGES / 2;
        for (let part = 0; part < 2; part++) {
          const files = Array.from({ length: half }, (_, k) => {
            const i = part * half + k;
            return { path: pagePath(i), content: pageText(i, round) };
          });
          const sha = await push(files, `round ${round} part ${part}`);
          for (const f of files) pages.set(f.path, { content: f.content, sha });
          head = sha;
        }
      }
      firstHead = head;
      const changed = [3, 1500, 2599].map((i) => ({ path: pagePath(i), content: pageText(i, 9) }));
      head = await push([...changed, { path: pagePath(10), delete: true }, { path: pagePath(2000), delete: true }], 'some');
      for (const f of changed) pages.set(f.path, { content: f.content, sha: head });
      pages.delete(pagePath(10));
      pages.delete(pagePath(2000));
    }, 600_000);
    afterAll(async () => {
      await t?.stop();
      await work?.cleanup();
    });

    it('a full pull is exactly the JSON of the whole answer, in path order', async () => {
      const r = await t.api('/v1/repos/big/sync/pull');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json');
      const paths = [...pages.keys()].sort();
      const expected = {
        new_head: head,
        files: paths.map((path) => ({ path, content: pages.get(path)!.content, sha: pages.get(path)!.sha })),
        deleted: [],
      };
      expect(await r.text()).toBe(JSON.stringify(expected));
    });

    it('a pull since is exactly the changed pages, then the deleted ones', async () => {
      const r = await t.api(`/v1/repos/big/sync/pull?since=${firstHead}`);
      expect(r.status).toBe(200);
      const changed = [3, 1500, 2599].map((i) => pagePath(i)).sort();
      const expected = {
        new_head: head,
        files: changed.map((path) => ({ path, content: pages.get(path)!.content, sha: head })),
        deleted: [pagePath(10), pagePath(2000)].sort(),
      };
      expect(await r.text()).toBe(JSON.stringify(expected));
    });

    it('an unknown since is refused before anything is streamed', async () => {
      const r = await t.api(`/v1/repos/big/sync/pull?since=${'e'.repeat(40)}`);
      expect({ status: r.status, body: await r.json() }).toEqual({ status: 400, body: { error: `unknown sha: ${'e'.repeat(40)}`, code: 'unknown_sha' } });
    });

    it('an export is a bundle whose pack checksum holds, and git clones every page at head', async () => {
      const r = await t.api('/v1/repos/big/export');
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/x-git-bundle');
      const bytes = new Uint8Array(await r.arrayBuffer());
      const header = `# v2 git bundle\n${head} HEAD\n${head} refs/heads/main\n\n`;
      expect(new TextDecoder().decode(bytes.subarray(0, header.length))).toBe(header);
      const pack = bytes.subarray(header.length);
      expect(new TextDecoder().decode(pack.subarray(0, 4))).toBe('PACK');
      const sum = createHash('sha1').update(pack.subarray(0, pack.length - 20)).digest();
      expect(Buffer.from(pack.subarray(pack.length - 20)).equals(sum)).toBe(true);
      const file = join(work.path, 'big.bundle');
      writeFileSync(file, bytes);
      git(work.path, 'clone', '-q', file, 'clone');
      const clone = join(work.path, 'clone');
      git(clone, 'fsck', '--strict', '--no-dangling');
      expect(git(clone, 'rev-parse', 'HEAD').trim()).toBe(head);
      expect(git(clone, 'rev-list', '--count', 'HEAD').trim()).toBe('5');
      const files = git(clone, 'ls-files').trim().split('\n');
      expect(files).toEqual([...pages.keys()].sort());
      for (const path of [pagePath(0), pagePath(3), pagePath(1500), pagePath(2599)]) {
        expect(readFileSync(join(clone, path), 'utf8')).toBe(pages.get(path)!.content);
      }
    }, 120_000);

    describe('a client that goes away', () => {
      /** Big pages that do not compress: far more than the socket buffers between client and server hold. */
      const HUGE_PAGES = 320;
      const hugeText = (i: number) => {
        const bytes = createHash('sha256').update(String(i)).digest();
        let text = `# ${i}\n`;
        for (let k = 0; text.length < 64 * 1024; k++) text += createHash('sha256').update(bytes).update(String(k)).digest('base64') + '\n';
        return text;
      };
      beforeAll(async () => {
        for (let part = 0; part < HUGE_PAGES / 40; part++) {
          const files = Array.from({ length: 40 }, (_, k) => ({ path: `huge/${part * 40 + k}.md`, content: hugeText(part * 40 + k) }));
          const r = await t.api('/v1/repos/huge/sync/push', { method: 'POST', json: { files, message: `part ${part}` } });
          expect(r.status).toBe(200);
          await r.arrayBuffer();
        }
      }, 600_000);

      for (const what of ['export', 'pull'] as const) {
        it(`stops a ${what}: the server made a fraction of it`, async () => {
          const ac = new AbortController();
          // Plain fetch: the target's client reads a copy of every body whole, to check it against the OpenAPI document.
          const r = await fetch(`${t.url}${what === 'export' ? '/v1/repos/huge/export' : '/v1/repos/huge/sync/pull'}`, {
            signal: ac.signal,
            headers: { authorization: `Bearer ${LEGACY_KEY}` },
          });
          expect(r.status).toBe(200);
          const reader = r.body!.getReader();
          const first = await reader.read();
          expect(first.done).toBe(false);
          ac.abort();
          await reader.cancel().catch(() => undefined);
          // On the hosted build under Miniflare, the cancellation reaches the Durable Object's stream only
          // sometimes (workerd notices a dropped reader at the origin's next write, which flow control can
          // hold back indefinitely): there the case checks only that the server goes on answering.
          if (kind === 'node') {
            let line: Record<string, unknown> | undefined;
            for (let i = 0; i < 600 && !line; i++) {
              line = logLines(t, 'stream_cancelled').find((l) => l.what === what && l.repo === 'huge');
              if (!line) await sleep(50);
            }
            expect(line).toBeDefined();
            if (what === 'export') {
              // Every reachable object was listed (8 commits, their trees, 320 blobs); few were sent.
              expect(line!.objects).toBeGreaterThan(HUGE_PAGES);
              expect(line!.sent).toBeLessThan(HUGE_PAGES / 2);
            } else {
              expect(line!.pages).toBeLessThan(HUGE_PAGES / 2);
            }
          }
          expect(logLines(t, 'stream_failed')).toEqual([]);
          // The server goes on answering, and the next export is whole.
          const again = await t.api('/v1/repos/huge/export');
          expect(again.status).toBe(200);
          expect((await again.arrayBuffer()).byteLength).toBeGreaterThan(HUGE_PAGES * 48 * 1024);
        }, 120_000);
      }
    });

    it('/health is answered all along while an export, a full pull and a big push run', async () => {
      const exported = await healthDuring(t, async () => {
        const r = await t.api('/v1/repos/big/export');
        expect(r.status).toBe(200);
        await r.arrayBuffer();
      });
      const pulled = await healthDuring(t, async () => {
        const r = await t.api('/v1/repos/big/sync/pull');
        expect(r.status).toBe(200);
        await r.arrayBuffer();
      });
      const pushed = await healthDuring(t, async () => {
        const files = Array.from({ length: PAGES }, (_, i) => ({ path: `more/${pagePath(i)}`, content: pageText(i, 5) }));
        await push(files, 'more pages');
      });
      // Polls were answered while each big request ran (an event loop held for the whole request answers at
      // most the one poll sent before it, and that one only at the end); every poll but the one in flight at
      // the end was answered while it ran. How many rounds fit depends on the machine's speed, not asserted.
      for (const seen of [exported, pulled, pushed]) {
        expect(seen.during).toBeGreaterThanOrEqual(2);
        expect(seen.late).toBeLessThanOrEqual(1);
      }
    }, 300_000);
  });
}
