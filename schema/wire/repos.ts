import * as z from 'zod';
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
  action: z.enum(['push', 'pull', 'import', 'member']),
  detail: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      'A push: `paths`, `message` (and `merged`); a pull: `client`; an import: `commits`, `pages`, `head`; (ours) a membership change (`member`): the member it is about, `user_id`, `email`, `change` (`joined`, `removed` or `role`) and `role` (the role held afterwards, not for a removal).',
    ),
  created_at: z.number().int(),
  /** (ours) A push's commit. */
  sha: z.string().optional().describe('A push: the commit it made, as the event stream\'s push event names it (`sha`).'),
});
export type ActivityEvent = z.infer<typeof ActivityEvent>;
export const ActivityResponse = z.object({ events: z.array(ActivityEvent), total: z.number().int() });
export type ActivityResponse = z.infer<typeof ActivityResponse>;

/** (ours) `DELETE /v1/repos/:id`: the deletion is confirmed by repeating the id. */
export const DeleteRepoQuery = z.object({
  confirm: z.string().describe('The repository id again, exactly; missing or different: 400 `confirm the deletion with ?confirm=<id>`.'),
});

/** (ours) `POST /v1/repos/:id/import`: which branch of the bundle becomes `main`. */
export const ImportQuery = z.object({
  branch: z
    .string()
    .optional()
    .describe("The bundle's branch to import (`main`, or a full ref name); default: the bundle's `HEAD`, else its only branch, else `main`."),
});

/** (ours) `POST /v1/repos/:id/import`: the body, a git bundle's bytes. */
export const ImportBody = z.string().meta({ format: 'binary' }).describe('A git bundle (v2 or v3), as `git bundle create` or the export makes it.');

/** (ours) `POST /v1/repos/:id/import`: what was imported. */
export const ImportResponse = z.object({
  id: z.string(),
  head: z.string().describe('The imported branch\'s head: now `refs/heads/main`.'),
  commits: z.number().int().describe('Commits in its history.'),
  pages: z.number().int().describe('Files at its head.'),
});
export type ImportResponse = z.infer<typeof ImportResponse>;
