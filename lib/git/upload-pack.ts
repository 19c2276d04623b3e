/**
 * git's upload-pack over smart HTTP, the answer to a `fetch` (v2) or to a v0/v1 want/have request
 * (gitprotocol-pack, gitprotocol-v2, as git's own upload-pack answers with `--stateless-rpc`):
 *
 * - **Negotiation.** Each `have` the repository's branch holds is common. v2 answers an `acknowledgments`
 *   section (an ACK per common have, or NAK) and `ready` once anything is common; v0 answers as git's
 *   upload-pack does with multi_ack_detailed (`ACK <id> common`, `ACK <id> ready`, NAK, the final ACK) or
 *   plain multi_ack / none. A client that said `done` (or is `ready` with no-done) gets the pack.
 * - **Shallow.** `deepen N` (from the wants, or from the client's shallow commits with deepen-relative; 2^31-1
 *   is "everything"), `deepen-since`, `deepen-not`: the commits at the new boundary are sent as `shallow`, the
 *   client's shallow commits now inside it as `unshallow` (their parents then wanted too), and the walk does
 *   not go past the boundary. The client's own shallow commits stop what it is known to have.
 * - **What is sent.** The commits reachable from the wants and not from a common have (a walk by commit time,
 *   as git's revision walk limits a range), then for each of them the trees and blobs of its tree that differ
 *   from its first parent's when the client has that parent or gets it now (else from a common commit's, or
 *   all of them): one new commit in a repository of 10,000 pages is the commit, the trees on the changed
 *   paths and the changed blobs, whatever the history's length.
 * - **The pack** is made as the client reads it, as the export is (lib/git/bundle.ts): the object ids listed
 *   once (IdList), read in batches in pack order, each stored whole and deflated, with the running SHA-1; in
 *   side-band-64k packets (v2 always; v0 when asked). Loops take turns with other requests (TimeSlice) and stop
 *   when the client goes away (lib/framework/http/stream.ts).
 */
