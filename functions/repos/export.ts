import { defineRoute } from '../../lib/route.ts';
import { exportBundle, openRepo } from '../../lib/repos.ts';
import { logStreamEnd } from '../../lib/http/stream.ts';

/**
 * GET /v1/repos/:id/export — the whole repository as a git bundle (v2): `git clone <id>.bundle` restores
 * every page and the whole history. Owners and the legacy key.
 */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/export',
  doc: {
    operationId: 'exportRepo',
    summary: 'The whole repository as a git bundle',
    description: 'A git bundle (v2) of `refs/heads/main` and every object it reaches: `git clone <id>.bundle` restores every page and the whole history.',
    tag: 'Repositories',
    access: 'owners, and the legacy key.',
    responses: {
      200: {
        description: 'The bundle.',
        contentType: 'application/x-git-bundle',
        headers: { 'Content-Disposition': '`attachment; filename="<id>.bundle"`' },
      },
    },
    errors: {
      400: ['invalid repo id'],
      403: ['not a member of this repo', 'only an owner can export'],
      404: ['repo not found'],
      409: ['repo is empty: nothing to export'],
    },
  },
  handler: async (c) => {
    const { id, repo } = await openRepo(c, 'repo.export');
    const requestId = c.get('requestId');
    // Streamed as it is made (lib/git/bundle.ts): memory stays flat whatever the repository's size, and the
    // work stops when the client goes away.
    const bundle = await exportBundle(repo, {
      requestId,
      onEnd: logStreamEnd(c.get('deps').log, { id: requestId, repo: id, what: 'export' }),
    });
    return c.body(bundle, 200, {
      'Content-Type': 'application/x-git-bundle',
      'Content-Disposition': `attachment; filename="${id}.bundle"`,
    });
  },
});
