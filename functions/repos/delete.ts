import { defineRoute } from '../../lib/route.ts';
import { deleteRepo, openRepo } from '../../lib/repos.ts';
import { HttpError } from '../../lib/errors.ts';
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
    errors: {
      400: ['invalid repo id', 'confirm the deletion with ?confirm=<id>'],
      403: ['not a member of this repo', 'only an owner can delete a repository'],
      404: ['repo not found'],
      503: ['repository busy, retry'],
    },
  },
  handler: async (c) => {
    const { id } = await openRepo(c, 'repo.delete');
    if (c.req.query('confirm') !== id) throw new HttpError(400, 'confirm the deletion with ?confirm=<id>');
    await deleteRepo(c.get('deps'), id);
    return c.body(null, 204);
  },
});