import { IdList, READ_BATCH, nextBatch } from './bundle.ts';
import { PACK_TYPE, deflate, packRecord, sha1Stream, webCodec } from './objects.ts';
import { parseCommit } from './object-reader.ts';
import type { GitStore } from './store.ts';
import { DELIM, FLUSH, MAX_BAND_DATA, pktLine, sideBand } from './pkt-line.ts';
import { INFINITE_DEPTH, MAIN_REF, type FetchRequest } from './upload-request.ts';
import { checkCancelled, pieceStream, type StreamWatch } from '../framework/http/stream.ts';
import { TimeSlice } from '../util/time-slice.ts';
import { StoreError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { concatBytes } from '../util/bytes.ts';

/** Where the answer's objects come from: the repository's store, its branch head, and which commits are on it. */
export interface UploadSource {
  store: GitStore;
  id: string;
  head: string | null;
  /** Which of `oids` are commits of the branch's history (the derived index answers it in batches). */
  commitsKnown(oids: readonly string[]): Promise<Set<string>>;
}

/** An answer: whether it sends a pack with commits in it (a `pull` for the activity feed), and its body. */
export interface UploadAnswer {
  sends: boolean;
  body: ReadableStream<Uint8Array>;
}

/** What an answer did, for its log line when it ends. */
export interface UploadProgress {
  commits: number;
  objects: number;
  sent: number;
}

const FIRST_BATCH = 16;
/** Pack bytes handed on at once (about one side-band packet). */
const PIECE_BYTES = 60 * 1024;
/** Trees read together at most while listing a pack's objects. */
const TREE_BATCH = 128;

interface CommitInfo {
  tree: string;
  parents: string[];
  time: number;
}

/** One request's reads of commits (each read once; parents and dates are what the walks need). */
class Commits {
  private readonly known = new Map<string, CommitInfo>();
  constructor(
    private readonly store: GitStore,
    private readonly id: string,
  ) {}

  async get(oid: string): Promise<CommitInfo> {
    const hit = this.known.get(oid);
    if (hit) return hit;
    const o = await this.store.readObject(this.id, oid);
    if (o.type !== 'commit') throw new StoreError(`object ${oid} is a ${o.type}, not a commit`);
    const c = parseCommit(o.content);
    const info = { tree: c.tree, parents: c.parents, time: c.author.timestamp };
    this.known.set(oid, info);
    return info;
  }
}

/** The shallow side of a request: the new boundary, what the client is told, and what the walk adds. */
interface Shallow {
  /** Commits whose parents are not walked (the new boundary, or the client's shallow commits without deepen). */
  cut: Set<string>;
  /** `shallow` lines: boundary commits the client does not already have as shallow. */
  shallow: string[];
  /** `unshallow` lines: the client's shallow commits now inside the boundary. */
  unshallow: string[];
  /** The unshallowed commits' parents, wanted too. */
  extraWants: string[];
}

/**
 * Answers a parsed `fetch`. Refusals (a want that is not a commit of the branch, a deepen that selects
 * nothing) are HttpErrors thrown before anything is streamed.
 */
export async function uploadPack(
  src: UploadSource,
  req: FetchRequest,
  opts: { onEnd?: StreamWatch; progress?: UploadProgress } = {},
): Promise<UploadAnswer> {
  const slice = new TimeSlice();
  const commits = new Commits(src.store, src.id);
  const wants = [...new Set(req.wants)];
  const unknownWants = wants.filter((w) => w !== src.head);
  const knownWants = unknownWants.length > 0 ? await src.commitsKnown(unknownWants) : new Set<string>();
  for (const w of unknownWants) if (!knownWants.has(w)) throw refuse(R.invalid_git_request, `not our ref ${w}`);
  const haves = [...new Set(req.haves)];
  const commonSet = haves.length > 0 ? await src.commitsKnown(haves) : new Set<string>();
  const commons = haves.filter((h) => commonSet.has(h));
  const shallowing = req.depth > 0 || req.deepenSince !== null || req.deepenNot.length > 0;
  const shallow = shallowing ? await deepen(src, commits, req, wants, slice) : null;

  // The negotiation's own lines, and whether the pack follows.
  const lines: Uint8Array[] = [];
  let sendPack: boolean;
  if (req.version === 2) {
    sendPack = req.done || commons.length > 0;
    if (!req.done) {
      lines.push(pktLine('acknowledgments\n'));
      if (commons.length === 0) lines.push(pktLine('NAK\n'));
      for (const c of commons) lines.push(pktLine(`ACK ${c}\n`));
      if (sendPack) lines.push(pktLine('ready\n'), DELIM);
      else lines.push(FLUSH);
    }
    if (sendPack && (shallowing || req.shallows.length > 0)) {
      lines.push(pktLine('shallow-info\n'));
      for (const s of shallow?.shallow ?? []) lines.push(pktLine(`shallow ${s}\n`));
      for (const s of shallow?.unshallow ?? []) lines.push(pktLine(`unshallow ${s}\n`));
      lines.push(DELIM);
    }
    if (sendPack) lines.push(pktLine('packfile\n'));
  } else {
    if (shallow) {
      for (const s of shallow.shallow) lines.push(pktLine(`shallow ${s}\n`));
      for (const s of shallow.unshallow) lines.push(pktLine(`unshallow ${s}\n`));
      lines.push(FLUSH);
    }
    sendPack = req.negotiates && (await negotiateV0(req, haves, commonSet, commits, lines));
  }

  const progress = opts.progress ?? { commits: 0, objects: 0, sent: 0 };
  let sent: string[] = [];
  let walk: Walk | null = null;
  if (sendPack) {
    walk = await walkCommits(commits, [...wants, ...(shallow?.extraWants ?? [])], commons, shallow?.cut ?? new Set(req.shallows), new Set(req.shallows), slice);
    sent = walk.sent;
    progress.commits = sent.length;
  }
  const head = concatBytes(lines);
  const band = req.version === 2 ? 2 : req.sideBand;
  const pieces = async function* (signal: AbortSignal): AsyncGenerator<Uint8Array, void, void> {
    yield head;
    if (!walk) return;
    const ids = await objectsOf(src.store, src.id, commits, walk, commons, signal, slice);
    progress.objects = ids.count;
    const pack = packPieces(src.store, src.id, ids, signal, slice, progress);
    if (band === 0) {
      for await (const group of pack) yield concatBytes(group);
      return;
    }
    yield* sideBand(pack, 1, band === 2 ? MAX_BAND_DATA : 995);
    yield FLUSH;
  };
  return {
    sends: sent.length > 0,
    body: pieceStream(pieces, { onEnd: opts.onEnd, detail: () => ({ ...progress }) }),
  };
}

/**
 * v0/v1's answer to the have section, as git's upload-pack gives it in stateless mode (get_common_commits):
 * pushes the lines onto `lines`, and says whether the pack follows.
 */
async function negotiateV0(req: FetchRequest, haves: string[], common: Set<string>, commits: Commits, lines: Uint8Array[]): Promise<boolean> {
  /**
   * Common haves newly learned (git's have_obj): a have whose child was a have before is known already. Without
   * multi_ack, git acknowledges every have while this is one.
   */
  let commons = 0;
  const theyHave = new Set<string>();
  let gotCommon = false;
  let gotOther = false;
  let sentReady = false;
  let last = '';
  // A have line repeated is answered once.
  for (const h of haves) {
    if (common.has(h)) {
      if (!theyHave.has(h)) {
        theyHave.add(h);
        for (const p of (await commits.get(h)).parents) theyHave.add(p);
        commons++;
      }
      gotCommon = true;
      last = h;
      if (req.multiAck === 2) lines.push(pktLine(`ACK ${h} common\n`));
      else if (req.multiAck === 1) lines.push(pktLine(`ACK ${h} continue\n`));
      else if (commons === 1) lines.push(pktLine(`ACK ${h}\n`));
    } else {
      gotOther = true;
      if (req.multiAck > 0 && commons > 0) {
        if (req.multiAck === 2) {
          sentReady = true;
          lines.push(pktLine(`ACK ${h} ready\n`));
        } else lines.push(pktLine(`ACK ${h} continue\n`));
      }
    }
  }
  if (req.done) {
    if (commons > 0) {
      if (req.multiAck > 0) lines.push(pktLine(`ACK ${last}\n`));
    } else lines.push(pktLine('NAK\n'));
    return true;
  }
  // The end of a round.
  if (req.multiAck === 2 && gotCommon && !gotOther && commons > 0) {
    sentReady = true;
    lines.push(pktLine(`ACK ${last} ready\n`));
  }
  if (commons === 0 || req.multiAck > 0) lines.push(pktLine('NAK\n'));
  if (req.noDone && sentReady) {
    lines.push(pktLine(`ACK ${last}\n`));
    return true;
  }
  return false;
}

/** The boundary of a deepening request (git's deepen, deepen_by_rev_list), and its lines. */
async function deepen(src: UploadSource, commits: Commits, req: FetchRequest, wants: string[], slice: TimeSlice): Promise<Shallow> {
  const clientShallow = new Set(req.shallows);
  /** Commits inside the new boundary whose parents come too, and the boundary itself. */
  const within = new Set<string>();
  const boundary = new Set<string>();
  if (req.depth > 0) {
    // Breadth first from the starts, each commit at its least depth (1 for a start).
    let starts = wants;
    if (req.deepenRelative) {
      const known = await src.commitsKnown(req.shallows);
      starts = req.shallows.filter((s) => known.has(s));
    }
    const depth = req.deepenRelative ? Math.min(INFINITE_DEPTH, req.depth + 1) : req.depth;
    const seen = new Set<string>(starts);
    let level = [...new Set(starts)];
    for (let d = 1; level.length > 0; d++) {
      const next: string[] = [];
      for (const c of level) {
        if (slice.due) await slice.next();
        const info = await commits.get(c);
        if (d >= depth) {
          if (info.parents.length > 0) boundary.add(c);
          continue;
        }
        within.add(c);
        for (const p of info.parents) {
          if (seen.has(p)) continue;
          seen.add(p);
          next.push(p);
        }
      }
      level = next;
    }
  } else {
    // deepen-since / deepen-not: the commits reachable from the wants that are new enough and not reachable
    // from the named references; one with a parent left out is on the boundary.
    const excluded = new Set<string>();
    for (const name of req.deepenNot) {
      if (!['HEAD', 'main', 'heads/main', MAIN_REF, 'refs/heads/main'].includes(name)) {
        throw refuse(R.invalid_git_request, `deepen-not: unknown reference ${name.slice(0, 100)}`);
      }
      for (let stack = src.head ? [src.head] : []; stack.length > 0; ) {
        const c = stack.pop()!;
        if (excluded.has(c)) continue;
        excluded.add(c);
        if (slice.due) await slice.next();
        stack.push(...(await commits.get(c)).parents);
      }
    }
    const since = req.deepenSince ?? -Infinity;
    const included = async (c: string) => !excluded.has(c) && (await commits.get(c)).time >= since;
    const seen = new Set<string>();
    for (const stack = [...wants]; stack.length > 0; ) {
      const c = stack.pop()!;
      if (seen.has(c)) continue;
      seen.add(c);
      if (slice.due) await slice.next();
      if (!(await included(c))) continue;
      const info = await commits.get(c);
      let cut = false;
      for (const p of info.parents) {
        if (await included(p)) stack.push(p);
        else cut = true;
      }
      if (cut) boundary.add(c);
      else within.add(c);
    }
    if (within.size === 0 && boundary.size === 0) throw refuse(R.invalid_git_request, 'no commits selected for shallow requests');
  }
  const unshallow = req.shallows.filter((s) => within.has(s) || (req.depth === INFINITE_DEPTH && !boundary.has(s)));
  const extraWants: string[] = [];
  for (const s of unshallow) extraWants.push(...(await commits.get(s)).parents);
  return {
    cut: boundary,
    shallow: [...boundary].filter((c) => !clientShallow.has(c)),
    unshallow,
    extraWants,
  };
}

/** The commits to send, in the order found (newest first), and what the walk learned of the client's. */
interface Walk {
  sent: string[];
  /** Commits the client has (reachable from a common have, short of its shallow commits' parents). */
  theirs: Set<string>;
}

/** A max-heap of commits by date (ties: the one found first). */
class DateQueue {
  private readonly items: Array<{ oid: string; time: number; n: number }> = [];
  private counter = 0;
  get size(): number {
    return this.items.length;
  }
  push(oid: string, time: number): void {
    const a = this.items;
    a.push({ oid, time, n: this.counter++ });
    for (let i = a.length - 1; i > 0; ) {
      const up = (i - 1) >> 1;
      if (!this.before(a[i]!, a[up]!)) break;
      [a[i], a[up]] = [a[up]!, a[i]!];
      i = up;
    }
  }
  pop(): string {
    const a = this.items;
    const top = a[0]!;
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.before(a[l]!, a[m]!)) m = l;
        if (r < a.length && this.before(a[r]!, a[m]!)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m]!, a[i]!];
        i = m;
      }
    }
    return top.oid;
  }
  private before(x: { time: number; n: number }, y: { time: number; n: number }): boolean {
    return x.time > y.time || (x.time === y.time && x.n < y.n);
  }
}

