import type { GitStore } from '../git/store.ts';
import { nextBatch } from '../git/bundle.ts';
import { checkCancelled } from '../framework/http/stream.ts';
import type { PathIndex } from './path-index.ts';
import type { PulledPage, PullPages } from './types.ts';

/**
 * Pages one batch of a pull holds at most, … (a batch's index query and the inflating of its blobs run on
 * this thread in one go: tens of milliseconds at 1,024 small pages.) Each batch looks its blobs up in the
 * packs' indexes: fewer, larger batches read each index page fewer times when the indexes outgrow the cache.
 */
export const PULL_BATCH = 4_096;
/** … and the bytes of page content it aims at: the next batch is sized from the last one's pages. */
export const PULL_BYTES = 2 * 1024 * 1024;

/**
 * A pull fixed at the head when it begins, read a batch at a time: with no `since`, every page at that
 * head; otherwise the pages changed after `since` up to it, and the pages deleted meanwhile
 * (UnknownShaError when `since` does not resolve, before anything is read). Each batch is the index's rows
 * as of that head (PathIndex.pullBatch, so a push landing meanwhile changes nothing in the answer), then
 * their blobs in pack order (GitStore.readBlobs); batches hold about PULL_BYTES of pages, PULL_BATCH at
 * most. The first batch with a page is read here. The caller has levelled the index with git.
 */
export async function pullPages(git: GitStore, index: PathIndex, id: string, since?: string): Promise<PullPages> {
  const head = await index.headCommit(id);
  const sinceSeq = since === undefined ? undefined : (await index.resolve(id, since)).seq;
  const atSeq = head?.seq ?? 0;
  // Sized as an export's reads are (bundle.ts nextBatch), from 16 pages, but going straight to the size
  // the first batch's pages call for (a full pull of small pages is then two batches' index lookups).
  let size = 16;
  let after: string | null = '';
  const next = async (): Promise<PulledPage[]> => {
    const b = await index.pullBatch(id, atSeq, after!, size, sinceSeq);
    after = b.last;
    const contents = await git.readBlobs(id, b.present.map((e) => e.blob));
    const bytes = contents.reduce((n, c) => n + c.byteLength, 0);
    // At the mean size of the pages read (a batch since a commit holds deleted paths too).
    if (b.present.length > 0) size = nextBatch(size, (bytes * size) / b.present.length, PULL_BATCH, PULL_BYTES, PULL_BATCH);
    return b.present.map((entry, i) => ({ entry, content: contents[i]! }));
  };
  let first: PulledPage[] = [];
  while (head && first.length === 0 && after !== null) first = await next();
  return {
    head,
    first,
    async *rest(signal) {
      while (after !== null) {
        if (signal) checkCancelled(signal);
        const batch = await next();
        if (batch.length > 0) yield batch;
      }
    },
    async *deleted(signal) {
      if (sinceSeq === undefined || !head) return;
      for (let from: string | null = ''; from !== null; ) {
        if (signal) checkCancelled(signal);
        const b = await index.pullBatch(id, atSeq, from, PULL_BATCH, sinceSeq);
        from = b.last;
        if (b.deleted.length > 0) yield b.deleted;
      }
    },
  };
}
