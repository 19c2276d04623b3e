import { z } from 'zod';
import { Commit } from './common.ts';

export const CreateRepoRequest = z.object({ id: z.string() });
export const CreateRepoResponse = z.object({ id: z.string(), role: z.literal('owner') });
export const LegacyCreateRepoResponse = z.object({ repo_id: z.string() });

export const RepoSummary = z.object({
  id: z.string(),
  page_count: z.number().int(),
  last_commit: Commit.optional(),
  role: z.enum(['owner', 'member']).optional(),
});
export type RepoSummary = z.infer<typeof RepoSummary>;
export const ReposResponse = z.object({ repos: z.array(RepoSummary) });
export type ReposResponse = z.infer<typeof ReposResponse>;

export const ActivityEvent = z.object({
  user_id: z.string(),
  email: z.string(),
  action: z.enum(['push', 'pull']),
  detail: z.record(z.string(), z.unknown()).optional(),
  created_at: z.number().int(),
  /** (ours) A push's commit. */
  sha: z.string().optional().describe('A push: the commit it made, as the event stream\'s push event names it (`sha`).'),
});
export const ActivityResponse = z.object({ events: z.array(ActivityEvent), total: z.number().int() });
export type ActivityResponse = z.infer<typeof ActivityResponse>;

/** (ours) `DELETE /v1/repos/:id`: the deletion is confirmed by repeating the id. */
export const DeleteRepoQuery = z.object({
  confirm: z.string().describe('The repository id again, exactly; missing or different: 400 `confirm the deletion with ?confirm=<id>`.'),
});