/**
 * The commits reachable from `wants` and not from `commons`, walked newest first (git's limited revision
 * walk): the client's side is marked as it is met, and the walk ends once only the client's commits are
 * left to look at. Parents of `cut` commits are not walked; the client's side stops at `clientShallow`.
 */
async function walkCommits(
  commits: Commits,
  wants: string[],
  commons: string[],
  cut: Set<string>,
  clientShallow: Set<string>,
  slice: TimeSlice,
): Promise<Walk> {
  /** 1: to send, 2: the client's. */
  const flag = new Map<string, 1 | 2>();
  const queued = new Set<string>();
  const queue = new DateQueue();
  /** Queued commits flagged 1: the walk goes on while there is one. */
  let interesting = 0;
  const order: string[] = [];
  const push = async (oid: string) => {
    queued.add(oid);
    queue.push(oid, (await commits.get(oid)).time);
  };
  const mark = async (oid: string, f: 1 | 2) => {
    const had = flag.get(oid);
    if (had === 2 || had === f) return;
    flag.set(oid, f);
    if (had === undefined) {
      await push(oid);
      if (f === 1) interesting++;
    } else if (queued.has(oid)) {
      // Met first from a want, now from the client's side: not to send after all.
      interesting--;
    } else {
      // Already walked as one to send: walked again, so that its parents are marked the client's too.
      await push(oid);
    }
  };
  for (const c of commons) await mark(c, 2);
  for (const w of wants) await mark(w, 1);
  while (queue.size > 0 && interesting > 0) {
    if (slice.due) await slice.next();
    const c = queue.pop();
    queued.delete(c);
    const info = await commits.get(c);
    if (flag.get(c) === 2) {
      if (!clientShallow.has(c)) for (const p of info.parents) await mark(p, 2);
      continue;
    }
    interesting--;
    order.push(c);
    if (cut.has(c)) continue;
    for (const p of info.parents) if (!flag.has(p)) await mark(p, 1);
  }
  const theirs = new Set<string>();
  for (const [oid, f] of flag) if (f === 2) theirs.add(oid);
  return { sent: order.filter((c) => flag.get(c) === 1), theirs };
}

