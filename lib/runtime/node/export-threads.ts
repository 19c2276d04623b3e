import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { errorFromWire, type WireError } from '../../core/errors.ts';
import type { BundleProgress } from '../../git/bundle.ts';
import type { StreamEnd, StreamWatch } from '../../framework/http/stream.ts';
import type { FromThread, ToThread } from './export-thread.ts';

/**
 * Exports on worker threads (Node). An export reads, inflates, deflates and hashes every object of the
 * repository, and makes garbage as it goes: on the event loop, in slices, that still held it for hundreds of
 * milliseconds at a time on a busy machine (a 100,000-page export: `/health` p99 114 ms, worst 690 ms, the
 * long holds mostly the collector's and the deflating). On a thread of its own
 * (export-thread.ts) the event loop only passes its 64 KiB chunks on, each when the client's connection
 * asks for the next (the thread makes nothing ahead of that but the chunk it is on), and the thread's
 * collector pauses no one else.
 *
 * At most `threads` exports run at once (each on its thread); more wait for one to come free. A thread is
 * started on first need and stops after IDLE_MS without an export (a thread holds some 10–20 MiB). The
 * thread runs the same code as the server: from the bundle (dist/server.cjs, whose `exportThread` it calls)
 * or, from the sources (tests, `node --import tsx server.ts`), export-thread.ts through tsx.
 */

/** How long a thread with no export stays (ms). */
export const IDLE_MS = 10_000;

interface Thread {
  worker: Worker;
  /** Set while an export runs on it: where its messages go. */
  onMessage: ((m: FromThread) => void) | null;
  /** What a crash of the thread fails. */
  onExit: ((e: Error) => void) | null;
  idle: ReturnType<typeof setTimeout> | null;
  dead: boolean;
}

/** A request without its `seq`. */
type AskOf<T> = T extends unknown ? Omit<T, 'seq'> : never;

/** The code that starts the thread: the bundle's `exportThread`, or export-thread.ts through tsx. */
function bootstrap(): string {
  const self = fileURLToPath(import.meta.url);
  if (self.endsWith('.cjs')) return `require(${JSON.stringify(self)}).exportThread();`;
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx/esm/api').replace(/index\.cjs$/, 'index.mjs')).href;
  const entry = new URL('./export-thread.ts', import.meta.url).href;
  return `import(${JSON.stringify(tsx)}).then((t) => { t.register(); return import(${JSON.stringify(entry)}); }).then((m) => m.exportThread());`;
}

export class ExportThreads {
  private readonly free: Thread[] = [];
  private readonly waiting: Array<(t: Thread) => void> = [];
  private readonly all = new Set<Thread>();
  private closed = false;
  /** The last request's number (answers carry it). */
  private seq = 0;

  constructor(
    private readonly opts: { root: string; cacheBytes: number; threads: number; idleMs?: number },
  ) {}

  /** Threads running now (busy or idle). */
  get size(): number {
    return this.all.size;
  }

