/**
 * In-process per-key mutex: callers for one key run one at a time, in arrival order. Every holder is
 * known by name (its owner, e.g. a request id) and says what it is doing (its step), so a lock held for
 * too long can be reported with who holds it and where it is; and a waiter gives up after a deadline
 * (LockTimeoutError) instead of queueing for ever behind a holder that does not come back.
 *
 * A holder is never forced out: it may still be writing, and only it knows when its writes are over.
 */

import { LockTimeoutError } from '../core/errors.ts';

/** What a holder reports as it goes, for the lock's diagnostics. */
export interface Progress {
  /** The step the holder is at now (replaces the previous one). */
  step(name: string): void;
  /** Names `p` as in flight until it settles (several may be, e.g. two writes in parallel); returns `p`. */
  track<T>(name: string, p: Promise<T>): Promise<T>;
}

/** A Progress that records nothing. */
export const noProgress: Progress = { step() {}, track: (_name, p) => p };

/** A lock held now, as the watchdog sees it. */
export interface HeldLock {
  key: string;
  /** Who holds it (a request id, or what took it). */
  owner: string;
  /** What it is doing: its step, then what it has in flight. */
  step: string;
  /** When it was taken (the mutex's clock, ms): with key and owner, tells one holding from the next. */
  since: number;
  /** Milliseconds since it was taken, and since its current step began. */
  heldMs: number;
  stepMs: number;
  /** Callers queued behind it. */
  waiting: number;
}


export interface RunOptions {
  /** Who is asking (shown while it holds the lock). Default `anonymous`. */
  owner?: string;
  /** The first step. Default `start`. */
  step?: string;
  /**
   * How long to wait for the lock at most, in ms. A holder that has already held it this long is taken
   * to be stuck, and the call fails at once. Default: the mutex's `waitMs`.
   */
  waitMs?: number;
}

interface Holder extends Progress {
  owner: string;
  /** now() when the lock was granted. */
  since: number;
  /** Marks the lock granted now. */
  granted(now: number): void;
  describe(): { step: string; stepSince: number };
}

interface Waiter {
  holder: Holder;
  grant(): void;
}

interface Slot {
  holder: Holder | null;
  queue: Waiter[];
}

export class KeyedMutex {
  private readonly slots = new Map<string, Slot>();
  private readonly now: () => number;
  private readonly waitMs: number;

  constructor(opts: { now?: () => number; waitMs?: number } = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.waitMs = opts.waitMs ?? Number.POSITIVE_INFINITY;
  }

  async run<T>(key: string, fn: (progress: Progress) => Promise<T>, opts: RunOptions = {}): Promise<T> {
    const me = this.holder(opts.owner ?? 'anonymous', opts.step ?? 'start');
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { holder: null, queue: [] }));
    if (slot.holder === null) this.grant(slot, me);
    else await this.wait(key, slot, me, opts.waitMs ?? this.waitMs);
    try {
      return await fn(me);
    } finally {
      this.release(key, slot);
    }
  }

  /** Every lock held now. */
  held(): HeldLock[] {
    const now = this.now();
    const out: HeldLock[] = [];
    for (const [key, slot] of this.slots) {
      const h = slot.holder;
      if (!h) continue;
      const { step, stepSince } = h.describe();
      out.push({
        key,
        owner: h.owner,
        step,
        since: h.since,
        heldMs: now - h.since,
        stepMs: now - stepSince,
        waiting: slot.queue.length,
      });
    }
    return out;
  }

  private holder(owner: string, first: string): Holder {
    let step = first;
    let stepSince = 0;
    const inFlight = new Map<number, string>();
    let seq = 0;
    const h: Holder = {
      owner,
      since: 0,
      granted: (now) => {
        h.since = now;
        stepSince = now;
      },
      step: (name) => {
        step = name;
        stepSince = this.now();
      },
      track: (name, p) => {
        const id = seq++;
        inFlight.set(id, name);
        const done = () => inFlight.delete(id);
        p.then(done, done);
        return p;
      },
      describe: () => ({
        step: inFlight.size === 0 ? step : `${step}: ${[...new Set(inFlight.values())].join(' + ')}`,
        stepSince,
      }),
    };
    return h;
  }

  private grant(slot: Slot, h: Holder): void {
    slot.holder = h;
    h.granted(this.now());
  }

  private wait(key: string, slot: Slot, me: Holder, waitMs: number): Promise<void> {
    const arrived = this.now();
    const busy = () => {
      const h = slot.holder;
      return h ? { owner: h.owner, step: h.describe().step, heldMs: this.now() - h.since } : null;
    };
    // A holder past the deadline already is stuck: fail now rather than queue behind it.
    if (slot.holder && arrived - slot.holder.since >= waitMs) return Promise.reject(new LockTimeoutError(key, 0, busy()));
    return new Promise<void>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waiter: Waiter = {
        holder: me,
        grant: () => {
          if (timer !== undefined) clearTimeout(timer);
          resolve();
        },
      };
      slot.queue.push(waiter);
      if (Number.isFinite(waitMs)) {
        timer = setTimeout(() => {
          const at = slot.queue.indexOf(waiter);
          if (at < 0) return; // granted meanwhile
          slot.queue.splice(at, 1);
          reject(new LockTimeoutError(key, this.now() - arrived, busy()));
        }, waitMs);
      }
    });
  }

  private release(key: string, slot: Slot): void {
    slot.holder = null;
    const next = slot.queue.shift();
    if (next) {
      this.grant(slot, next.holder);
      next.grant();
    } else if (this.slots.get(key) === slot) {
      this.slots.delete(key);
    }
  }
}