/**
 * Every object the pack holds: each commit to send, then the trees and blobs of its tree that its base
 * tree lacks (its first parent's when the client has it or gets it, else a common commit's, else none).
 */
async function objectsOf(
  store: GitStore,
  id: string,
  commits: Commits,
  walk: Walk,
  commons: string[],
  signal: AbortSignal,
  slice: TimeSlice,
): Promise<IdList> {
  const ids = new IdList();
  const sent = new Set(walk.sent);
  const fallback = commons.length > 0 ? (await commits.get(commons[0]!)).tree : null;
  for (const c of walk.sent) ids.add(c);
  // When the client has nothing (a clone), every chain of bases ends in none: the pack is every object of the
  // sent commits' trees, each listed once (IdList), and comparing with a base would only read each tree again.
  const clientHasNothing = fallback === null && walk.theirs.size === 0;
  // The trees level by level (each level's trees read together, in pack order), each beside its base: the
  // tree at the same path in the base tree, whose entries the client has.
  let level: Array<[string, string | null]> = [];
  for (const c of walk.sent) {
    const info = await commits.get(c);
    const parent = info.parents[0];
    const base =
      clientHasNothing ? null : parent !== undefined && (sent.has(parent) || walk.theirs.has(parent)) ? (await commits.get(parent)).tree : fallback;
    level.push([info.tree, base]);
  }
  while (level.length > 0) {
    const todo = level.filter(([tree, base]) => tree !== base && ids.add(tree));
    const next: Array<[string, string | null]> = [];
    for (let i = 0; i < todo.length; i += TREE_BATCH) {
      checkCancelled(signal);
      const part = todo.slice(i, i + TREE_BATCH);
      const need = [...new Set(part.flatMap(([tree, base]) => (base ? [tree, base] : [tree])))];
      const read = await store.readTrees(id, need);
      const trees = new Map(need.map((oid, k) => [oid, read[k]!]));
      for (const [tree, base] of part) {
        if (slice.due) await slice.next();
        const before = base ? new Map(trees.get(base)!.map((e) => [e.path, e])) : null;
        for (const e of trees.get(tree)!) {
          const b = before?.get(e.path);
          if (e.type === 'tree') next.push([e.oid, b?.type === 'tree' ? b.oid : null]);
          else if (e.type === 'blob' && !(b && b.oid === e.oid)) ids.add(e.oid);
        }
      }
    }
    level = next;
  }
  return ids;
}

