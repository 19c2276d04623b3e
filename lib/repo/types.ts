import type { HeadEntry, IndexedCommit } from './path-index.ts';

/**
 * The shapes a push and a pull take between the repository store (lib/repo/repo-store.ts), the Repos
 * interface (lib/repo/repos.ts) and the modules that answer them (lib/usecases/sync.ts, lib/usecases/pull-body.ts).
 */

export interface PushFile {
  path: string;
  /** New content, or null to delete the page. */
  content: Uint8Array | null;
  /** The commit the client last saw for this page; omitted = overwrite. */
  parentSha?: string;
  /**
   * Section merge (docs/api.md, the push route's "Section merge"): a write whose `parentSha` is stale is merged three ways with the
   * page at head instead of being a conflict, when it merges cleanly (lib/core/differ/merge.ts).
   */
  merge?: boolean;
}

/** A stale write merged with the page at head: the head it was merged with, and the merged text. */
export interface MergedWrite {
  with: string;
  content: Uint8Array;
}

export type PushOutcome =
  | { path: string; kind: 'committed'; merged?: MergedWrite }
  | { path: string; kind: 'unchanged'; sha: string; merged?: MergedWrite }
  | { path: string; kind: 'absent' }
  | {
      path: string;
      kind: 'conflict';
      currentSha: string;
      currentContent: Uint8Array;
      expectedParentSha: string;
      ancestorContent?: Uint8Array;
      /** With `merge`: what could not be merged (`frontmatter.<key>`, `_preamble`, a heading). */
      conflicting?: string[];
      /** The page was deleted after `expectedParentSha`, by `currentSha` (`currentContent` is empty). */
      deleted?: true;
    };

export interface PushResult {
  /** The branch head after the push ('' for a repository that still has no commit). */
  head: string;
  /** The commit made, or null when nothing was committed. */
  commit: IndexedCommit | null;
  outcomes: PushOutcome[];
  /** The paths the commit changed, in push order. */
  committedPaths: string[];
}

/** A page of a pull, with its bytes. */
export interface PulledPage {
  entry: HeadEntry;
  content: Uint8Array;
}

/** A pull fixed at the head when it began (RepoStore.pullPages). */
export interface PullPages {
  /** That head (null: the repository has no commit, and the pull no page). */
  head: IndexedCommit | null;
  /** The first batch of pages, already read; empty when the pull has none. */
  first: PulledPage[];
  /** The batches after `first`, in path order, each read when asked for; stops once `signal` is aborted. */
  rest(signal?: AbortSignal): AsyncGenerator<PulledPage[], void, void>;
  /** The paths deleted since (a pull since a commit), in path order, a batch at a time. */
  deleted(signal?: AbortSignal): AsyncGenerator<string[], void, void>;
}
