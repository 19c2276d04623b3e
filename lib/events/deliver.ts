import type { Clock } from '../util/clock.ts';
import type { Logger } from '../framework/log.ts';
import { signPayload } from '../hosted/signature.ts';
import type { DueDelivery, DueWebhook, WebhookStore } from './webhook-store.ts';

/**
 * Webhook delivery (docs/api.md "Webhooks"): each pending delivery due is POSTed, signed, to its webhook, and the
 * attempt recorded — delivered on a 2xx; otherwise tried again on the retry schedule (SERVICE_WEBHOOK_RETRY_MS;
 * by default about 10 s, 1 min, 10 min, 1 h and 6 h after the first attempt), then `failed`. At least once: a delivery is marked
 * only after its attempt, so a crash in between sends it again after the restart.
 *
 * The sending is the runtime's (WebhookSender: Node, lib/runtime/node/webhook-sender.ts; Workers,
 * lib/runtime/workers/webhook-sender.ts), and so is when `run` is called: on Node a timer in the server process
 * (DeliveryLoop), on Workers the repository's Durable Object alarm.
 */

/** A receiver has this long to answer (docs/api.md: 10 s; SERVICE_WEBHOOK_TIMEOUT_MS may lower it). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Attempts under way at once by default (the Node server's, across all repositories). */
export const SENDS_IN_FLIGHT = 8;
/**
 * Deliveries still held this long after they were written lost their release (a crash between the push's
 * publication and the release): they are released under the repository's lock (RepoStore.releaseHeld).
 */
const HELD_GRACE_S = 30;
/** How often, at most, the deliverer looks for deliveries whose release was lost. */
const HELD_CHECK_MS = 5_000;
/** How long `drain` starts new attempts (a Durable Object's alarm has a bounded wall time). */
const DRAIN_BUDGET_MS = 300_000;
/** Fairness entries kept before those of webhooks with nothing due are forgotten. */
const MAX_FAIRNESS_ENTRIES = 10_000;

/** One POST to a webhook. */
export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: Uint8Array<ArrayBuffer>;
}

/** What came of it: the receiver's status, or why there was none (refused address, timeout, network). */
export type WebhookResult = { status: number } | { error: string };

export type WebhookSender = (req: WebhookRequest) => Promise<WebhookResult>;

export interface DelivererOptions {
  store: WebhookStore;
  send: WebhookSender;
  clock: Clock;
  logger: Logger;
  /** Makes a repository's held deliveries due, under its lock, once its index is level with git. */
  releaseHeld(repoId: string): Promise<void>;
  /** When a failed delivery is tried again, ms after its first attempt (config.webhookRetryMs). */
  retryMs: readonly number[];
  /** Attempts under way at once, never more than one per webhook (default SENDS_IN_FLIGHT). */
  slots?: number;
}

const encoder = new TextEncoder();

/** The body a webhook receives: the event's data, plus `event` and `delivery_id`. */
export function deliveryBody(d: Pick<DueDelivery, 'id' | 'event' | 'data'>): string {
  const data = JSON.parse(d.data) as Record<string, unknown>;
  return JSON.stringify({ ...data, event: d.event, delivery_id: d.id });
}

/**
 * Sends due deliveries, fairly: each webhook has at most one attempt under way, and a free slot goes to the
 * webhook of the repository whose last attempt started longest ago (then, within it, the webhook whose last
 * attempt started longest ago; then the earliest due). Every attempt that ends frees its slot for the next
 * due delivery at once, so no attempt waits for another, and receivers that never answer hold at most one
 * slot each: another repository's delivery waits at most until the first slot frees (one timeout).
 */
export class Deliverer {
  /** The attempt under way of each webhook that has one. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** When each repository (`r:<id>`) and webhook (`w:<id>`) last had an attempt started: a turn number. */
  private readonly started = new Map<string, number>();
  private turn = 0;
  private readonly slots: number;
  private filling: Promise<number | null> | null = null;
  private fillAgain = false;
  /**
   * The first look for held deliveries releases all of them whatever their age: none can belong to a push of
   * this instance still under way, so all were held by an earlier one that stopped (a restart, a crash).
   */
  private firstLook = true;
  private heldCheckedAt = 0;
  private halted = false;
  /** Told, after each fill, when the next delivery not yet started falls due (null: an attempt's end will look). */
  wake: ((atMs: number | null) => void) | null = null;