  /**
   * The repository's bundle as a stream made on a thread as it is read, or null when it has no commit; throws
   * as GitStore.head does (RepoNotFoundError). `onEnd` hears how the stream ended, with the thread's progress.
   */
  async bundle(id: string, opts: { onEnd?: StreamWatch } = {}): Promise<ReadableStream<Uint8Array> | null> {
    const thread = await this.take();
    let progress: BundleProgress = { objects: 0, sent: 0 };
    let next: { seq: number; resolve: (m: FromThread) => void; reject: (e: Error) => void } | null = null;
    thread.onMessage = (m) => {
      // An answer to a request no longer waited for (a chunk asked for before a cancel) is dropped.
      if (!next || m.seq !== next.seq) return;
      if ('progress' in m) progress = m.progress;
      const n = next;
      next = null;
      n.resolve(m);
    };
    thread.onExit = (e) => {
      const n = next;
      next = null;
      n?.reject(e);
    };
    const ask = (m: AskOf<ToThread>) =>
      new Promise<FromThread>((resolve, reject) => {
        if (thread.dead) return reject(new Error('export thread exited'));
        const seq = ++this.seq;
        next = { seq, resolve, reject };
        thread.worker.postMessage({ ...m, seq });
      });
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      thread.onMessage = null;
      thread.onExit = null;
      this.give(thread);
    };
    const failure = (m: Extract<FromThread, { type: 'error' }>) => (m.error ? errorFromWire(m.error as WireError) : new Error(m.message));
    let started: FromThread;
    try {
      started = await ask({ type: 'start', root: this.opts.root, id, cacheBytes: this.opts.cacheBytes });
    } catch (e) {
      release();
      throw e;
    }
    if (started.type === 'error') {
      release();
      throw failure(started);
    }
    if (started.type !== 'started' || started.empty) {
      release();
      return null;
    }
    let sent = 0;
    let ended = false;
    const end = (outcome: StreamEnd['outcome'], error?: unknown) => {
      if (ended) return;
      ended = true;
      const report: StreamEnd = { outcome, bytes: sent, detail: { objects: progress.objects, sent: progress.sent } };
      if (error !== undefined) report.error = error;
      opts.onEnd?.(report);
    };
    return new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          let m: FromThread;
          try {
            m = await ask({ type: 'more' });
          } catch (e) {
            end('failed', e);
            controller.error(e);
            return;
          }
          if (m.type === 'chunk') {
            const chunk = new Uint8Array(m.bytes);
            sent += chunk.byteLength;
            controller.enqueue(chunk);
          } else if (m.type === 'done') {
            release();
            controller.close();
            end('done');
          } else {
            const e = m.type === 'error' ? failure(m) : new Error(`export thread answered ${m.type}`);
            release();
            end('failed', e);
            controller.error(e);
          }
        },
        async cancel() {
          end('cancelled');
          if (released) return;
          // The thread stops its stream (its reads end) and is free again.
          await ask({ type: 'cancel' }).catch(() => undefined);
          release();
        },
      },
      { highWaterMark: 0 },
    );
  }

  /** Stops every thread (the server closes). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.all].map((t) => this.stop(t)));
  }

  private async take(): Promise<Thread> {
    if (this.closed) throw new Error('export threads closed');
    const idle = this.free.pop();
    if (idle) {
      if (idle.idle) clearTimeout(idle.idle);
      idle.idle = null;
      return idle;
    }
    if (this.all.size < this.opts.threads) return this.start();
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  private give(t: Thread): void {
    if (t.dead) return;
    const w = this.waiting.shift();
    if (w) return w(t);
    this.free.push(t);
    t.idle = setTimeout(() => void this.stop(t), this.opts.idleMs ?? IDLE_MS);
    t.idle.unref();
  }

  private start(): Thread {
    const worker = new Worker(bootstrap(), { eval: true, workerData: { krExportThread: true } });
    // An idle thread does not keep the process alive.
    worker.unref();
    const t: Thread = { worker, onMessage: null, onExit: null, idle: null, dead: false };
    this.all.add(t);
    worker.on('message', (m: FromThread) => t.onMessage?.(m));
    const gone = (e: Error) => {
      if (t.dead) return;
      t.dead = true;
      this.all.delete(t);
      const i = this.free.indexOf(t);
      if (i >= 0) this.free.splice(i, 1);
      if (t.idle) clearTimeout(t.idle);
      t.onExit?.(e);
      // A waiter gets a new thread in its place.
      const w = this.waiting.shift();
      if (w && !this.closed) w(this.start());
    };
    worker.on('error', (e) => gone(e));
    worker.on('exit', (code) => gone(new Error(`export thread exited (${code})`)));
    return t;
  }

  private async stop(t: Thread): Promise<void> {
    if (t.idle) clearTimeout(t.idle);
    t.idle = null;
    const i = this.free.indexOf(t);
    if (i >= 0) this.free.splice(i, 1);
    await t.worker.terminate().catch(() => undefined);
  }
}
