/**
 * The per-identity cap of event streams across repositories on Workers (lib/events/slots.ts): the streams of
 * one identity are held by the Durable Objects of different repositories, so their count lives in one more
 * object per identity (`idFromName(holder)`), as leases. A repository's object takes a lease when it opens a
 * stream, gives it back when the stream ends, and renews the leases of its open streams at each ping; a lease
 * not renewed for LEASE_MS (its object died or was reset with its streams) no longer counts. The leases are
 * in the object's storage, so an evicted slots object forgets none.
 *
 * Workers-only: imports `cloudflare:workers`. worker.ts exports {@link StreamSlotsObject}; wrangler.toml
 * binds it as STREAM_SLOTS.
 */
import { DurableObject } from 'cloudflare:workers';
import { MAX_STREAMS_PER_IDENTITY, type StreamSlots } from '../../events/slots.ts';

/** How long a lease counts without being renewed: three pings (SERVICE_EVENTS_PING_MS is at most 15 s). */
export const LEASE_MS = 45_000;

interface Lease {
  repo: string;
  /** Date.now() past which the lease no longer counts. */
  until: number;
}

const PREFIX = 'lease:';

export class StreamSlotsObject extends DurableObject {
  #leases: Map<string, Lease> | null = null;

  async #load(): Promise<Map<string, Lease>> {
    if (!this.#leases) {
      const stored = await this.ctx.storage.list<Lease>({ prefix: PREFIX });
      this.#leases = new Map([...stored].map(([k, v]) => [k.slice(PREFIX.length), v]));
    }
    return this.#leases;
  }

  /** Drops the leases past their time; the live ones are what counts. */
  async #live(now: number): Promise<Map<string, Lease>> {
    const leases = await this.#load();
    const dead = [...leases].filter(([, l]) => l.until <= now).map(([k]) => k);
    if (dead.length > 0) {
      for (const k of dead) leases.delete(k);
      await this.ctx.storage.delete(dead.map((k) => PREFIX + k));
    }
    return leases;
  }

  /** A lease for stream `key` in `repo`, unless `max` are held already (RPC). */
  async take(key: string, repo: string, max: number): Promise<boolean> {
    const now = Date.now();
    const leases = await this.#live(now);
    if (!leases.has(key) && leases.size >= max) return false;
    const lease = { repo, until: now + LEASE_MS };
    leases.set(key, lease);
    await this.ctx.storage.put(PREFIX + key, lease);
    await this.#alarmBy(lease.until);
    return true;
  }

  /** The stream ended (RPC). */
  async give(key: string): Promise<void> {
    const leases = await this.#load();
    if (leases.delete(key)) await this.ctx.storage.delete(PREFIX + key);
  }

  /**
   * The streams are still open (RPC): their leases run LEASE_MS from now. Only leases still held: a renewal
   * that crosses the stream's end must not bring its slot back.
   */
  async renew(keys: string[], repo: string): Promise<void> {
    const now = Date.now();
    const leases = await this.#live(now);
    const entries: Record<string, Lease> = {};
    for (const key of keys) {
      if (!leases.has(key)) continue;
      const lease = { repo, until: now + LEASE_MS };
      leases.set(key, lease);
      entries[PREFIX + key] = lease;
    }
    if (Object.keys(entries).length > 0) await this.ctx.storage.put(entries);
    await this.#alarmBy(now + LEASE_MS);
  }

  /** The repositories with live leases (RPC). */
  async repos(): Promise<string[]> {
    return [...new Set([...(await this.#live(Date.now())).values()].map((l) => l.repo))];
  }

  /** Forgets expired leases; the storage goes once none is left. */
  override async alarm(): Promise<void> {
    const leases = await this.#live(Date.now());
    if (leases.size === 0) await this.ctx.storage.deleteAll();
    else await this.ctx.storage.setAlarm(Math.max(...[...leases.values()].map((l) => l.until)));
  }

  async #alarmBy(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current < at) await this.ctx.storage.setAlarm(at);
  }
}

/** What the client needs of the namespace binding (`env.STREAM_SLOTS`). */
export interface StreamSlotsNamespace<Id = unknown> {
  idFromName(name: string): Id;
  get(id: Id): {
    take(key: string, repo: string, max: number): Promise<boolean>;
    give(key: string): Promise<void>;
    renew(keys: string[], repo: string): Promise<void>;
    repos(): Promise<string[]>;
  };
}

/** StreamSlots over the objects of a namespace: one per holder. */
export function durableSlots(ns: StreamSlotsNamespace, max = MAX_STREAMS_PER_IDENTITY): StreamSlots {
  const of = (holder: string) => ns.get(ns.idFromName(holder));
  return {
    take: (holder, key, repoId) => of(holder).take(key, repoId, max),
    give: (holder, key) => of(holder).give(key),
    renew: (holder, keys, repoId) => of(holder).renew([...keys], repoId),
    repos: (holder) => of(holder).repos(),
  };
}
