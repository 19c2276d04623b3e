// The cap of event streams per identity across repositories (lib/events/slots.ts): the Node build's count in
// memory, and the Workers build's object per identity (lib/runtime/workers/stream-slots.ts), run here on a
// fake `ctx` (its logic is plain): leases that end when given back, and that no longer count once not renewed
// for LEASE_MS (a repository's object that died with its streams leaks no slot). In workerd the whole path is
// test/events-cases.ts ("at most 50 streams per identity across repositories").
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('cloudflare:workers', () => ({
  DurableObject: class {
    constructor(
      protected ctx: unknown,
      protected env: unknown,
    ) {}
  },
}));

import { MAX_STREAMS_PER_IDENTITY, MemorySlots } from '../lib/events/slots.ts';
import { durableSlots, LEASE_MS, StreamSlotsObject, type StreamSlotsNamespace } from '../lib/runtime/workers/stream-slots.ts';

/** The part of DurableObjectStorage the object uses, over a Map. */
class FakeStorage {
  readonly data = new Map<string, unknown>();
  alarm: number | null = null;
  async list<T>(opts: { prefix?: string } = {}): Promise<Map<string, T>> {
    return new Map([...this.data].filter(([k]) => k.startsWith(opts.prefix ?? '')).map(([k, v]) => [k, structuredClone(v) as T]));
  }
  async put<T>(key: string | Record<string, T>, value?: T): Promise<void> {
    const entries = typeof key === 'string' ? { [key]: value } : key;
    for (const [k, v] of Object.entries(entries)) this.data.set(k, structuredClone(v));
  }
  async delete(key: string | string[]): Promise<boolean | number> {
    if (typeof key === 'string') return this.data.delete(key);
    return key.filter((k) => this.data.delete(k)).length;
  }
  async deleteAll(): Promise<void> {
    this.data.clear();
    this.alarm = null;
  }
  async getAlarm(): Promise<number | null> {
    return this.alarm;
  }
  async setAlarm(t: number | Date): Promise<void> {
    this.alarm = Number(t);
  }
}

/** One object per name over storage that outlives it (`evict` drops the objects' memory, as the runtime may). */
function fakeNamespace() {
  const storages = new Map<string, FakeStorage>();
  let objects = new Map<string, StreamSlotsObject>();
  const ns: StreamSlotsNamespace<string> = {
    idFromName: (name) => name,
    get: (id) => {
      let o = objects.get(id);
      if (!o) {
        if (!storages.has(id)) storages.set(id, new FakeStorage());
        const ctx = { storage: storages.get(id)!, blockConcurrencyWhile: <T>(f: () => Promise<T>) => f() };
        objects.set(id, (o = new StreamSlotsObject(ctx as unknown as DurableObjectState, {})));
      }
      return o;
    },
  };
  return { ns, storages, evict: () => (objects = new Map()), object: (id: string) => ns.get(id) as StreamSlotsObject };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('MemorySlots (Node)', () => {
  it('50 per holder, a slot given back is free at once, and it knows the repositories of a holder', async () => {
    const slots = new MemorySlots();
    for (let i = 0; i < MAX_STREAMS_PER_IDENTITY; i++) expect(await slots.take('user:a', `k${i}`, `r${i % 5}`)).toBe(true);
    expect(await slots.take('user:a', 'k50', 'r9')).toBe(false);
    expect(await slots.take('user:b', 'k0', 'r9')).toBe(true);
    await slots.give('user:a', 'k0');
    expect(await slots.take('user:a', 'k50', 'r9')).toBe(true);
    expect((await slots.repos('user:a')).sort()).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r9']);
    expect(await slots.repos('user:c')).toEqual([]);
  });
});

describe('StreamSlotsObject (Workers)', () => {
  it('50 leases per identity across repositories; given back, the next one is taken; they survive eviction', async () => {
    const { ns, evict } = fakeNamespace();
    const slots = durableSlots(ns);
    for (let i = 0; i < 50; i++) expect(await slots.take('user:a', `k${i}`, `repo${i % 5}`)).toBe(true);
    expect(await slots.take('user:a', 'k50', 'repo5')).toBe(false);
    expect(await slots.take('user:b', 'k0', 'repo5')).toBe(true);
    evict();
    expect(await slots.take('user:a', 'k50', 'repo5')).toBe(false);
    await slots.give('user:a', 'k7');
    expect(await slots.take('user:a', 'k50', 'repo5')).toBe(true);
    expect((await slots.repos('user:a')).sort()).toEqual(['repo0', 'repo1', 'repo2', 'repo3', 'repo4', 'repo5']);
  });

  it('a lease not renewed for LEASE_MS no longer counts (its object died); renewed ones hold; a renewal never brings a given slot back', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(1_000_000);
    const { ns, storages, object } = fakeNamespace();
    const slots = durableSlots(ns);
    for (let i = 0; i < 25; i++) expect(await slots.take('user:a', `dead${i}`, 'gone')).toBe(true);
    for (let i = 0; i < 25; i++) expect(await slots.take('user:a', `live${i}`, 'here')).toBe(true);
    expect(await slots.take('user:a', 'next', 'here')).toBe(false);
    // The live ones are renewed at each ping; the dead ones' object renews nothing.
    for (let t = 1; t <= 4; t++) {
      vi.setSystemTime(1_000_000 + t * 15_000);
      await slots.renew('user:a', Array.from({ length: 25 }, (_, i) => `live${i}`), 'here');
    }
    vi.setSystemTime(1_000_000 + LEASE_MS + 1);
    for (let i = 0; i < 25; i++) expect(await slots.take('user:a', `new${i}`, 'here')).toBe(true);
    expect(await slots.take('user:a', 'one-more', 'here')).toBe(false);
    expect(await slots.repos('user:a')).toEqual(['here']);
    await slots.give('user:a', 'new0');
    await slots.renew('user:a', ['new0'], 'here');
    expect(await slots.take('user:a', 'after-give', 'here')).toBe(true);
    // The alarm clears the storage once every lease has run out.
    vi.setSystemTime(1_000_000 + 10 * LEASE_MS);
    await object('user:a').alarm();
    expect(storages.get('user:a')!.data.size).toBe(0);
  });
});
