/**
 * The client package the server hands out (docs/api.md "Service", the `/client/kr.tgz` route): `kr` as an npm package
 * (`kr.tgz`) and as one file (`kr.mjs`), built by the bundle step (scripts/client-package.mjs) into
 * dist/client/. Where the bytes come from is the runtime's: the Node build reads dist/client/
 * (lib/runtime/node/client-files.ts), the Workers build its static assets (lib/runtime/workers/client-files.ts).
 */
import { refuse } from '../core/errors.ts';
import { R } from '../core/refusals.ts';

export const CLIENT_FILE_NAMES = ['kr.tgz', 'kr.mjs'] as const;
export type ClientFileName = (typeof CLIENT_FILE_NAMES)[number];

export const CLIENT_FILE_TYPES: Record<ClientFileName, string> = {
  'kr.tgz': 'application/gzip',
  'kr.mjs': 'text/javascript; charset=utf-8',
};

/** The refusal when this server has no built client package (a server run from its sources, say). */
export const CLIENT_NOT_BUILT = R.client_not_built.message;

export interface ClientFile {
  body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array>;
  size: number;
}

export interface ClientFiles {
  /** The file's bytes, or null when it was not built. */
  get(name: ClientFileName): Promise<ClientFile | null>;
}

/** The answer to `GET /client/<name>`: the file, or 404 when this server has none built. */
export async function clientFileResponse(files: ClientFiles | undefined, name: ClientFileName): Promise<ClientFile> {
  const file = files ? await files.get(name) : null;
  if (!file) throw refuse(R.client_not_built);
  return file;
}
