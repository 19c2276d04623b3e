import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { bindArgs, rowsOf } from './libsql.ts';
import type { SqlArgs, SqlRow } from '../../db/sql.ts';

/**
 * Read queries on worker threads (Node): each thread has its own libSQL connections, one per database file
 * it was asked about (the least recently used closed past `openPerThread`), each opened read-only
 * (`?mode=ro`: it never writes, never makes a missing file, and its close neither checkpoints nor deletes the
 * write-ahead log, which made an open cost 4 ms of CPU instead of 1).
 * A long query (a full-text search over a large repository) then holds a thread, not the event loop: the
 * server keeps answering `/health` and everything else meanwhile. Files are read in WAL mode next to the main
 * thread's writing connection, so a query sees every commit made before it started.
 *
 * A thread runs one query at a time. Queries wait in a queue per file, and the files take turns: a thread
 * that comes free takes the oldest query of the file served longest ago, and no file has more than `perFile`
 * queries running. So the expensive queries of one repository hold at most `perFile` threads, and a query of
 * another repository starts on one of the others, not after them. Threads start when a query has none to run
 * on (none for a server that never searches), up to `threads`, and stop after IDLE_MS without one (each
 * holds some 10 MiB); a thread that dies (a crash of the driver) fails the query it ran, and another is
 * started for the next.
 */

export interface ReadPoolOptions {
  /** Most threads. */
  threads: number;
  /** Most queries of one file running at once (below `threads`, so that other files always find one). */
  perFile: number;
  /** Connections each thread keeps open. */
  openPerThread: number;
  /** Each connection's page cache, in KiB (`PRAGMA cache_size`). */
  cacheKib: number;
  /** How long a thread may stay without a query before it stops (IDLE_MS by default). */
  idleMs?: number;
}

/**
 * The thread's code: plain CommonJS, given as source text so that it runs the same from the TypeScript
 * sources (tests) and from the server bundle (dist/server.cjs), with no file of its own to find. It only
 * runs statements and hands back raw rows; what the values mean is decided on the main thread (rowsOf).
 */
const THREAD_SOURCE = `
'use strict';
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
// This isolate's gc function, for a young collection after closes (see close below). V8 hands it out only
// under --expose-gc: the flag is set for the one call that makes a context (whose global then has gc) and
// cleared again at once, as scripts/server-loader.mjs sets its flags at run time; a process started with
// --expose-gc has it already. The flag is the process's: threads starting together take turns with it
// (workerData.flagTurn, one Int32 shared by every read thread), or one would clear it under another.
const gc = (() => {
  if (typeof globalThis.gc === 'function') return globalThis.gc;
  const turn = workerData.flagTurn;
  while (Atomics.compareExchange(turn, 0, 0, 1) !== 0) Atomics.wait(turn, 0, 1);
  const v8 = require('node:v8');
  try {
    v8.setFlagsFromString('--expose-gc');
    return require('node:vm').runInNewContext('gc');
  } finally {
    v8.setFlagsFromString('--no-expose-gc');
    Atomics.store(turn, 0, 0);
    Atomics.notify(turn, 0, 1);
  }
})();
const open = new Map();
function connection(file, uri) {
  let c = open.get(file);
  if (c) {
    open.delete(file);
    open.set(file, c);
    return c;
  }
  let db;
  try {
    db = new Database(uri, { timeout: workerData.busyMs });
  } catch (e) {
    // A missing file, above all (the driver gives no code for it).
    throw Object.assign(new Error('cannot open ' + file + ': ' + String((e && e.message) || e)), { code: (e && e.code) || 'CANNOT_OPEN' });
  }
  db.exec('PRAGMA cache_size = -' + workerData.cacheKib);
  c = { db };
  open.set(file, c);
  const evicted = [];
  for (const [f, old] of open) {
    if (open.size <= workerData.openPerThread) break;
    open.delete(f);
    evicted.push(old.db);
  }
  // Closed before the query, the collection made after its answer (see close). Not the closes after the answer:
  // the pool may terminate a thread that owes nothing, and the driver aborts the process when a thread is
  // terminated inside one of its calls.
  if (evicted.length > 0) close(evicted);
  return c;
}
// Prepared for one query only: the driver cannot finalize a statement, and a closed connection keeps its
// files open and its memory until every statement made on it is collected, which a statement that dies
// young soon is (a cached one would wait for a full collection: open files piled up by the thousand).
// The page cache goes at once; the rest (some 140 KiB) with the collection made once the query is answered,
// whose finalizers run on the thread's next turn: this thread allocates too little for V8 to collect it often
// on its own (W10: up to 180 closed connections waiting, 20 MiB of this thread's malloc arena). After the
// answer, when the query's statement is garbage too: a young collection made before the query sometimes
// left every closed connection open.
let collect = false;
function close(dbs) {
  for (const db of dbs) {
    try {
      db.exec('PRAGMA shrink_memory');
    } catch {}
    db.close();
  }
  collect = true;
}
function answer(message) {
  parentPort.postMessage(message);
  if (!collect) return;
  collect = false;
  gc({ type: 'minor' });
}
function statement(c, sql) {
  const st = c.db.prepare(sql);
  if (!st.reader) throw Object.assign(new Error('not a read statement'), { code: 'NOT_A_READ' });
  st.safeIntegers(true);
  st.raw(true);
  return { st, columns: st.columns().map((x) => x.name) };
}
parentPort.on('message', (m) => {
  if (m.op === 'forget') {
    const c = open.get(m.file);
    if (c) {
      open.delete(m.file);
      close([c.db]);
    }
    answer({ id: m.id, columns: [], rows: [] });
    return;
  }
  try {
    const { st, columns } = statement(connection(m.file, m.uri), m.sql);
    answer({ id: m.id, columns, rows: st.all(m.args) });
  } catch (e) {
    answer({ id: m.id, error: { message: String((e && e.message) || e), code: e && e.code } });
  }
});
`;

