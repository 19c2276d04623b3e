import type { GitStore } from '../git/store.ts';
import type { PathIndex } from './path-index.ts';

/**
 * A push's link and full-text rows are made this long after it at the latest (sooner when a search or a links
 * request of the repository comes first: it waits for them). Pushes in between share the work: a page
 * updated twenty times meanwhile is looked at once, in one transaction with the others.
 */
export const SEARCH_DELAY_MS = 250;
/** Pages remembered per repository for that work; beyond this the whole repository is looked at. */
const SEARCH_PATHS = 2_000;

/** Derived work left behind by the pushes of one repository (see DerivedLater.later). */
interface DerivedDue {
  /** The pages to look at, or null: every page. */
  paths: Set<string> | null;
  timer: ReturnType<typeof setTimeout> | null;
  run: Promise<void> | null;
}

/**
 * The derived rows a push leaves behind head (PathIndex.recordMany with `derived: false`): the links and full
 * text of its pages, off the push's critical path (its commit, head rows, event and webhook outbox are in its
 * own transaction). They are made right after it, for every push of that time at once, or at once when a
 * search or links request of the repository asks first (`now`), so a push is visible to the next such
 * request of anyone. Rows a crash cut are behind head at the next start, whose first access of the repository
 * syncs it (PathIndex.sync makes every missing row): nothing runs at boot. The repository store
 * (lib/repo/repo-store.ts) holds one; on the Workers build it runs inside the repository's Durable Object,
 * whose next call sees what it made.
 */
export class DerivedLater {
  private readonly due = new Map<string, DerivedDue>();

  constructor(
    private readonly git: GitStore,
    private readonly index: PathIndex,
    /** Told when the work of `id` failed: the repository is then synced at its next access. */
    private readonly failed: (id: string) => void,
  ) {}

  /**
   * Remembers that the derived rows of `paths` are behind head (their push recorded none) and makes
   * them within SEARCH_DELAY_MS, under the repository's lock, for every push of that time at once. A
   * failure leaves them to the next sync (the repository is re-checked on its next access).
   */
  later(id: string, paths: Iterable<string>): void {
    let due = this.due.get(id);
    if (!due) this.due.set(id, (due = { paths: new Set(), timer: null, run: null }));
    if (due.paths) {
      for (const p of paths) due.paths.add(p);
      if (due.paths.size > SEARCH_PATHS) due.paths = null;
    }
    if (due.timer === null && due.run === null) {
      due.timer = setTimeout(() => this.run(id), SEARCH_DELAY_MS);
      // Never what keeps a process alive: rows still behind at exit are made by the next start's sync.
      (due.timer as { unref?: () => void }).unref?.();
    }
  }

  /** Starts the derived work due for `id` (none running). */
  private run(id: string): void {
    const due = this.due.get(id);
    if (!due || due.run) return;
    if (due.timer !== null) clearTimeout(due.timer);
    due.timer = null;
    const paths = due.paths ? [...due.paths] : undefined;
    due.paths = new Set();
    due.run = this.git
      .withLock(id, () => this.index.catchUpDerived(id, this.git, paths), { owner: 'derived index', step: 'index pages' })
      .catch(() => {
        // Not made now (lock wait, database closed at shutdown, disk error): the next access syncs.
        this.failed(id);
      })
      .finally(() => {
        due.run = null;
        if (due.paths === null || due.paths.size > 0) this.later(id, []);
        else if (due.timer === null && this.due.get(id) === due) this.due.delete(id);
      });
  }

  /**
   * Makes the derived rows every repository still has due (a graceful stop, before the database closes:
   * the next start then has nothing to catch up).
   */
  async settled(): Promise<void> {
    await Promise.all([...this.due.keys()].map((id) => this.now(id)));
  }

  /**
   * Waits until the derived rows of every page pushed to `id` before the call are made, making them now
   * rather than at their time. Two runs at most: the one already running (which may have started before the
   * last pages came), then one for everything remembered since.
   */
  async now(id: string): Promise<void> {
    for (let round = 0; round < 2; round++) {
      const due = this.due.get(id);
      if (!due) return;
      const started = due.run === null;
      if (started) this.run(id);
      await due.run;
      if (started) return;
    }
  }

  /** Drops the work due for `id` (its repository is being deleted). */
  forget(id: string): void {
    const due = this.due.get(id);
    if (due?.timer) clearTimeout(due.timer);
    this.due.delete(id);
  }
}
