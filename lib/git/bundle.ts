import { PACK_TYPE, deflate, packRecord, webCodec } from './objects.ts';
import { BRANCH, type GitStore } from './store.ts';
import { concatBytes } from '../bytes.ts';

/**
 * A repository as a git bundle (v2): the header names `HEAD` and `refs/heads/main`, then one packfile holds
 * every object reachable from the branch, each stored whole (no deltas) and deflated. `git bundle verify`
 * accepts it and `git clone <file>` restores every page and the whole history. Web-standard only (the store's
 * codec, or CompressionStream; crypto.subtle), so both runtimes build it from whatever store backs the
 * repository. Objects are read READ_BATCH at a time in id order (GitStore.readObjects), so that each page of
 * the packs' indexes is read once over the whole export, and written in the order the walk found them.
 *
 * Pack format (gitformat-pack): `PACK`, version 2, object count, then per object a record (objects.ts
 * packRecord: the type and size header, then the zlib-deflated content); last, the SHA-1 of everything before it.
 */

const encoder = new TextEncoder();
/** Objects read at once. */
const READ_BATCH = 16_384;

/** Every object reachable from `head`: the commits of its (first-parent) line, their trees and blobs. */
async function reachable(store: GitStore, id: string, head: string): Promise<string[]> {
  const seen = new Set<string>();
  const order: string[] = [];
  const add = (oid: string) => {
    if (seen.has(oid)) return false;
    seen.add(oid);
    order.push(oid);
    return true;
  };
  const walkTree = async (tree: string): Promise<void> => {
    if (!add(tree)) return;
    for (const e of await store.readTree(id, tree)) {
      if (e.type === 'tree') await walkTree(e.oid);
      else if (e.type === 'blob') add(e.oid);
    }
  };
  for (let sha: string | null = head; sha && add(sha); ) {
    const commit = await store.readCommit(id, sha);
    await walkTree(commit.tree);
    sha = commit.parent;
  }
  return order;
}

/** The repository's bundle, or null when it has no commit yet (git has no bundle of nothing). */
export async function buildBundle(store: GitStore, id: string): Promise<Uint8Array<ArrayBuffer> | null> {
  const head = await store.head(id);
  if (!head) return null;
  const oids = await reachable(store, id, head);
  const codec = store.fs.codec ?? webCodec;
  const records = new Map<string, Uint8Array>();
  const sorted = [...oids].sort();
  for (let i = 0; i < sorted.length; i += READ_BATCH) {
    const batch = sorted.slice(i, i + READ_BATCH);
    const objects = await store.readObjects(id, batch);
    for (const [k, { type, content }] of objects.entries()) {
      records.set(batch[k]!, packRecord(PACK_TYPE[type], content.byteLength, await deflate(codec, content)));
    }
  }
  const count = new Uint8Array(4);
  new DataView(count.buffer).setUint32(0, oids.length);
  const parts: Uint8Array[] = [encoder.encode('PACK'), Uint8Array.from([0, 0, 0, 2]), count];
  for (const oid of oids) parts.push(records.get(oid)!);
  const pack = concatBytes(parts);
  const checksum = new Uint8Array(await crypto.subtle.digest('SHA-1', pack));
  const header = encoder.encode(`# v2 git bundle\n${head} HEAD\n${head} refs/heads/${BRANCH}\n\n`);
  return concatBytes([header, pack, checksum]);
}