/** The pack's bytes: its header, each object's record (read a batch at a time, in pack order), its checksum. */
async function* packPieces(
  store: GitStore,
  id: string,
  ids: IdList,
  signal: AbortSignal,
  slice: TimeSlice,
  progress: UploadProgress,
): AsyncGenerator<Uint8Array[], void, void> {
  const codec = store.fs.codec ?? webCodec;
  const hash = sha1Stream(codec);
  const packHead = new Uint8Array(12);
  packHead.set([0x50, 0x41, 0x43, 0x4b], 0);
  const view = new DataView(packHead.buffer);
  view.setUint32(4, 2);
  view.setUint32(8, ids.count);
  hash.update(packHead);
  yield [packHead];
  let size = FIRST_BATCH;
  // Records are handed on in groups of about PIECE_BYTES: one step of the streams below per group, not per
  // object (side-band framing copies them once, lib/git/pkt-line.ts).
  let held: Uint8Array[] = [];
  let heldBytes = 0;
  for (let i = 0; i < ids.count; ) {
    checkCancelled(signal);
    const n = Math.min(size, ids.count - i);
    const oids: string[] = new Array(n);
    for (let k = 0; k < n; k++) oids[k] = ids.hex(i + k);
    // Whole objects of the store's packs are copied record for record; others (deltas of packs git wrote,
    // loose objects) are deflated again.
    const objects = await store.readRecords(id, oids);
    let bytes = 0;
    for (let k = 0; k < n; k++) {
      const o = objects[k]!;
      objects[k] = undefined!;
      let record: Uint8Array;
      if ('record' in o) record = o.record;
      else record = packRecord(PACK_TYPE[o.type], o.content.byteLength, await deflate(codec, o.content));
      bytes += record.byteLength;
      hash.update(record);
      progress.sent++;
      held.push(record);
      heldBytes += record.byteLength;
      if (heldBytes >= PIECE_BYTES) {
        yield held;
        held = [];
        heldBytes = 0;
        checkCancelled(signal);
      }
      if (slice.due) await slice.next();
    }
    i += n;
    size = nextBatch(size, bytes, READ_BATCH);
  }
  if (held.length > 0) yield held;
  yield [hash.digest()];
}
