import type { Clock } from '../util/clock.ts';
import type { Stmt } from '../db/sql.ts';
import { ConcurrentUpdateError, PathCaseError, RepoNotFoundError, UnknownShaError } from '../core/errors.ts';
import { deliveriesQueued, pushEventData, type EventLog } from '../events/event-log.ts';
import type { WebhookStore } from '../events/webhook-store.ts';
import { mergePagesAsync, type PageMerge } from '../core/differ/merge.ts';
import type { Progress } from '../git/lock.ts';
import type { CommitMeta, FileWrite, GitStore, PathChange } from '../git/store.ts';
import { foldPathCase } from '../core/page/path.ts';
import { TimeSlice } from '../util/time-slice.ts';
import type { PathStatus } from '../../schema/wire/events.ts';
import type { HeadEntry, IndexedCommit, PageContents, PathIndex } from './path-index.ts';
import type { MergedWrite, PushFile, PushOutcome, PushResult } from './types.ts';

/** A group commit takes at most this many queued pushes, */
export const GROUP_PUSHES = 64;
/** … this much pushed content (bytes; one push larger than this still goes, alone), */
export const GROUP_BYTES = 8 * 1024 * 1024;
/** … and this many files. */
export const GROUP_FILES = 20_000;

/** A push waiting for (or taken by) a group commit. */
interface QueuedPush {
  files: PushFile[];
  author: { name: string; email: string };
  message: string;
  activity: ((result: PushResult) => Stmt[]) | undefined;
  bytes: number;
  /** A group has taken it (it is no longer queued). */
  taken: boolean;
  /** Set by the group: the push's own outcome, or the error that refused it alone. */
  result: PushResult | null;
  error: unknown;
  resolve(r: PushResult): void;
  reject(e: unknown): void;
}

/**
 * What a group's earlier pushes changed, ahead of the index (null: deleted), the commit that deleted each
 * page deleted there, and their new blobs.
 */
interface Overlay {
  entries: Map<string, HeadEntry | null>;
  deletedBy: Map<string, IndexedCommit>;
  staged(oid: string): Uint8Array | undefined;
}

/** What a group commit uses of the repository store that holds it (lib/repo/repo-store.ts). */
export interface GroupHost {
  readonly git: GitStore;
  readonly index: PathIndex;
  readonly events: EventLog;
  readonly webhooks: WebhookStore;
  readonly onPublished: ((id: string, info: { deliveries: number }) => Promise<void>) | null;
  /** Waits until the index reflects the branch in git. */
  ready(id: string): Promise<void>;
  /** Forgets what the store knows of the repository's index, so that its next access re-checks it. */
  invalidate(id: string): void;
  /** Retires the head entries the store remembers for the repository (a write changed them). */
  forgetHeadsOf(id: string): void;
  /** The link and full-text rows of `paths` are behind head: made right after (lib/repo/derived-later.ts). */
  derivedLater(id: string, paths: Iterable<string>): void;
}

/**
 * The writes of the repositories: pushes queue per repository, and the first of them to get its lock commits
 * the queued ones together (see commitFiles).
 */
export class GroupCommit {
  /** Pushes waiting for their repository's writer, per repository, oldest first (see commitFiles). */
  private readonly queues = new Map<string, QueuedPush[]>();

  constructor(
    private readonly host: GroupHost,
    private readonly clock: Clock,
  ) {}

