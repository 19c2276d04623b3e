import { z } from 'zod';
import { defineRoute } from '../../lib/framework/route.ts';
import { openRepo } from '../../lib/usecases/open-repo.ts';
import { pagePathParam } from '../../lib/framework/http/params.ts';
import { refuse } from '../../lib/core/errors.ts';
import { R } from '../../lib/core/refusals.ts';
import { pageAt } from '../../lib/usecases/diff.ts';
import { PageQuery } from '../../schema/wire/query.ts';

/** GET /v1/repos/:id/pages/<path>?at=<sha> — the page's bytes at head (or at a commit); X-Page-SHA = its last commit. */
export default defineRoute({
  method: 'GET',
  path: '/v1/repos/:id/pages/:path{.+}',
  doc: {
    operationId: 'readPage',
    summary: "One page's bytes at head",
    tag: 'Pages',
    access: 'members; the legacy key on any repository.',
    query: PageQuery,
    responses: {
      200: {
        description: 'The page exactly as stored.',
        contentType: 'text/markdown; charset=utf-8',
        schema: z.string(),
        headers: { 'X-Page-SHA': 'The last commit that touched the page (40 hex), at or before `at` when given.' },
      },
    },
    errors: [R.invalid_page_path, R.unknown_sha, R.page_not_found],
  },
  handler: async (c) => {
    const { repo } = await openRepo(c, 'repo.read');
    const path = pagePathParam(c);
    const at = c.req.query('at');
    if (at !== undefined && at !== '') {
      const old = await pageAt(repo, path, at);
      if (!old) throw refuse(R.page_not_found);
      return c.body(old.content as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': 'text/markdown; charset=utf-8', 'X-Page-SHA': old.sha });
    }
    const page = await repo.page(path);
    if (!page) throw refuse(R.page_not_found);
    return c.body(page.content as Uint8Array<ArrayBuffer>, 200, {
      'Content-Type': 'text/markdown; charset=utf-8',
      'X-Page-SHA': page.entry.commit.sha,
    });
  },
});
