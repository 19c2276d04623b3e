/**
 * The Deliverer's scheduling (lib/events/deliver.ts) on a real libSQL file, with a sender whose answers the
 * test gives by hand: at most one attempt per webhook, a freed slot going at once to the repository whose
 * turn it is, and no attempt waiting for another. The outbox's cap on pending deliveries at its default.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { ManualClock } from '../lib/util/clock.ts';
import { silentLogger } from '../lib/framework/log.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import type { LibsqlDatabase } from '../lib/runtime/node/libsql.ts';
import { EventLog } from '../lib/events/event-log.ts';
import { DROPPED, MAX_PENDING_DELIVERIES, WebhookStore } from '../lib/events/webhook-store.ts';
import { Deliverer, type WebhookRequest, type WebhookResult } from '../lib/events/deliver.ts';
import { tempDir } from './helpers/env.ts';

let db: LibsqlDatabase | undefined;
let dir: { path: string; cleanup: () => Promise<void> } | undefined;
afterEach(async () => {
  await db?.close();
  await dir?.cleanup();
  db = undefined;
});

async function open() {
  dir = await tempDir('kr-deliverer-');
  db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
  return db;
}

const member = (repo: string, n: number) => ({ repo_id: repo, user_id: `u${n}`, email: `u${n}@x.test`, change: 'joined' as const, role: 'member' as const });

/** A sender that answers when the test says: each request waits for `answer(url)`. */
function handSender() {
  const waiting = new Map<string, Array<(r: WebhookResult) => void>>();
  const started: string[] = [];
  return {
    started,
    send: (req: WebhookRequest) =>
      new Promise<WebhookResult>((resolve) => {
        started.push(req.url);
        waiting.set(req.url, [...(waiting.get(req.url) ?? []), resolve]);
      }),
    answer(url: string, status = 200) {
      const list = waiting.get(url) ?? [];
      expect(list.length, url).toBeGreaterThan(0);
      list.shift()!({ status });
    },
    open: (url: string) => waiting.get(url)?.length ?? 0,
  };
}

describe('Deliverer', () => {
  it('one attempt per webhook; a freed slot goes to the repository whose turn it is, at once', async () => {
    const d = await open();
    const clock = new ManualClock(1_000_000);
    const store = new WebhookStore(d, clock);
    const log = new EventLog(d, clock);
    for (const name of ['a1', 'a2', 'a3']) await store.create('a', `https://a.example/${name}`, ['member']);
    await store.create('b', 'https://b.example/b', ['member']);
    const s = handSender();
    const deliverer = new Deliverer({ store, send: s.send, clock, logger: silentLogger, releaseHeld: async () => {}, retryMs: [60_000], slots: 2 });

    // Repository a: two events for each of its three webhooks; two slots.
    await log.append('a', 'member', member('a', 1));
    await log.append('a', 'member', member('a', 2));
    // Null: both slots are taken (the end of an attempt looks again).
    expect(await deliverer.pump()).toBeNull();
    await expect.poll(() => s.started).toEqual(['https://a.example/a1', 'https://a.example/a2']);
    // Repository b's event comes due while both slots are taken by a.
    await log.append('b', 'member', member('b', 1));
    await deliverer.pump();
    expect(s.started).toHaveLength(2);

    // a1's attempt ends: its slot goes to b at once (a2 still under way), not to a3 nor a1's second event.
    s.answer('https://a.example/a1');
    await expect.poll(() => s.started.length).toBe(3);
    expect(s.started[2]).toBe('https://b.example/b');
    expect(s.open('https://a.example/a2')).toBe(1);
    // b's ends: a's turn again, its webhook that waited longest (a3, never started).
    s.answer('https://b.example/b');
    await expect.poll(() => s.started.length).toBe(4);
    expect(s.started[3]).toBe('https://a.example/a3');
    // a2 ends: a1 (started before a2 and a3) has the slot for its second event.
    s.answer('https://a.example/a2');
    await expect.poll(() => s.started.length).toBe(5);
    expect(s.started[4]).toBe('https://a.example/a1');
    // Never two attempts of one webhook at once.
    for (const url of new Set(s.started)) expect(s.open(url), url).toBeLessThanOrEqual(1);

    for (const url of ['https://a.example/a3', 'https://a.example/a1']) s.answer(url);
    await expect.poll(() => s.started.length).toBe(7);
    expect(s.started.slice(5).sort()).toEqual(['https://a.example/a2', 'https://a.example/a3']);
    s.answer('https://a.example/a2');
    s.answer('https://a.example/a3');
    await deliverer.halt();
    const statuses = await d.all<{ status: string; n: number }>('SELECT status, COUNT(*) AS n FROM webhook_deliveries GROUP BY status');
    expect(statuses).toEqual([{ status: 'delivered', n: 7 }]);
  });

  it('drain: sends until nothing is due and no attempt is under way, then says when the next retry is due', async () => {
    const d = await open();
    const clock = new ManualClock(1_000_000);
    const store = new WebhookStore(d, clock);
    const log = new EventLog(d, clock);
    await store.create('a', 'https://a.example/ok', ['member']);
    await store.create('a', 'https://a.example/bad', ['member']);
    const s = handSender();
    const deliverer = new Deliverer({ store, send: s.send, clock, logger: silentLogger, releaseHeld: async () => {}, retryMs: [60_000] });
    await log.append('a', 'member', member('a', 1));
    await log.append('a', 'member', member('a', 2));
    const drained = deliverer.drain();
    await expect.poll(() => s.started.length).toBe(2);
    s.answer('https://a.example/ok');
    s.answer('https://a.example/bad', 500);
    await expect.poll(() => s.started.length).toBe(4);
    s.answer('https://a.example/ok');
    s.answer('https://a.example/bad', 500);
    // Both of bad's deliveries failed their first attempt at 1,000,000: retried 60 s later.
    expect(await drained).toBe(1_060_000);
  });
});

