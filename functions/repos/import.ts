import { defineRoute } from '../../lib/framework/route.ts';
import { importRepo } from '../../lib/usecases/open-repo.ts';
import { streamBody } from '../../lib/framework/http/body-limit.ts';
import { ImportBody, ImportQuery, ImportResponse } from '../../schema/wire/repos.ts';
import { R } from '../../lib/core/refusals.ts';

/**
 * POST /v1/repos/:id/import — the repository becomes a git bundle's history, commit for commit. Into a new
 * repository (the importer becomes its owner) or an owner's empty one; the body is streamed to storage and
 * checked whole before anything is kept.
 */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/import',
  body: 'import',
  doc: {
    operationId: 'importRepo',
    summary: "Import a git bundle's history",
    description:
      'The body is a git bundle (v2 or v3: `git bundle create`, or `GET /v1/repos/{id}/export` of either build). ' +
      'Its branch (`?branch=`, else its `HEAD`, else its only branch, else `main`) becomes `refs/heads/main` with the same shas, authors, dates and messages. ' +
      'Everything is checked before anything is kept: the bundle and its pack, every object against its id, every path of every commit against the page path rules, each file against the size a push allows, no symlink or submodule, no prerequisites. ' +
      'A refusal leaves nothing behind (no repository, no member row). History, timeline, blame, search, links and pulls cover the imported history at once.',
    tag: 'Repositories',
    access: 'a missing repository: any real user (who becomes its owner) or the legacy key; an existing one: its owners, while it has no commit.',
    query: ImportQuery,
    body: {
      schema: ImportBody,
      contentType: 'application/x-git-bundle',
      description: 'A git bundle (binary), at most SERVICE_MAX_IMPORT_BYTES.',
    },
    responses: { 201: { description: 'Imported.', schema: ImportResponse } },
    errors: [
      R.invalid_bundle,
      R.bundle_prerequisites,
      R.bundle_no_branch,
      R.import_invalid_path,
      R.import_symlink,
      R.import_submodule,
      R.owner_only_import,
      R.repo_not_empty,
      R.repo_exists,
      R.import_too_large,
      R.import_file_too_large,
      R.repo_busy,
    ],
    createsRepo: true,
    quota: ['quota_repos'],
  },
  handler: async (c) => {
    const branch = c.req.query('branch');
    const result = await importRepo(c, { branch, readBody: (onChunk) => streamBody(c, onChunk) });
    return c.json(result, 201);
  },
});
