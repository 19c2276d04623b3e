import type { Stmt } from './sql.ts';

/**
 * What the accounts database holds for one repository, as the statements that delete it when the
 * repository is deleted (docs/api.md "Repositories", the delete route): membership, invite keys and the removals they
 * remember, the activity feed, and the hosted build's registry row. Run as one batch, with the repository's
 * own deletion (lib/repo/repo-store.ts on Node, lib/runtime/workers/remote-repos.ts on Workers). A table that
 * gains rows per repository (`repo_id`) belongs in this list.
 *
 * The derived index (commits, head, full-text and link rows) is not here: it lives beside the git objects
 * (lib/repo/path-index.ts `removalStmts` on Node; the repository's Durable Object storage on Workers).
 */
export function repositoryRowsDeletion(repoId: string): Stmt[] {
  return [
    { sql: 'DELETE FROM invite_key_exclusions WHERE key_id IN (SELECT id FROM invite_keys WHERE repo_id = ?)', args: [repoId] },
    { sql: 'DELETE FROM invite_keys WHERE repo_id = ?', args: [repoId] },
    { sql: 'DELETE FROM members WHERE repo_id = ?', args: [repoId] },
    { sql: 'DELETE FROM activity WHERE repo_id = ?', args: [repoId] },
    { sql: 'DELETE FROM repo_registry WHERE id = ?', args: [repoId] },
  ];
}
