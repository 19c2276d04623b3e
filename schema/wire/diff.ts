import * as z from 'zod';
import { Commit } from './common.ts';

/**
 * Wire schemas of the diff and evolution endpoints (docs/api.md "History"), shared with the clients.
 * They mirror lib/core/differ/types.ts, the producer's own types.
 */

export const SectionStatus = z.enum(['added', 'removed', 'modified', 'unchanged', 'renamed']);
export type SectionStatus = z.infer<typeof SectionStatus>;

/** `F`: one frontmatter change; list fields give one entry per added or removed member. */
export const FieldChange = z.object({
  field: z.string(),
  from: z.unknown().optional(),
  to: z.unknown().optional(),
});
export type FieldChange = z.infer<typeof FieldChange>;

/** `S`: one section (or the `_preamble`) entry. */
export const SectionEntry = z.object({
  heading: z.string(),
  status: SectionStatus,
  from: z.string().optional(),
  to: z.string().optional(),
  line_diff: z.string().optional(),
  old_heading: z.string().optional(),
  introduced_by: Commit.optional(),
});
export type SectionEntry = z.infer<typeof SectionEntry>;

export const SectionDiff = z.object({
  from_sha: z.string(),
  to_sha: z.string(),
  frontmatter: z.object({
    changed: z.array(FieldChange),
    added: z.array(FieldChange),
    removed: z.array(FieldChange),
  }),
  preamble: SectionEntry.optional(),
  sections: z.array(SectionEntry),
  parse_fallback: z.literal(true).optional(),
  /**
   * Work was cut to bound the request (ours): some line diff was reported coarsely, rename detection was
   * skipped, or blame was abandoned (no `introduced_by` then).
   */
  truncated: z.literal(true).optional(),
});
export type SectionDiff = z.infer<typeof SectionDiff>;

export const EvolutionEntry = z.object({ commit: Commit, diff: SectionDiff });
export type EvolutionEntry = z.infer<typeof EvolutionEntry>;

export const EvolutionResponse = z.object({
  path: z.string(),
  entries: z.array(EvolutionEntry),
  /**
   * Later entries were left out (ours): the response's size cap (multi-megabyte pages) or the request's
   * work budget stopped it; ask with a lower limit.
   */
  truncated: z.literal(true).optional(),
});
export type EvolutionResponse = z.infer<typeof EvolutionResponse>;
