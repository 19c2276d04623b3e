import { parentPort, workerData } from 'node:worker_threads';
import { bundleStream, type BundleProgress } from '../../git/bundle.ts';
import { GitStore } from '../../git/store.ts';
import { errorToWire } from '../../core/errors.ts';
import { nodeStoreFs } from './store-fs.ts';

/**
 * The export thread's side (lib/runtime/node/export-threads.ts has the server's): it makes a repository's
 * bundle (lib/git/bundle.ts, the same code the Workers build runs in its Durable Object) from the files on
 * disk, with a git store of its own, and hands it over a chunk at a time, each when the server asks for it:
 * the walk over the trees, the reads, inflating, deflating and hashing, and the garbage they make, are this
 * thread's work, not the event loop's. One export at a time.
 *
 * Messages from the server: `start` (a repository: its bundle's head is answered, or null for a repository
 * without a commit, or the error), `more` (the next chunk: `chunk`, or `done`, or `error`), `cancel` (the
 * client went away: the stream is cancelled, `cancelled` answered).
 */

/** A request to the thread; its answer carries the same `seq` (an answer to an earlier request is told apart). */
export type ToThread = { seq: number } & ({ type: 'start'; root: string; id: string; cacheBytes: number } | { type: 'more' } | { type: 'cancel' });

export type FromThread = { seq: number } & (
  | { type: 'started'; empty: boolean }
  | { type: 'chunk'; bytes: ArrayBuffer; progress: BundleProgress }
  | { type: 'done'; progress: BundleProgress }
  | { type: 'cancelled' }
  | { type: 'error'; error: { code: string; message: string; fields: Record<string, unknown> } | null; message: string; progress: BundleProgress }
);

/** A FromThread message without its `seq`. */
type Answer = FromThread extends infer T ? (T extends unknown ? Omit<T, 'seq'> : never) : never;

/** Runs the thread's loop; called by the thread's bootstrap (export-threads.ts) in the export thread. */
export function exportThread(): void {
  const port = parentPort;
  if (!port || !(workerData as { krExportThread?: boolean } | null)?.krExportThread) throw new Error('exportThread runs in an export thread');
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  let progress: BundleProgress = { objects: 0, sent: 0 };
  port.on('message', (m: ToThread) => {
    const send = (a: Answer, transfer: ArrayBuffer[] = []) => port.postMessage({ ...a, seq: m.seq }, transfer);
    const fail = (e: unknown) => {
      reader = null;
      send({ type: 'error', error: errorToWire(e), message: e instanceof Error ? `${e.name}: ${e.message}` : String(e), progress: { ...progress } });
    };
    void (async () => {
      try {
        if (m.type === 'start') {
          progress = { objects: 0, sent: 0 };
          // A store of its own per export: nothing it remembers (repositories seen, packs listed) outlives it.
          const store = new GitStore({ fs: nodeStoreFs(), root: m.root, cacheBytes: m.cacheBytes });
          const stream = await bundleStream(store, m.id, { progress });
          reader = stream ? stream.getReader() : null;
          send({ type: 'started', empty: stream === null });
        } else if (m.type === 'more') {
          if (!reader) throw new Error('no export under way');
          const { done, value } = await reader.read();
          if (done) {
            reader = null;
            send({ type: 'done', progress: { ...progress } });
            return;
          }
          // Handed over whole (transferred, not copied): a chunk that is a view into a larger buffer is copied first.
          const own = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value : value.slice();
          send({ type: 'chunk', bytes: own.buffer as ArrayBuffer, progress: { ...progress } }, [own.buffer as ArrayBuffer]);
        } else if (m.type === 'cancel') {
          const r = reader;
          reader = null;
          await r?.cancel().catch(() => undefined);
          send({ type: 'cancelled' });
        }
      } catch (e) {
        fail(e);
      }
    })();
  });
}