  /**
   * Commits every acceptable file as ONE commit. Per file: with a `parentSha`, an existing page whose
   * last commit is not that sha (a unique abbreviation of it counts as equal) is a conflict and is left
   * out; a write whose content equals the page's is `unchanged`; deleting a missing page is `absent`.
   * When every file conflicts or nothing changes, no commit is made. The repository must exist.
   * `owner` (the request id) names the push while it holds the repository's lock (GitStore.locks()).
   * `activity` gives statements recorded in the same transaction as the commit's index rows, when the push
   * made a commit (the activity feed must share the index's database).
   *
   * Group commit: pushes to one repository that queue behind its writer are taken together by the first of
   * them to get the lock (at most GROUP_PUSHES pushes, GROUP_BYTES of content). Each is decided against the
   * head the one before it left and becomes its own commit (parent = the previous one), but their objects
   * are written in one durable write, the branch moves once (to the last), and the index rows of all of them
   * go in one database batch. Each caller's promise settles only once its commit is durable: objects, the
   * branch and its directory flushed, the batch committed.
   */
  async commitFiles(
    id: string,
    files: PushFile[],
    author: { name: string; email: string },
    message: string,
    opts: { owner?: string; activity?: (result: PushResult) => Stmt[] } = {},
  ): Promise<PushResult> {
    if (!(await this.host.git.exists(id))) throw new RepoNotFoundError(id);
    await this.host.ready(id);
    let settle!: { resolve: (r: PushResult) => void; reject: (e: unknown) => void };
    const done = new Promise<PushResult>((resolve, reject) => (settle = { resolve, reject }));
    const me: QueuedPush = {
      files,
      author,
      message,
      activity: opts.activity,
      bytes: files.reduce((n, f) => n + (f.content?.byteLength ?? 0) + f.path.length, 0),
      taken: false,
      result: null,
      error: null,
      ...settle,
    };
    let queue = this.queues.get(id);
    if (!queue) this.queues.set(id, (queue = []));
    queue.push(me);
    try {
      await this.host.git.withLock(
        id,
        async (progress) => {
          // Taken by an earlier holder's group: its answer is already settled (or about to be).
          if (me.taken) return;
          await this.runGroup(id, this.takeGroup(id), progress);
        },
        { owner: opts.owner ?? 'push', step: 'read index' },
      );
    } catch (e) {
      if (!me.taken) {
        // Gave up waiting for the lock before any group took this push: it is no longer queued.
        const q = this.queues.get(id);
        const at = q?.indexOf(me) ?? -1;
        if (at >= 0) q!.splice(at, 1);
        if (q && q.length === 0) this.queues.delete(id);
        throw e;
      }
      // A group holding the lock has this push: its outcome is that group's.
    }
    return done;
  }

  /** The pushes queued for `id`, oldest first, up to the group's bounds (at least one). */
  private takeGroup(id: string): QueuedPush[] {
    const queue = this.queues.get(id) ?? [];
    const group: QueuedPush[] = [];
    let bytes = 0;
    let files = 0;
    while (queue.length > 0 && group.length < GROUP_PUSHES) {
      const next = queue[0]!;
      if (group.length > 0 && (bytes + next.bytes > GROUP_BYTES || files + next.files.length > GROUP_FILES)) break;
      queue.shift();
      next.taken = true;
      bytes += next.bytes;
      files += next.files.length;
      group.push(next);
    }
    if (queue.length === 0) this.queues.delete(id);
    return group;
  }

  /** Commits a group (see commitFiles) and settles every push of it. Holds the repository's lock. */
  private async runGroup(id: string, group: QueuedPush[], progress: Progress): Promise<void> {
    try {
      try {
        await this.commitGroup(id, group, progress);
      } catch (e) {
        // The branch moved under us (another process, or a crash left the index behind): level the
        // index with git and decide every push of the group again, once.
        if (!(e instanceof ConcurrentUpdateError)) throw e;
        progress.step('sync index');
        await this.host.index.sync(id, this.host.git);
        this.host.forgetHeadsOf(id);
        await this.commitGroup(id, group, progress);
      }
    } catch (e) {
      // Whatever happened, the next access re-checks the index against git; no push of the group is
      // answered as if it had landed.
      this.host.invalidate(id);
      for (const p of group) p.reject(e);
      return;
    }
    // A push refused on its own (a path problem) leaves the others alone; the next access re-checks the
    // index all the same, as after any failed push (a refused case twin changed nothing).
    if (group.some((p) => p.error && !(p.error instanceof PathCaseError))) this.host.invalidate(id);
    for (const p of group) {
      if (p.error) p.reject(p.error);
      else p.resolve(p.result!);
    }
  }