describe('the pending cap', () => {
  it('by default 1,000 pending deliveries per webhook: the oldest beyond is `failed`, dropped; other webhooks keep theirs', async () => {
    expect(MAX_PENDING_DELIVERIES).toBe(1_000);
    const d = await open();
    const clock = new ManualClock(1_000_000);
    const store = new WebhookStore(d, clock);
    const log = new EventLog(d, clock);
    const hook = (await store.create('r', 'https://r.example/h', ['member']))!.webhook;
    for (let i = 1; i <= 1_000; i++) await log.append('r', 'member', member('r', i));
    const count = async () =>
      d.all<{ status: string; last_error: string | null; n: number }>(
        'SELECT status, last_error, COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? GROUP BY status, last_error ORDER BY status',
        [hook.id],
      );
    expect(await count()).toEqual([{ status: 'pending', last_error: null, n: 1_000 }]);
    const oldest = await store.nextOf(hook.id, clock.now());

    // The 1,001st: the oldest goes, as its webhook's listing shows.
    await log.append('r', 'member', member('r', 1_001));
    expect(await count()).toEqual([
      { status: 'failed', last_error: DROPPED, n: 1 },
      { status: 'pending', last_error: null, n: 1_000 },
    ]);
    const [dropped] = (await store.deliveries('r', hook.id, 1_001))!.slice(-1);
    expect(dropped).toEqual({ id: oldest!.id, event: 'member', status: 'failed', attempts: 0, last_error: DROPPED, created_at: 1_000 });
    // An attempt of it that was under way records nothing: it stays dropped.
    await store.record(oldest!, { status: 'pending', attempts: 1, lastStatus: 500, lastError: 'HTTP 500', firstAttemptMs: 1, nextAttemptMs: 2 });
    expect((await store.deliveries('r', hook.id, 1_001))!.slice(-1)).toEqual([dropped]);
    // A ping counts too.
    expect(await store.ping('r', hook.id)).toBe(true);
    expect(await count()).toEqual([
      { status: 'failed', last_error: DROPPED, n: 2 },
      { status: 'pending', last_error: null, n: 1_000 },
    ]);
  }, 120_000);

  it('a lower cap (SERVICE_WEBHOOK_MAX_PENDING) counts per webhook, held deliveries included, and keeps 200 finished ones', async () => {
    const d = await open();
    const clock = new ManualClock(1_000_000);
    const store = new WebhookStore(d, clock, 3);
    const log = new EventLog(d, clock, undefined, 3);
    const h1 = (await store.create('r', 'https://r.example/1', ['member']))!.webhook;
    const h2 = (await store.create('r', 'https://r.example/2', ['member', 'push']))!.webhook;
    for (let i = 1; i <= 5; i++) await log.append('r', 'member', member('r', i));
    // A push's held rows count as pending.
    await d.batch(log.appendStmts('r', 'push', { repo_id: 'r' } as never, { commitSha: 'c1' }));
    const rows = async (id: string) =>
      (await store.deliveries('r', id, 300))!.map((x) => [x.event, x.status, x.last_error ?? null]);
    expect(await rows(h1.id)).toEqual([
      ['member', 'pending', null],
      ['member', 'pending', null],
      ['member', 'pending', null],
      ['member', 'failed', DROPPED],
      ['member', 'failed', DROPPED],
    ]);
    expect(await rows(h2.id)).toEqual([
      ['push', 'pending', null],
      ['member', 'pending', null],
      ['member', 'pending', null],
      ['member', 'failed', DROPPED],
      ['member', 'failed', DROPPED],
      ['member', 'failed', DROPPED],
    ]);
    // Finished rows beyond 200 per webhook are pruned as drops pile up.
    for (let i = 6; i <= 215; i++) await log.append('r', 'member', member('r', i));
    const counts = await d.all<{ status: string; n: number }>(
      'SELECT status, COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = ? GROUP BY status ORDER BY status',
      [h1.id],
    );
    expect(counts).toEqual([
      { status: 'failed', n: 200 },
      { status: 'pending', n: 3 },
    ]);
  }, 120_000);
});