  constructor(private readonly opts: DelivererOptions) {
    this.slots = Math.max(1, opts.slots ?? SENDS_IN_FLIGHT);
  }

  /** Takes no new delivery from now on (the server is stopping) and waits for the attempts under way. */
  async halt(): Promise<void> {
    this.halted = true;
    await this.filling;
    await Promise.all(this.inFlight.values());
  }

  /**
   * Starts due deliveries in the free slots. One fill at a time: a call during one makes it look again when
   * it is done. Resolves with when the next delivery not yet started falls due (clock ms), or null when none
   * waits or every slot is taken (the end of an attempt looks again).
   */
  pump(): Promise<number | null> {
    if (this.filling) {
      this.fillAgain = true;
      return this.filling;
    }
    const filling = (async () => {
      let next: number | null = null;
      do {
        this.fillAgain = false;
        try {
          next = await this.fill();
        } catch (e) {
          // The database failed: looked at again shortly.
          if (!this.halted) this.opts.logger.warn('webhook_deliveries', { error: String(e) });
          next = this.opts.clock.now() + 5_000;
        }
      } while (this.fillAgain && !this.halted);
      return this.halted ? null : next;
    })();
    this.filling = filling;
    void filling.then((next) => {
      this.filling = null;
      this.wake?.(next);
    });
    return filling;
  }

  /**
   * Sends until nothing is due and no attempt is under way (the Workers build's alarm), starting new attempts
   * for at most `budgetMs`: past it, returns the current time with attempts still under way (the next alarm
   * waits for them). Returns when the next pending delivery falls due, or null when none waits.
   */
  async drain(budgetMs = DRAIN_BUDGET_MS): Promise<number | null> {
    const { clock } = this.opts;
    const until = clock.now() + budgetMs;
    let next = await this.pump();
    while (this.inFlight.size > 0 && !this.halted) {
      if (clock.now() >= until) return clock.now();
      await Promise.race(this.inFlight.values());
      next = await this.pump();
    }
    return next;
  }

  /** One fill: held deliveries whose release was lost, then as many due deliveries as there are free slots. */
  private async fill(): Promise<number | null> {
    const { store, clock } = this.opts;
    if (this.halted) return null;
    await this.releaseLost();
    const now = clock.now();
    // Every webhook with a pending delivery, and when its earliest falls due; those under way wait for the end
    // of their attempt.
    const queues = (await store.queues()).filter((q) => !this.inFlight.has(q.webhookId));
    const waiting = queues.filter((q) => q.dueMs <= now);
    if (this.started.size > MAX_FAIRNESS_ENTRIES) this.forget(waiting);
    while (waiting.length > 0 && this.inFlight.size < this.slots && !this.halted) {
      const [hook] = waiting.splice(this.fairest(waiting), 1);
      const d = await store.nextOf(hook!.webhookId, now);
      if (d && !this.inFlight.has(d.webhookId) && !this.halted) this.start(d);
    }
    // Every slot taken: the end of an attempt looks again. Otherwise the next of a webhook not under way.
    if (this.inFlight.size >= this.slots) return null;
    let next: number | null = null;
    for (const q of queues) if (!this.inFlight.has(q.webhookId) && q.dueMs > now && (next === null || q.dueMs < next)) next = q.dueMs;
    return next;
  }

  /** The index of the webhook whose turn it is (see the class). */
  private fairest(waiting: readonly DueWebhook[]): number {
    let best = 0;
    let bestKey: [number, number, number] | null = null;
    waiting.forEach((w, i) => {
      const key: [number, number, number] = [this.started.get(`r:${w.repoId}`) ?? 0, this.started.get(`w:${w.webhookId}`) ?? 0, w.dueMs];
      if (bestKey === null || key[0] < bestKey[0] || (key[0] === bestKey[0] && (key[1] < bestKey[1] || (key[1] === bestKey[1] && key[2] < bestKey[2])))) {
        best = i;
        bestKey = key;
      }
    });
    return best;
  }

  /** Keeps the turns of the webhooks (and their repositories) that wait or are under way, forgets the rest. */
  private forget(waiting: readonly DueWebhook[]): void {
    const keep = new Map<string, number>();
    const hold = (key: string) => {
      const turn = this.started.get(key);
      if (turn !== undefined) keep.set(key, turn);
    };
    for (const w of waiting) {
      hold(`r:${w.repoId}`);
      hold(`w:${w.webhookId}`);
    }
    for (const id of this.inFlight.keys()) hold(`w:${id}`);
    this.started.clear();
    for (const [k, v] of keep) this.started.set(k, v);
  }