/** Taken by a read thread while it sets V8's --expose-gc for a moment (see THREAD_SOURCE): one per process, as the flag is. */
const FLAG_TURN = new Int32Array(new SharedArrayBuffer(4));

/** How long a read waits for a lock another connection holds (a checkpoint's instant) before SQLITE_BUSY. */
const BUSY_TIMEOUT_MS = 5000;
/** A thread without a query for this long stops (the next query starts one again, in some 50 ms). */
export const IDLE_MS = 30_000;

type Answer = { columns: string[]; rows: unknown[][] };

/** A query waiting for a thread, or running on one. */
interface Job {
  file: string;
  message: Record<string, unknown>;
  resolve(a: Answer): void;
  reject(e: unknown): void;
}

interface Thread {
  worker: Worker;
  /** The query it runs, if any. */
  job: Job | null;
  /** Messages sent to it and not answered yet, by id: its query and any `forget`. */
  replies: Map<number, { resolve(a: Answer): void; reject(e: unknown): void }>;
  /** Stops it once it has been idle for IDLE_MS. */
  idle: ReturnType<typeof setTimeout> | null;
  /** The files it has a connection to, least recently used first (as the thread's own list). */
  files: Map<string, true>;
}

/** An error a read thread reported, with the driver's code (SQLITE_…) when it had one. */
export class ReadError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'ReadError';
  }
}

export class ReadPool {
  private readonly threads: Thread[] = [];
  /** Queries waiting, per file. */
  private readonly waiting = new Map<string, Job[]>();
  /** Queries running, per file. */
  private readonly running = new Map<string, number>();
  /** When each file with queries waiting or running last had one started (a count of starts). */
  private readonly served = new Map<string, number>();
  private starts = 0;
  private nextId = 1;
  private closed = false;
  /** The driver's entry file, resolved from here: from the sources or from the bundle alike. */
  private readonly driver = createRequire(import.meta.url).resolve('libsql');

  constructor(private readonly opts: ReadPoolOptions) {}

  /** Runs one read statement against `file` (an absolute path) on a thread; rows as LibsqlDatabase gives them. */
  async all<T = SqlRow>(file: string, sql: string, args: SqlArgs = []): Promise<T[]> {
    if (this.closed) throw new Error('the read pool is closed');
    // A URI (percent-encoded: any character may be in the path) for the read-only open.
    const message = { op: 'all', file, uri: `${pathToFileURL(file).href}?mode=ro`, sql, args: bindArgs(args) };
    const { columns, rows } = await new Promise<Answer>((resolve, reject) => {
      let queue = this.waiting.get(file);
      if (!queue) this.waiting.set(file, (queue = []));
      queue.push({ file, message, resolve, reject });
      this.dispatch();
    });
    return rowsOf(columns, rows) as T[];
  }

  /** Every thread closes its connection to `file` (before the file is deleted or replaced). */
  async forget(file: string): Promise<void> {
    await Promise.all(
      this.threads.map((t) => {
        t.files.delete(file);
        return this.send(t, { op: 'forget', file });
      }),
    );
  }

  /** Threads running now. */
  get size(): number {
    return this.threads.length;
  }

