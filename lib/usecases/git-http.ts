import type { Context } from 'hono';
import type { AppEnv } from '../framework/route.ts';
import { HttpError, refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';
import { readBody } from '../framework/http/body-limit.ts';
import { gitRepoIdParam } from '../framework/http/params.ts';
import { openRepo } from './open-repo.ts';
import { logStreamEnd } from '../framework/http/stream.ts';
import { MAX_REQUEST_BYTES, advertisement, lsRefs, parseUploadRequest, protocolVersion } from '../git/upload-request.ts';
import { concatBytes } from '../util/bytes.ts';

/**
 * Clone and fetch with git (gitprotocol-http, smart HTTP, read-only): the reference advertisement of
 * `GET …/info/refs?service=git-upload-pack` and the answers of `POST …/git-upload-pack`, for protocol v0/v1 and
 * v2 (`Git-Protocol: version=2`), on both builds. The request is parsed and bounded here (lib/git/upload-request.ts);
 * the repository's store negotiates and streams the pack (lib/git/upload-pack.ts: on Workers, its Durable Object).
 * Pushing is refused with a message git shows.
 */

export const ADVERTISEMENT_TYPE = 'application/x-git-upload-pack-advertisement';
export const RESULT_TYPE = 'application/x-git-upload-pack-result';

/** What `git push` is told (git prints a text/plain error body as `remote: …`). */
export const pushRefusal = (id: string) => `kr repositories are written with "kr push" or POST /v1/repos/${id}/sync/push\n`;

/** The repository of a git route (`<id>.git` or `<id>`), opened for reading as every route opens it. */
async function openGitRepo(c: Context<AppEnv>) {
  return openRepo(c, 'repo.read', gitRepoIdParam(c));
}

/** A 403 with the push refusal as text/plain, once the caller may read the repository. */
export async function refusePush(c: Context<AppEnv>): Promise<Response> {
  const { id } = await openGitRepo(c);
  return c.text(pushRefusal(id), 403);
}

/** `GET info/refs`: upload-pack's advertisement; receive-pack's refusal. */
export async function infoRefs(c: Context<AppEnv>): Promise<Response> {
  const service = c.req.query('service');
  if (service === 'git-receive-pack') return refusePush(c);
  if (service !== 'git-upload-pack') {
    throw refuse(R.unsupported_service);
  }
  const { repo } = await openGitRepo(c);
  const head = (await repo.head())?.sha ?? null;
  return c.body(advertisement(protocolVersion(c.req.header('git-protocol')), head) as Uint8Array<ArrayBuffer>, 200, {
    'Content-Type': ADVERTISEMENT_TYPE,
  });
}

/** The request body, inflated when git sent it gzip-compressed (it does past 1 KiB), within MAX_REQUEST_BYTES. */
async function requestBody(c: Context<AppEnv>): Promise<Uint8Array> {
  const body = await readBody(c);
  const encoding = (c.req.header('content-encoding') ?? '').trim().toLowerCase();
  if (encoding === '' || encoding === 'identity') return body;
  if (encoding !== 'gzip' && encoding !== 'x-gzip') throw refuse(R.unsupported_encoding);
  const reader = new Blob([body as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('gzip')).getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_REQUEST_BYTES) throw refuse(R.body_too_large);
      parts.push(value);
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    if (e instanceof HttpError) throw e;
    throw refuse(R.invalid_gzip);
  }
  return concatBytes(parts);
}

/** `POST git-upload-pack`: v2 `ls-refs` or `fetch`, or v0/v1 negotiation and the pack. */
export async function uploadPackAnswer(c: Context<AppEnv>): Promise<Response> {
  const { id, identity, repo } = await openGitRepo(c);
  const deps = c.get('deps');
  const version = protocolVersion(c.req.header('git-protocol'));
  const req = parseUploadRequest(version, await requestBody(c));
  const headers = { 'Content-Type': RESULT_TYPE };
  if (req.command === 'none') return c.body(null, 200, headers);
  if (req.command === 'ls-refs') {
    const head = (await repo.head())?.sha ?? null;
    return c.body(lsRefs(req.lsRefs, head) as Uint8Array<ArrayBuffer>, 200, headers);
  }
  const requestId = c.get('requestId');
  const answer = await repo.uploadPack(req.fetch, {
    requestId,
    onEnd: logStreamEnd(deps.log, { id: requestId, repo: id, what: 'git-fetch' }),
  });
  if (answer.sends && identity.kind === 'user') {
    try {
      await deps.activity.record(id, identity, 'pull', { client: 'git' });
    } catch (e) {
      await answer.body.cancel();
      throw e;
    }
  }
  return c.body(answer.body, 200, headers);
}