  /**
   * Decides every push of the group against the head the previous one leaves, builds their commits as one
   * chain, makes it durable and records it. A push refused on its own gets its error in `error`; an error
   * thrown from here concerns the whole group (nothing of it was answered).
   */
  private async commitGroup(id: string, group: QueuedPush[], progress: Progress): Promise<void> {
    // Deleted while the group waited for the lock: nothing may be written where it was.
    if (!(await this.host.git.exists(id))) throw new RepoNotFoundError(id);
    // The index is level with git (ready()); if git moved since, the ref's check-and-set refuses the
    // chain and runGroup re-syncs and retries.
    progress.step('read index');
    const head = await this.host.index.headCommit(id);
    const batch = this.host.git.batch(id, head?.sha ?? null);
    const overlay: Overlay = { entries: new Map(), deletedBy: new Map(), staged: (oid) => batch.staged(oid) };
    const made: Array<{
      push: QueuedPush;
      meta: CommitMeta;
      changes: PathChange[];
      contents: PageContents;
      /** What the commit did to each path it changed (its push event's `paths`). */
      statuses: Array<{ path: string; status: PathStatus }>;
    }> = [];
    let current: IndexedCommit | null = head;
    for (const p of group) {
      p.result = null;
      p.error = null;
      try {
        const decided = await this.decide(id, p.files, overlay, current?.sha ?? '');
        let commit: IndexedCommit | null = null;
        let changed = new Set<string>();
        if (decided.writes.length > 0) {
          const c = await batch.add({
            writes: decided.writes,
            author: p.author,
            message: p.message,
            time: Math.floor(this.clock.now() / 1000),
          });
          if (c) {
            commit = {
              sha: c.meta.sha,
              seq: (current?.seq ?? 0) + 1,
              author: c.meta.author,
              email: c.meta.email,
              time: c.meta.time,
              message: c.meta.message,
            };
            current = commit;
            changed = new Set(c.changes.map((ch) => ch.path));
            for (const ch of c.changes) {
              overlay.entries.set(ch.path, ch.blob === null ? null : { path: ch.path, blob: ch.blob, commit });
              if (ch.blob === null) overlay.deletedBy.set(ch.path, commit);
              else overlay.deletedBy.delete(ch.path);
            }
            made.push({
              push: p,
              meta: c.meta,
              changes: c.changes,
              contents: new Map(decided.writes.map((w) => [w.path, w.content])),
              statuses: c.changes.map((ch) => ({
                path: ch.path,
                status: ch.blob === null ? 'deleted' : decided.before.has(ch.path) ? 'modified' : 'added',
              })),
            });
          }
        }
        p.result = this.outcome(p.files, decided, commit, changed, current?.sha ?? '');
      } catch (e) {
        if (e instanceof ConcurrentUpdateError) throw e;
        p.error = e;
      }
    }
    if (made.length === 0) return;

    // The index batch (with the pushes' activity rows) is committed while the objects are being flushed,
    // once the branch's lock is held and the check-and-set passed: nothing but a failed write or a crash
    // can keep the branch from moving then, and the index's rows for commits git does not reach are cut
    // back by the next sync (after the failure here, or at boot after a crash). The branch moves only
    // once every object is durable; the answers wait for both.
    // Each commit's push event and webhook deliveries go into the same transaction (held until the branch
    // has moved: see published()).
    const extra: Stmt[] = [];
    for (const m of made) {
      if (m.push.activity) extra.push(...m.push.activity(m.push.result!));
      const merged = m.push.result!.outcomes.filter((o) => o.kind === 'committed' && o.merged).map((o) => o.path);
      const data = pushEventData(id, m.meta, m.statuses, [...new Set(merged)]);
      extra.push(...this.host.events.appendStmts(id, 'push', data, { commitSha: m.meta.sha }));
    }
    let deliveries = 0;
    let recorded: IndexedCommit[] = [];
    progress.step('prepare commit');
    try {
      await batch.prepare(progress, async () => {
        recorded = await progress.track(
          'record index',
          this.host.index.recordMany(
            id,
            made.map((m) => ({ meta: m.meta, changes: m.changes, contents: m.contents })),
            extra,
            { derived: false, head, extraResults: (results) => (deliveries = deliveriesQueued(extra, results)) },
          ),
        );
      });
    } finally {
      this.host.forgetHeadsOf(id);
    }
    progress.step('publish commit');
    await progress.track('move main', batch.publish());
    this.host.derivedLater(id, made.flatMap((m) => m.changes.map((c) => c.path)));
    // The commits as recorded: their sequence numbers follow `head`, read under this lock.
    recorded.forEach((c, i) => {
      const r = made[i]!.push.result!;
      r.commit = c;
    });
    await this.published(id, made.map((m) => m.meta.sha), deliveries);
  }

