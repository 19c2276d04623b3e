import { defineRoute } from '../../lib/framework/route.ts';
import { exportBundle, openRepo } from '../../lib/usecases/open-repo.ts';
import { logStreamEnd } from '../../lib/framework/http/stream.ts';
import { R } from '../../lib/core/refusals.ts';

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
    errors: [R.owner_only_export, R.repo_empty],
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
