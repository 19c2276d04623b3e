/**
 * Wire types of the section differ (docs/api.md "History"). Plain JSON data: a SectionDiff is sent as
 * is by the diff and evolution endpoints and printed by the clients.
 */
import type { FieldChange } from './frontmatter.ts';

export type { FieldChange } from './frontmatter.ts';

/** A commit on the wire (docs/concepts.md "Commits"): `{"sha","author","email","time","message"}`. */
export interface CommitRef {
  sha: string;
  author: string;
  email: string;
  time: string;
  message: string;
}

export type SectionStatus = 'added' | 'removed' | 'modified' | 'unchanged' | 'renamed';

export interface SectionEntry {
  /** The heading line without trailing blanks (`"## Decision"`), or `_preamble`. */
  heading: string;
  status: SectionStatus;
  /** Old body (trailing blank lines trimmed); omitted when the section is new or its old body is empty. */
  from?: string;
  /** New body; omitted when the section was removed or its new body is empty. */
  to?: string;
  /**
   * Every line prefixed `"  "`, `"- "` or `"+ "`, joined with `\n`; omitted when both bodies are empty, and
   * on a `renamed` entry whose body did not change (the rename alone is the change).
   */
  line_diff?: string;
  /** For `renamed`: the old heading. */
  old_heading?: string;
  /** With blame: the first commit in which the heading appeared. Never on the preamble (it has no heading). */
  introduced_by?: CommitRef;
}

export interface SectionDiff {
  from_sha: string;
  to_sha: string;
  frontmatter: { changed: FieldChange[]; added: FieldChange[]; removed: FieldChange[] };
  preamble?: SectionEntry;
  sections: SectionEntry[];
  parse_fallback?: true;
  /**
   * Work was cut to bound the request: some line diff was reported coarsely, rename detection was skipped,
   * or (added by the diff service) blame was abandoned.
   */
  truncated?: true;
}

export interface DiffShas {
  from_sha?: string;
  to_sha?: string;
}