  private start(d: DueDelivery): void {
    this.turn++;
    this.started.set(`r:${d.repoId}`, this.turn);
    this.started.set(`w:${d.webhookId}`, this.turn);
    const attempt = this.attempt(d).finally(() => {
      this.inFlight.delete(d.webhookId);
      // The freed slot goes to the next due delivery at once.
      if (!this.halted) void this.pump();
    });
    this.inFlight.set(d.webhookId, attempt);
  }

  /** Releases the deliveries whose release was lost (every HELD_CHECK_MS at most). */
  private async releaseLost(): Promise<void> {
    const { store, clock } = this.opts;
    const now = clock.now();
    if (!this.firstLook && now - this.heldCheckedAt < HELD_CHECK_MS) return;
    const grace = this.firstLook ? -1 : HELD_GRACE_S;
    this.firstLook = false;
    this.heldCheckedAt = now;
    for (const repo of await store.heldRepos(Math.floor(now / 1000) - grace)) {
      try {
        await this.opts.releaseHeld(repo);
      } catch (e) {
        this.opts.logger.warn('webhook_release', { repo, error: String(e) });
      }
    }
  }

  /** One attempt of one delivery, recorded. */
  private async attempt(d: DueDelivery): Promise<void> {
    const { clock, store } = this.opts;
    try {
      const started = clock.now();
      const body = encoder.encode(deliveryBody(d));
      const t = Math.floor(started / 1000);
      let result: WebhookResult;
      try {
        result = await this.opts.send({
          url: d.url,
          body,
          headers: {
            'Content-Type': 'application/json',
            'User-Agent': 'kr-webhooks/1',
            'X-KR-Event': d.event,
            'X-KR-Delivery': d.id,
            'X-KR-Signature': `t=${t},v1=${await signPayload(d.secret, t, body)}`,
          },
        });
      } catch (e) {
        result = { error: e instanceof Error ? e.message : String(e) };
      }
      const attempts = d.attempts + 1;
      const firstAttemptMs = d.firstAttemptMs ?? started;
      const ok = 'status' in result && result.status >= 200 && result.status < 300;
      const lastStatus = 'status' in result ? result.status : null;
      const lastError = ok
        ? null
        : 'error' in result
          ? result.error.slice(0, 500)
          : result.status >= 300 && result.status < 400
            ? `HTTP ${result.status} (redirects are not followed)`
            : `HTTP ${result.status}`;
      const retry = this.opts.retryMs[attempts - 1];
      await store.record(d, {
        status: ok ? 'delivered' : retry === undefined ? 'failed' : 'pending',
        attempts,
        lastStatus,
        lastError,
        firstAttemptMs,
        nextAttemptMs: ok || retry === undefined ? null : firstAttemptMs + retry,
      });
      if (!ok) this.opts.logger.warn('webhook_failed', { delivery: d.id, webhook: d.webhookId, attempts, error: lastError });
    } catch (e) {
      // Not recorded (the database failed): the delivery stays due and is tried again.
      this.opts.logger.warn('webhook_delivery', { delivery: d.id, error: String(e) });
    }
  }
}

/**
 * Runs a Deliverer in a long-lived process (the Node server): at `start` (deliveries left pending by the last
 * run), whenever `kick`ed (an event queued deliveries), at the end of every attempt (the Deliverer itself),
 * and on a timer when the next pending delivery falls due.
 */
export class DeliveryLoop {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  constructor(
    private readonly deliverer: Deliverer,
    private readonly clock: Clock,
  ) {
    deliverer.wake = (at) => this.wakeAt(at);
  }

  kick(): void {
    if (this.stopped) return;
    void this.deliverer.pump();
  }

  /** Stops taking work and waits for the attempts under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.clear();
    await this.deliverer.halt();
  }

  private clear(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private wakeAt(ms: number | null): void {
    this.clear();
    if (this.stopped || ms === null) return;
    const delay = Math.max(0, Math.min(ms - this.clock.now(), 2 ** 31 - 1));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, delay);
    (this.timer as { unref?: () => void }).unref?.();
  }
}
