import * as z from 'zod';
import { Commit } from './common.ts';

export const PushFile = z.object({
  path: z.string(),
  content: z.string().optional(),
  parent_sha: z.string().optional(),
  delete: z.boolean().optional(),
});
export type PushFile = z.infer<typeof PushFile>;

export const PushRequest = z.object({
  author_name: z.string().optional(),
  author_email: z.string().optional(),
  message: z.string().optional(),
  /** (ours) `"sections"`: stale writes are merged with the page at head; any other value is refused (400). */
  merge: z.unknown().optional().meta({ description: '`"sections"`: a stale write is merged with the page at head instead of conflicting. Any other value: 400 `invalid merge mode`.', enum: ['sections'] }),
  files: z.array(PushFile),
});
export type PushRequest = z.infer<typeof PushRequest>;

export const PushedFile = z.object({
  path: z.string(),
  sha: z.string(),
  unchanged: z.literal(true).optional(),
  /** (ours) The write was stale and was merged with the page at head. */
  merged: z.literal(true).optional(),
  /** (ours) The head it was merged with. */
  merged_with: z.string().optional(),
  /** (ours) The merged text that was committed, base64. */
  content: z.string().optional(),
});
export const Conflict = z.object({
  path: z.string(),
  current_sha: z.string(),
  /** base64 */
  current_content: z.string(),
  expected_parent_sha: z.string(),
  /** base64 */
  ancestor_content: z.string().optional(),
  /** (ours) With `merge`: what could not be merged (`frontmatter.<key>`, `_preamble`, a heading). */
  conflicting: z.array(z.string()).optional(),
  /**
   * (ours) The page was deleted after `expected_parent_sha`: `current_sha` is the deleting commit and
   * `current_content` is empty. The page stays deleted.
   */
  deleted: z.literal(true).optional(),
});
export type Conflict = z.infer<typeof Conflict>;

export const PushResponse = z.object({
  new_head: z.string(),
  pushed: z.array(PushedFile),
  conflicts: z.array(Conflict),
});
export type PushResponse = z.infer<typeof PushResponse>;

export const PullResponse = z.object({
  new_head: z.string(),
  files: z.array(z.object({ path: z.string(), content: z.string(), sha: z.string() })),
  deleted: z.array(z.string()),
});
export type PullResponse = z.infer<typeof PullResponse>;

export const PageInfo = Commit.omit({ sha: true }).extend({ path: z.string(), sha: z.string() });
export type PageInfo = z.infer<typeof PageInfo>;
export const PagesResponse = z.object({ pages: z.array(PageInfo) });
export type PagesResponse = z.infer<typeof PagesResponse>;

export const HistoryResponse = z.object({ commits: z.array(Commit) });
export type HistoryResponse = z.infer<typeof HistoryResponse>;

export const TimelineResponse = z.object({ commits: z.array(Commit.extend({ paths: z.array(z.string()) })) });
export type TimelineResponse = z.infer<typeof TimelineResponse>;