  /** Stops every thread; queries waiting or running fail. */
  async close(): Promise<void> {
    this.closed = true;
    const closed = new Error('the read pool is closed');
    for (const queue of this.waiting.values()) for (const job of queue) job.reject(closed);
    this.waiting.clear();
    for (const t of this.threads) if (t.idle !== null) clearTimeout(t.idle);
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
    this.threads.length = 0;
  }

  /**
   * Starts waiting queries while a thread is free (or may be started): each time the oldest query of the
   * file served longest ago (one never served first, then in the order they came) among those below `perFile`.
   */
  private dispatch(): void {
    for (;;) {
      let file: string | null = null;
      let turn = Infinity;
      for (const f of this.waiting.keys()) {
        const t = this.served.get(f) ?? 0;
        if (t < turn && (this.running.get(f) ?? 0) < this.opts.perFile) {
          file = f;
          turn = t;
        }
      }
      if (file === null) return;
      // A free thread that has the file open already (no open, and one connection to it instead of several).
      const free = this.threads.filter((t) => t.job === null);
      const thread = free.find((t) => t.files.has(file)) ?? free[0] ?? (this.threads.length < this.opts.threads ? this.start() : null);
      if (!thread) return;
      const queue = this.waiting.get(file)!;
      const job = queue.shift()!;
      if (queue.length === 0) this.waiting.delete(file);
      this.served.set(file, ++this.starts);
      this.run(thread, job);
    }
  }

  private run(thread: Thread, job: Job): void {
    if (thread.idle !== null) clearTimeout(thread.idle);
    thread.idle = null;
    thread.job = job;
    this.running.set(job.file, (this.running.get(job.file) ?? 0) + 1);
    thread.files.delete(job.file);
    thread.files.set(job.file, true);
    for (const f of thread.files.keys()) {
      if (thread.files.size <= this.opts.openPerThread) break;
      thread.files.delete(f);
    }
    const done = () => {
      const n = (this.running.get(job.file) ?? 1) - 1;
      if (n > 0) this.running.set(job.file, n);
      else this.running.delete(job.file);
      if (n <= 0 && !this.waiting.has(job.file)) this.served.delete(job.file);
      if (thread.job === job) thread.job = null;
      this.dispatch();
      if (thread.job === null && this.threads.includes(thread)) {
        thread.idle = setTimeout(() => this.stop(thread), this.opts.idleMs ?? IDLE_MS);
        thread.idle.unref?.();
      }
    };
    this.send(thread, job.message).then(
      (a) => {
        done();
        job.resolve(a);
      },
      (e: unknown) => {
        done();
        job.reject(e);
      },
    );
  }

  private start(): Thread {
    const worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { driver: this.driver, busyMs: BUSY_TIMEOUT_MS, openPerThread: this.opts.openPerThread, cacheKib: this.opts.cacheKib, flagTurn: FLAG_TURN },
    });
    const t: Thread = { worker, job: null, replies: new Map(), idle: null, files: new Map() };
    // An idle thread never keeps the process alive (send refs it while it owes answers).
    worker.unref();
    worker.on('message', (m: { id: number; columns?: string[]; rows?: unknown[][]; error?: { message: string; code?: string } }) => {
      const reply = t.replies.get(m.id);
      if (!reply) return;
      t.replies.delete(m.id);
      if (t.replies.size === 0) worker.unref();
      if (m.error) reply.reject(new ReadError(m.error.message, m.error.code));
      else reply.resolve({ columns: m.columns ?? [], rows: m.rows ?? [] });
    });
    const fail = (e: unknown) => {
      const i = this.threads.indexOf(t);
      if (i >= 0) this.threads.splice(i, 1);
      const err = e instanceof Error ? e : new Error(`read thread stopped (${String(e)})`);
      const replies = [...t.replies.values()];
      t.replies.clear();
      for (const r of replies) r.reject(err);
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`read thread exited with code ${code}`)));
    this.threads.push(t);
    return t;
  }

  /** Stops an idle thread (no longer picked from now on); one still owing an answer stops later. */
  private stop(t: Thread): void {
    t.idle = null;
    if (t.job !== null) return;
    if (t.replies.size > 0) {
      t.idle = setTimeout(() => this.stop(t), this.opts.idleMs ?? IDLE_MS);
      t.idle.unref?.();
      return;
    }
    const i = this.threads.indexOf(t);
    if (i >= 0) this.threads.splice(i, 1);
    void t.worker.terminate();
  }

  private send(t: Thread, message: Record<string, unknown>): Promise<Answer> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      t.replies.set(id, { resolve, reject });
      t.worker.ref();
      t.worker.postMessage({ ...message, id });
    });
  }
}
