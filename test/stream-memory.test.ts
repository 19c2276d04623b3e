/**
 * What a streamed export or full pull holds, and that its reads stop when its reader goes away, counted at
 * the store (the real RepoStore and GitStore of a running server, their batch reads counted): the bytes
 * read from the store and not yet handed to the reader stay within about one batch whatever the
 * repository's size, a reader that pauses holds the reads back, and a cancelled stream reads nothing more.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestServer, type TestServer } from './helpers/env.ts';
import { RepoStore, PULL_BYTES } from '../lib/repo/repo-store.ts';
import { BATCH_BYTES, bundleStream, type BundleProgress } from '../lib/git/bundle.ts';
import { CHUNK_BYTES } from '../lib/framework/http/stream.ts';

/** 320 pages of 64 KiB that hardly compress: 20 MiB, ten times a batch of either stream. */
const PAGES = 320;
const PAGE_BYTES = 64 * 1024;
const pageText = (i: number) => {
  let text = `# ${i}\n`;
  for (let k = 0; text.length < PAGE_BYTES; k++) text += `${createHash('sha256').update(`${i}:${k}`).digest('base64')}\n`;
  return text;
};

let srv: TestServer;
let repos: RepoStore;
/** The store's batch reads: calls, and the content bytes each object read had, in the order read. */
const reads = { calls: 0, objects: 0, bytes: 0 };

beforeAll(async () => {
  srv = await startTestServer();
  repos = srv.deps.repos as RepoStore;
  for (let part = 0; part < PAGES / 40; part++) {
    const files = Array.from({ length: 40 }, (_, k) => ({ path: `m/${String(part * 40 + k).padStart(4, '0')}.md`, content: pageText(part * 40 + k) }));
    const r = await srv.api('/v1/repos/mem/sync/push', { method: 'POST', json: { files, message: `part ${part}` } });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
  }
  // Counted where both streams read: a batch of objects (export) or of blobs (pull).
  const git = repos.git;
  const readObjects = git.readObjects.bind(git);
  const readBlobs = git.readBlobs.bind(git);
  git.readObjects = async (id, oids) => {
    const out = await readObjects(id, oids);
    reads.calls++;
    reads.objects += out.length;
    for (const o of out) reads.bytes += o.content.byteLength;
    return out;
  };
  git.readBlobs = async (id, oids) => {
    const out = await readBlobs(id, oids);
    reads.calls++;
    reads.objects += out.length;
    for (const c of out) reads.bytes += c.byteLength;
    return out;
  };
}, 300_000);
afterAll(async () => {
  await srv?.stop();
});

const reset = () => Object.assign(reads, { calls: 0, objects: 0, bytes: 0 });
const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await sleep(5);
};

describe('an export', () => {
  it('holds about one batch of objects whatever the repository size, and waits for a reader that pauses', async () => {
    reset();
    const progress: BundleProgress = { objects: 0, sent: 0 };
    const stream = (await bundleStream(repos.git, 'mem', { progress }))!;
    const reader = stream.getReader();
    let received = 0;
    let ahead = 0;
    let paused = false;
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      received += r.value.byteLength;
      // Bytes read from the store beyond those the reader has (deflate keeps about three quarters of them).
      ahead = Math.max(ahead, reads.bytes - received);
      if (!paused && received > 4 * 1024 * 1024) {
        paused = true;
        const before = { ...reads };
        await turns(20);
        // Nobody read meanwhile: the export read nothing more from the store.
        expect(reads).toEqual(before);
        expect(reads.bytes).toBeLessThan(PAGES * PAGE_BYTES);
      }
    }
    expect(paused).toBe(true);
    expect(progress.sent).toBe(progress.objects);
    expect(reads.objects).toBe(progress.objects);
    expect(reads.bytes).toBeGreaterThan(PAGES * PAGE_BYTES);
    // One batch (BATCH_BYTES, and the object that ends it), the chunk being made and one queued.
    expect(ahead).toBeLessThan(BATCH_BYTES + PAGE_BYTES + 2 * CHUNK_BYTES + PAGES * PAGE_BYTES / 4);
    expect(ahead).toBeLessThan(PAGES * PAGE_BYTES / 2);
  });

  it('reads nothing more once its reader cancels it', async () => {
    reset();
    const progress: BundleProgress = { objects: 0, sent: 0 };
    const stream = (await bundleStream(repos.git, 'mem', { progress }))!;
    const reader = stream.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await turns(10);
    const after = { ...reads };
    await turns(40);
    expect(reads).toEqual(after);
    expect(progress.objects).toBeGreaterThan(PAGES);
    expect(reads.objects).toBeLessThan(progress.objects / 2);
    expect(progress.sent).toBeLessThan(progress.objects / 2);
  });
});

describe('a full pull', () => {
  it('holds about one batch of pages whatever the repository size, and waits for a reader that pauses', async () => {
    reset();
    const { body } = await repos.pullBody('mem');
    const reader = body.getReader();
    let received = 0;
    let ahead = 0;
    let paused = false;
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      received += r.value.byteLength;
      // The JSON of a page is a little longer than its bytes: this undercounts what is held by that much.
      ahead = Math.max(ahead, reads.bytes - received);
      if (!paused && received > 4 * 1024 * 1024) {
        paused = true;
        const before = { ...reads };
        await turns(20);
        expect(reads).toEqual(before);
        expect(reads.bytes).toBeLessThan(PAGES * PAGE_BYTES);
      }
    }
    expect(paused).toBe(true);
    expect(reads.objects).toBe(PAGES);
    expect(received).toBeGreaterThan(PAGES * PAGE_BYTES);
    expect(ahead).toBeLessThan(PULL_BYTES + PAGE_BYTES + 2 * CHUNK_BYTES);
  });

  it('reads nothing more once its reader cancels it', async () => {
    reset();
    const { pages, body } = await repos.pullBody('mem');
    expect(pages).toBe(true);
    const reader = body.getReader();
    expect((await reader.read()).done).toBe(false);
    await reader.cancel();
    await turns(10);
    const after = { ...reads };
    await turns(40);
    expect(reads).toEqual(after);
    expect(reads.objects).toBeLessThan(PAGES / 2);
  });
});
