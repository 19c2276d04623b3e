/**
 * The cap of open event streams per identity across every repository (docs/api.md "Live events": at
 * most 50; the 51st → 429 `too many event streams`). A hub takes a slot for each stream it opens and gives it
 * back when the stream ends. On Node every stream is in the one process: MemorySlots counts them there. On
 * Workers the streams of one identity live in the Durable Objects of different repositories, so the count
 * is kept in one small object per identity (lib/runtime/workers/stream-slots.ts), as leases a hub renews at
 * each ping: an object that dies without giving its slots back loses them when their leases run out.
 */

/** Open streams per identity across all repositories. */
export const MAX_STREAMS_PER_IDENTITY = 50;

export interface StreamSlots {
  /** Takes a slot for the stream `key` of `holder` in `repoId`; false when the holder has the most already. */
  take(holder: string, key: string, repoId: string): Promise<boolean>;
  /** Gives a slot back (the stream ended). */
  give(holder: string, key: string): Promise<void>;
  /** The slots of streams still open, held on (a lease is renewed). */
  renew(holder: string, keys: readonly string[], repoId: string): Promise<void>;
  /** The repositories where `holder` has open streams (where to end them when a credential is revoked). */
  repos(holder: string): Promise<string[]>;
}

/** The slots of one process (Node): a set of stream keys per holder. */
export class MemorySlots implements StreamSlots {
  private readonly held = new Map<string, Map<string, string>>();

  constructor(private readonly max = MAX_STREAMS_PER_IDENTITY) {}

  async take(holder: string, key: string, repoId: string): Promise<boolean> {
    let keys = this.held.get(holder);
    if (!keys) this.held.set(holder, (keys = new Map()));
    if (keys.size >= this.max) return false;
    keys.set(key, repoId);
    return true;
  }

  async give(holder: string, key: string): Promise<void> {
    const keys = this.held.get(holder);
    if (!keys) return;
    keys.delete(key);
    if (keys.size === 0) this.held.delete(holder);
  }

  async renew(): Promise<void> {}

  async repos(holder: string): Promise<string[]> {
    return [...new Set(this.held.get(holder)?.values() ?? [])];
  }
}
