import type { Clock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { signPayload } from '../hosted/signature.ts';
import type { DueDelivery, WebhookStore } from './webhook-store.ts';

/**
 * Webhook delivery (API.md "Webhooks"): each pending delivery due is POSTed, signed, to its webhook, and the
 * attempt recorded — delivered on a 2xx; otherwise tried again on the retry schedule (SERVICE_WEBHOOK_RETRY_MS;
 * by default about 10 s, 1 min, 10 min, 1 h and 6 h after the first attempt), then `failed`. At least once: a delivery is marked
 * only after its attempt, so a crash in between sends it again after the restart.
 *
 * The sending is the runtime's (WebhookSender: Node, lib/runtime/node/webhook-sender.ts; Workers,
 * lib/runtime/workers/webhook-sender.ts), and so is when `run` is called: on Node a timer in the server process
 * (DeliveryLoop), on Workers the repository's Durable Object alarm.
 */

/** A receiver has this long to answer (API.md: 10 s). */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Deliveries sent at once. */
const SENDS_IN_FLIGHT = 8;
/** Deliveries taken per round of `run`, and rounds per run (the rest wait for the next run, at once). */
const ROUND = 32;
const ROUNDS = 8;
/**
 * Deliveries still held this long after they were written lost their release (a crash between the push's
 * publication and the release): `run` releases them under the repository's lock (RepoStore.releaseHeld).
 */
const HELD_GRACE_S = 30;

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
}

const encoder = new TextEncoder();

/** The body a webhook receives: the event's data, plus `event` and `delivery_id`. */
export function deliveryBody(d: Pick<DueDelivery, 'id' | 'event' | 'data'>): string {
  const data = JSON.parse(d.data) as Record<string, unknown>;
  return JSON.stringify({ ...data, event: d.event, delivery_id: d.id });
}

export class Deliverer {
  private readonly inFlight = new Set<string>();
  /**
   * The first run releases every held delivery whatever its age: none can belong to a push of this
   * instance still under way, so all were held by an earlier one that stopped (a restart, a crash).
   */
  private firstRun = true;
  private halted = false;

  constructor(private readonly opts: DelivererOptions) {}

  /** Takes no new delivery from now on (the server is stopping); attempts under way finish and are recorded. */
  halt(): void {
    this.halted = true;
  }

  /**
   * Releases deliveries whose release was lost, then sends every delivery due now. Returns when the next
   * pending one is due (clock ms), or null when none waits.
   */
  async run(): Promise<number | null> {
    const { store, clock } = this.opts;
    const grace = this.firstRun ? -1 : HELD_GRACE_S;
    this.firstRun = false;
    for (const repo of await store.heldRepos(Math.floor(clock.now() / 1000) - grace)) {
      try {
        await this.opts.releaseHeld(repo);
      } catch (e) {
        this.opts.logger.warn('webhook_release', { repo, error: String(e) });
      }
    }
    for (let round = 0; round < ROUNDS && !this.halted; round++) {
      const due = await store.due(clock.now(), ROUND, this.inFlight);
      if (due.length === 0) break;
      let next = 0;
      const worker = async () => {
        while (next < due.length && !this.halted) await this.attempt(due[next++]!);
      };
      await Promise.all(Array.from({ length: Math.min(SENDS_IN_FLIGHT, due.length) }, worker));
      if (due.length < ROUND) break;
    }
    return store.nextDue();
  }

  /** One attempt of one delivery, recorded. */
  private async attempt(d: DueDelivery): Promise<void> {
    const { clock, store } = this.opts;
    this.inFlight.add(d.id);
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
    } finally {
      this.inFlight.delete(d.id);
    }
  }
}

/**
 * Runs a Deliverer in a long-lived process (the Node server): at `start` (deliveries left pending by the last
 * run), whenever `kick`ed (an event queued deliveries), and when the next pending one falls due. One run at
 * a time; a kick during a run runs again right after it.
 */
export class DeliveryLoop {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly deliverer: Deliverer,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.deliverer
      .run()
      .then(
        (next) => next,
        (e: unknown) => {
          if (!this.stopped) this.logger.warn('webhook_deliveries', { error: String(e) });
          return this.clock.now() + 5_000;
        },
      )
      .then((next) => {
        this.running = null;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.kick();
        } else if (next !== null) this.wakeAt(next);
      });
  }

  /** Stops taking work and waits for the attempts under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.deliverer.halt();
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private wakeAt(ms: number): void {
    const delay = Math.max(0, Math.min(ms - this.clock.now(), 2 ** 31 - 1));
    this.timer = setTimeout(() => {
      this.timer = null;
      this.kick();
    }, delay);
    (this.timer as { unref?: () => void }).unref?.();
  }
}