  /**
   * After a group's commits are published, under the repository's lock: their held deliveries become due and
   * their events are announced to the open streams. The commits landed whatever happens here: a release that
   * fails is made later (releaseHeld, at the deliverer's next run or after a restart).
   */
  private async published(id: string, shas: string[], deliveries: number): Promise<void> {
    if (deliveries > 0) {
      try {
        await this.host.webhooks.release(id, shas);
      } catch {
        // left held: releaseHeld makes them due
      }
    }
    try {
      await this.host.onPublished?.(id, { deliveries });
    } catch {
      // the listener reports its own failures; the push stands
    }
  }

  /** One push's files against the head the group has reached (the index plus `overlay`). */
  private async decide(
    id: string,
    files: PushFile[],
    overlay: Overlay,
    head: string,
  ): Promise<{ outcomes: Array<PushOutcome | null>; writes: FileWrite[]; before: Map<string, HeadEntry>; merged: Map<string, MergedWrite> }> {
    const outcomes: Array<PushOutcome | null> = [];
    const writes: FileWrite[] = [];
    const merged = new Map<string, MergedWrite>();
    // The last write of a path wins when a batch names it twice.
    const seen = new Map<string, number>();
    // One query for every page named; an unchanged page's entry is still this one after the commit.
    const before = await this.host.index.entries(id, files.map((f) => f.path));
    if (overlay.entries.size > 0) {
      for (const f of files) {
        const entry = overlay.entries.get(f.path);
        if (entry === null) before.delete(f.path);
        else if (entry !== undefined) before.set(f.path, entry);
      }
    }
    const slice = new TimeSlice();
    const parents = new Map<string, IndexedCommit | null>();
    for (const f of files) {
      if (slice.due) await slice.next();
      const current = before.get(f.path) ?? null;
      let content = f.content;
      // A write of a page that is gone, based on a version from before it went: the deletion is news to the
      // writer, never undone silently (with or without merge). Deleting it again stays a no-op.
      if (f.parentSha !== undefined && current === null && f.content !== null) {
        const gone = await this.deletedSince(id, f, overlay, parents);
        if (gone) {
          outcomes.push(gone);
          continue;
        }
      }
      if (f.parentSha !== undefined && current && !(await this.sameCommit(id, f.parentSha, current.commit.sha))) {
        const conflict = await this.conflict(id, f, current, overlay);
        const merge = f.merge && f.content !== null ? await mergeWrite(conflict, f.content) : null;
        if (!merge?.clean) {
          if (merge) conflict.conflicting = merge.conflicting;
          delete conflict.parentResolved;
          outcomes.push(conflict);
          continue;
        }
        content = encoder.encode(merge.text);
        merged.set(f.path, { with: head, content });
      } else merged.delete(f.path);
      const at = seen.get(f.path);
      if (at !== undefined) writes[at] = { path: f.path, content };
      else {
        seen.set(f.path, writes.length);
        writes.push({ path: f.path, content });
      }
      outcomes.push(null);
    }
    // Under the lock, against the head this commit builds on: two pushes of `A.md` and `a.md` cannot both land.
    await this.refuseCaseTwins(id, writes, before, overlay);
    return { outcomes, writes, before, merged };
  }

