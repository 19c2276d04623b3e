import { defineRoute } from '../../lib/framework/route.ts';
import { RESULT_TYPE, uploadPackAnswer } from '../../lib/usecases/git-http.ts';
import { z } from 'zod';
import { R } from '../../lib/core/refusals.ts';

/** POST /v1/repos/:id/git-upload-pack — git's fetch: negotiation and the pack, streamed. */
export default defineRoute({
  method: 'POST',
  path: '/v1/repos/:id/git-upload-pack',
  auth: 'git',
  body: 'git',
  doc: {
    operationId: 'gitUploadPack',
    summary: 'git clone/fetch: negotiation and the pack',
    description:
      "git's upload-pack over smart HTTP, stateless: v2 `ls-refs` and `fetch` (with `Git-Protocol: version=2`), or v0/v1 want/have negotiation (multi_ack_detailed, no-done, side-band-64k). A fetch sends only the objects reachable from the wants and not from the common haves; `shallow`/`deepen`/`deepen-since`/`deepen-not` for `git clone --depth N`. The body may be gzip-compressed (`Content-Encoding: gzip`); at most 2 MiB as sent and inflated, 256 want, 32,768 have and 1,024 shallow lines. The pack streams as it is made. A fetch that sends commits is recorded as a `pull` with `{\"client\": \"git\"}`.",
    tag: 'Git',
    access: 'members; the legacy key on any repository.',
    params: { id: 'The repository id, optionally followed by `.git`.' },
    body: {
      schema: z.string().describe('pkt-lines'),
      contentType: 'application/x-git-upload-pack-request',
      description: "A git client's request (pkt-lines).",
    },
    responses: { 200: { description: 'pkt-lines: acknowledgments, shallow lines and the pack in side-band packets (or v2 `ls-refs`).', contentType: RESULT_TYPE } },
    errors: [
      R.invalid_git_request.example('invalid pkt-line length at byte <n>'),
      R.invalid_git_request.example('pkt-line length <n> over 65520 at byte <n>'),
      R.invalid_git_request.example('truncated pkt-line at byte <n>: length <n>, <n> bytes left'),
      R.invalid_git_request.example('invalid object id in "<line>"'),
      R.invalid_git_request.example('invalid deepen: <value> (a depth is 1 to 2147483647)'),
      R.invalid_git_request.example('not our ref <sha>'),
      R.invalid_git_request.example('no commits selected for shallow requests'),
      R.invalid_git_request.example('deepen and deepen-since (or deepen-not) cannot be used together'),
      R.invalid_git_request.example('deepen-not: unknown reference <name>'),
      R.invalid_gzip,
      R.git_request_too_large.example('have lines', 32768),
      R.git_request_too_large.example('want lines', 256),
      R.git_request_too_large.example('shallow lines', 1024),
      R.git_request_too_large.example('pkt-lines', '<n>'),
      R.unsupported_encoding,
    ],
  },
  handler: uploadPackAnswer,
});
