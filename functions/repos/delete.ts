import { defineRoute } from '../../lib/framework/route.ts';
import { deleteRepo, openRepo } from '../../lib/usecases/open-repo.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { DeleteRepoQuery } from '../../schema/wire/repos.ts';

/**
 * DELETE /v1/repos/:id?confirm=<id> — deletes the repository, its history and everything kept about it.
 * Owners and the legacy key; `confirm` must repeat the id.
 */
export default defineRoute({
  method: 'DELETE',
  path: '/v1/repos/:id',
  doc: {
    operationId: 'deleteRepo',
    summary: 'Delete a repository',
    description:
      'The repository, its whole history, its membership, invite keys, activity, search and link rows are gone at once; the id may be created again afterwards. ' +
      'There is no undo: export it first (`GET /v1/repos/{id}/export`). ' +
      "On the hosted build the owners' repository counts drop at once. A push in flight finishes first; later ones find no repository.",
    tag: 'Repositories',
    access: 'owners, and the legacy key.',
    query: DeleteRepoQuery,
    responses: { 204: { description: 'Deleted.' } },
    errors: [R.confirm_required, R.owner_only_delete, R.repo_busy],
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.delete');
    if (c.req.query('confirm') !== id) throw refuse(R.confirm_required);
    await deleteRepo(c.get('deps'), id);
    return c.body(null, 204);
  },
});