  /** A push's result once its commit (or none) is known. */
  private outcome(
    files: PushFile[],
    decided: { outcomes: Array<PushOutcome | null>; before: Map<string, HeadEntry>; merged: Map<string, MergedWrite> },
    commit: IndexedCommit | null,
    changed: Set<string>,
    head: string,
  ): PushResult {
    const result: PushOutcome[] = [];
    const committedPaths: string[] = [];
    const listed = new Set<string>();
    for (let i = 0; i < files.length; i++) {
      const f = files[i]!;
      const o = decided.outcomes[i];
      if (o) {
        result.push(o);
      } else if (changed.has(f.path)) {
        const merged = decided.merged.get(f.path);
        result.push(merged ? { path: f.path, kind: 'committed', merged } : { path: f.path, kind: 'committed' });
        if (!listed.has(f.path)) {
          listed.add(f.path);
          committedPaths.push(f.path);
        }
      } else if (f.content === null) {
        result.push({ path: f.path, kind: 'absent' });
      } else {
        const entry = decided.before.get(f.path);
        const merged = decided.merged.get(f.path);
        if (!entry) result.push({ path: f.path, kind: 'absent' });
        else result.push(merged ? { path: f.path, kind: 'unchanged', sha: entry.commit.sha, merged } : { path: f.path, kind: 'unchanged', sha: entry.commit.sha });
      }
    }
    return { head, commit, outcomes: result, committedPaths };
  }

  /**
   * Throws PathCaseError when a page this commit creates has the case-folded path of a different page
   * that is at head and not deleted by this same commit, or of another page this commit creates.
   * Updating a page under its exact path, and deleting, never collide. Costs one indexed lookup per
   * created page (git_head.path_fold), whatever the size of the repository.
   */
  private async refuseCaseTwins(id: string, writes: FileWrite[], before: Map<string, HeadEntry>, overlay: Overlay): Promise<void> {
    const created = writes.filter((w) => w.content !== null && !before.has(w.path)).map((w) => w.path);
    if (created.length === 0) return;
    const deleted = new Set(writes.filter((w) => w.content === null).map((w) => w.path));
    const folds = created.map(foldPathCase);
    const atHead = await this.host.index.caseTwins(id, folds);
    if (overlay.entries.size > 0) {
      // The pages earlier pushes of the group created or deleted, which the index does not hold yet.
      const wanted = new Set(folds);
      for (const [path, entry] of overlay.entries) {
        const key = foldPathCase(path);
        if (!wanted.has(key)) continue;
        const list = (atHead.get(key) ?? []).filter((p) => p !== path);
        if (entry !== null) list.push(path);
        atHead.set(key, list.sort());
      }
    }
    const claimed = new Map<string, string>();
    for (let i = 0; i < created.length; i++) {
      const path = created[i]!;
      const key = folds[i]!;
      const existing = atHead.get(key)?.find((p) => p !== path && !deleted.has(p)) ?? claimed.get(key);
      if (existing !== undefined) throw new PathCaseError(path, existing);
      claimed.set(key, path);
    }
  }

  private async sameCommit(id: string, given: string, actual: string): Promise<boolean> {
    if (!/^[0-9a-fA-F]{1,40}$/.test(given)) return false;
    const g = given.toLowerCase();
    if (g === actual) return true;
    if (!actual.startsWith(g)) return false;
    try {
      return (await this.host.index.resolve(id, g)).sha === actual;
    } catch (e) {
      if (e instanceof UnknownShaError) return false;
      throw e;
    }
  }

