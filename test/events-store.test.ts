/**
 * The event log and the webhook tables (lib/events/event-log.ts, lib/events/webhook-store.ts) on a real libSQL
 * file: retention, paging, the webhook cap under racing creations, held deliveries and their release.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { ManualClock } from '../lib/util/clock.ts';
import { loadMigrations, openDatabaseFile, openDerivedFile } from '../lib/runtime/node/open-db.ts';
import { migrate } from '../lib/db/migrate.ts';
import type { LibsqlDatabase } from '../lib/runtime/node/libsql.ts';
import { EventLog, pushEventData } from '../lib/events/event-log.ts';
import { WebhookStore } from '../lib/events/webhook-store.ts';
import { tempDir } from './helpers/env.ts';

let db: LibsqlDatabase | undefined;
let dir: { path: string; cleanup: () => Promise<void> } | undefined;
afterEach(async () => {
  await db?.close();
  await dir?.cleanup();
  db = undefined;
});

async function open() {
  dir = await tempDir('kr-events-store-');
  db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
  return db;
}

const member = (n: number) => ({ repo_id: 'r', user_id: `u${n}`, email: `u${n}@x.test`, change: 'joined' as const, role: 'member' as const });

describe('EventLog', () => {
  it('keeps the newest `retention` events per repository, pages them in order, knows which it holds', async () => {
    const d = await open();
    const log = new EventLog(d, new ManualClock(), 5);
    for (let i = 1; i <= 8; i++) await log.append('r', 'member', member(i));
    await log.append('other', 'member', member(99));
    expect(await log.lastId('r')).toBe(8);
    expect(await log.lastId('none')).toBe(0);
    expect(await log.has('r', 3)).toBe(false);
    expect(await log.has('r', 4)).toBe(true);
    expect(await log.has('r', 9)).toBe(false);
    const page = await log.page('r', 0, 100, 100);
    expect(page.map((e) => e.id)).toEqual([4, 5, 6, 7, 8]);
    expect(JSON.parse(page[0]!.data)).toEqual(member(4));
    expect((await log.page('r', 5, 7, 100)).map((e) => e.id)).toEqual([6, 7]);
    expect((await log.page('r', 4, 100, 2)).map((e) => e.id)).toEqual([5, 6]);
    expect((await log.page('other', 0, 100, 100)).map((e) => e.id)).toEqual([1]);
  });

  it("a repository's ids are its own sequence: events of other repositories in between leave no gap", async () => {
    const d = await open();
    const log = new EventLog(d, new ManualClock(), 5);
    for (let i = 1; i <= 7; i++) {
      await log.append('a', 'member', member(i));
      for (let k = 0; k < i; k++) await log.append('b', 'member', member(100 + k));
    }
    expect((await log.page('a', 0, 100, 100)).map((e) => e.id)).toEqual([3, 4, 5, 6, 7]);
    expect(await log.lastId('a')).toBe(7);
    expect(await log.lastId('b')).toBe(28);
    // Events cut back with a commit git never reached leave their ids unused: a client may hold one.
    await d.run('DELETE FROM repo_events WHERE repo_id = ? AND seq >= 6', ['a']);
    await log.append('a', 'member', member(8));
    expect((await log.page('a', 0, 100, 100)).map((e) => e.id)).toEqual([3, 4, 5, 8]);
  });

  it('ids handed out before migration 0013 still resume, and a repository goes on after its newest', async () => {
    dir = await tempDir('kr-events-store-');
    db = openDerivedFile(join(dir.path, 'service.db'), 1024);
    const all = await loadMigrations();
    await migrate(db, all.filter((m) => m.version < 13), 0);
    // Events written by the old code: one AUTOINCREMENT id across repositories.
    for (const repo of ['a', 'b', 'a', 'b', 'b', 'a']) {
      await db.run("INSERT INTO repo_events (repo_id, kind, data, created_at) VALUES (?, 'member', '{}', 0)", [repo]);
    }
    expect(await migrate(db, all, 0)).toEqual(all.filter((m) => m.version >= 13).map((m) => m.version));
    const log = new EventLog(db, new ManualClock());
    expect((await log.page('a', 0, 100, 100)).map((e) => e.id)).toEqual([1, 3, 6]);
    expect(await log.has('a', 3)).toBe(true);
    expect(await log.has('a', 2)).toBe(false);
    expect((await log.page('a', 1, 100, 100)).map((e) => e.id)).toEqual([3, 6]);
    await log.append('a', 'member', member(1));
    await log.append('b', 'member', member(2));
    await log.append('a', 'member', member(3));
    expect((await log.page('a', 3, 100, 100)).map((e) => e.id)).toEqual([6, 7, 8]);
    expect((await log.page('b', 0, 100, 100)).map((e) => e.id)).toEqual([2, 4, 5, 6]);
  });

  it('a push event lists at most 200 paths, counts the rest, names merged paths and cuts long text', () => {
    const paths = Array.from({ length: 250 }, (_, i) => ({ path: `p${i}.md`, status: 'added' as const }));
    const data = pushEventData('r', { sha: 'a'.repeat(40), author: 'x'.repeat(1500), email: 'e@x', time: 0, message: 'm' }, paths, ['p1.md']);
    expect(data.paths).toHaveLength(200);
    expect(data.more).toBe(50);
    expect(data.merged).toEqual(['p1.md']);
    expect(data.author).toHaveLength(1000);
    expect(data.time).toBe('1970-01-01T00:00:00Z');
    expect(pushEventData('r', { sha: 's', author: 'a', email: 'e', time: 0, message: 'm' }, paths.slice(0, 2), [])).toEqual({
      repo_id: 'r',
      sha: 's',
      author: 'a',
      email: 'e',
      time: '1970-01-01T00:00:00Z',
      message: 'm',
      paths: paths.slice(0, 2),
    });
  });
});

describe('WebhookStore', () => {
  it('racing creations never pass 20 webhooks per repository', async () => {
    const d = await open();
    const hooks = new WebhookStore(d, new ManualClock());
    const made = await Promise.all(Array.from({ length: 30 }, (_, i) => hooks.create('r', `https://example.com/${i}`, ['push'])));
    expect(made.filter((m) => m !== null)).toHaveLength(20);
    expect(await hooks.list('r')).toHaveLength(20);
    expect(await hooks.create('s', 'https://example.com/s', ['member'])).not.toBeNull();
  });

  it('a push\'s deliveries are held until released; a member event\'s are due at once; only webhooks that want the kind get one', async () => {
    const d = await open();
    const clock = new ManualClock(1_000_000);
    const hooks = new WebhookStore(d, clock);
    const log = new EventLog(d, clock);
    const both = (await hooks.create('r', 'https://example.com/both', ['push', 'member']))!.webhook;
    const onlyMember = (await hooks.create('r', 'https://example.com/m', ['member']))!.webhook;
    const data = pushEventData('r', { sha: 'c1', author: 'a', email: 'e', time: 0, message: 'm' }, [], []);
    await d.batch(log.appendStmts('r', 'push', data, { commitSha: 'c1' }));
    expect(await hooks.due(clock.now(), 10, new Set())).toEqual([]);
    expect((await hooks.deliveries('r', both.id, 10))!.map((x) => [x.event, x.status, x.next_attempt_at])).toEqual([['push', 'pending', undefined]]);
    expect(await hooks.deliveries('r', onlyMember.id, 10)).toEqual([]);
    expect(await hooks.release('r', ['c1'])).toBe(1);
    expect((await hooks.due(clock.now(), 10, new Set())).map((x) => [x.webhookId, x.event])).toEqual([[both.id, 'push']]);
    expect(await log.append('r', 'member', member(1))).toBe(2);
    expect((await hooks.due(clock.now(), 10, new Set())).map((x) => x.event).sort()).toEqual(['member', 'member', 'push']);
    // Deleting a webhook drops its deliveries; ids are UUIDs.
    const [first] = await hooks.due(clock.now(), 1, new Set());
    expect(first!.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(await hooks.remove('r', both.id)).toBe(true);
    expect(await hooks.remove('r', both.id)).toBe(false);
    expect((await hooks.due(clock.now(), 10, new Set())).map((x) => x.webhookId)).toEqual([onlyMember.id]);
  });
});