  /**
   * The conflict of a write of a page absent at head whose `parentSha` resolves and is older than the
   * page's deletion (by an earlier push of the group, or the last commit that touched it in the index);
   * null when the parent does not resolve, the page never existed, or it was deleted at or before the
   * parent (the writer saw the deletion). `parents` caches the push's resolved parents.
   */
  private async deletedSince(
    id: string,
    f: PushFile,
    overlay: Overlay,
    parents: Map<string, IndexedCommit | null>,
  ): Promise<ConflictOutcome | null> {
    const given = f.parentSha!.toLowerCase();
    let parent = parents.get(given);
    if (parent === undefined) {
      try {
        parent = await this.host.index.resolve(id, given);
      } catch (e) {
        if (!(e instanceof UnknownShaError)) throw e;
        parent = null;
      }
      parents.set(given, parent);
    }
    if (parent === null) return null;
    // Deleted by an earlier push of this group: after any parent the index resolves.
    let deletion = overlay.entries.get(f.path) === null ? (overlay.deletedBy.get(f.path) ?? null) : null;
    if (deletion === null) {
      const last = await this.host.index.lastTouch(id, f.path, Number.MAX_SAFE_INTEGER);
      if (!last || last.blob !== null || last.commit.seq <= parent.seq) return null;
      deletion = last.commit;
    }
    const out: ConflictOutcome = {
      path: f.path,
      kind: 'conflict',
      currentSha: deletion.sha,
      currentContent: new Uint8Array(0),
      expectedParentSha: f.parentSha!,
      deleted: true,
    };
    const ancestor = await this.host.git.readFileAt(id, parent.sha, f.path);
    if (ancestor) out.ancestorContent = ancestor;
    return out;
  }

  private async conflict(id: string, f: PushFile, current: HeadEntry, overlay: Overlay): Promise<ConflictOutcome> {
    const out: ConflictOutcome = {
      path: f.path,
      kind: 'conflict',
      currentSha: current.commit.sha,
      // A page an earlier push of the group wrote is not on disk yet.
      currentContent: overlay.staged(current.blob) ?? (await this.host.git.readBlob(id, current.blob)),
      expectedParentSha: f.parentSha!,
    };
    try {
      const ancestor = await this.host.index.resolve(id, f.parentSha!);
      const content = await this.host.git.readFileAt(id, ancestor.sha, f.path);
      if (content) out.ancestorContent = content;
      out.parentResolved = true;
    } catch (e) {
      if (!(e instanceof UnknownShaError)) throw e;
    }
    return out;
  }
}

/** A conflict, and whether its parent resolved (a merge needs it: the page's base is its text there, or empty). */
type ConflictOutcome = Extract<PushOutcome, { kind: 'conflict' }> & { parentResolved?: boolean };

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();

/**
 * The section merge of a stale write (docs/api.md, the push route's "Section merge"): base = the file at the parent (empty when it
 * did not exist there), theirs = the page at head, ours = the pushed content. Null when there is nothing to
 * merge against (the parent does not resolve) or a side is not UTF-8 text: the write stays a plain conflict.
 * The merge hands the event loop a turn every few milliseconds, so a large page does not hold other requests.
 */
async function mergeWrite(conflict: ConflictOutcome, ours: Uint8Array): Promise<PageMerge | null> {
  if (!conflict.parentResolved) return null;
  let base: string;
  let theirs: string;
  let mine: string;
  try {
    base = conflict.ancestorContent ? strictUtf8.decode(conflict.ancestorContent) : '';
    theirs = strictUtf8.decode(conflict.currentContent);
    mine = strictUtf8.decode(ours);
  } catch {
    return null;
  }
  return mergePagesAsync(base, theirs, mine);
}
