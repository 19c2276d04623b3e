import type { PullPages } from '../repo/types.ts';
import { checkCancelled, pieceStream, type StreamWatch } from '../framework/http/stream.ts';
import type { PullResponse } from '../../schema/wire/sync.ts';
import { utf8 } from '../util/bytes.ts';
import { TimeSlice } from '../util/time-slice.ts';

/**
 * A pull's answer (docs/api.md "Pages", the pull route) as the client reads it: `new_head`, the pages batch by batch as
 * RepoStore.pullPages reads them (each decoded and serialised only when its turn comes), then the deleted
 * paths. The bytes are exactly JSON.stringify of the whole answer, which is never held: memory has one batch
 * of pages and one chunk of text, whatever the repository's size.
 */
export function pullBody(pull: PullPages, opts: { onEnd?: StreamWatch } = {}): ReadableStream<Uint8Array> {
  const sent = { pages: 0 };
  return pieceStream((signal) => pullPieces(pull, signal, sent), { onEnd: opts.onEnd, detail: () => ({ pages: sent.pages }) });
}

/** Characters of pages gathered before they are handed on. */
const PIECE_CHARS = 32 * 1024;

async function* pullPieces(pull: PullPages, signal: AbortSignal, sent: { pages: number }): AsyncGenerator<string, void, void> {
  yield `{"new_head":${JSON.stringify(pull.head?.sha ?? '')},"files":[`;
  let sep = '';
  // Serialising a batch is work on this thread: other requests get turns between slices of it.
  const slice = new TimeSlice();
  const rest = pull.rest(signal);
  // Pages are gathered into pieces of about PIECE_CHARS: one step of the stream per piece, not per page.
  let piece = '';
  for (let batch: IteratorResult<PullPages['first']> = { done: false, value: pull.first }; !batch.done; batch = await rest.next()) {
    for (const p of batch.value) {
      const file: PullResponse['files'][number] = { path: p.entry.path, content: utf8(p.content), sha: p.entry.commit.sha };
      piece += sep + JSON.stringify(file);
      sep = ',';
      sent.pages++;
      if (piece.length >= PIECE_CHARS) {
        yield piece;
        piece = '';
      }
      if (slice.due) {
        await slice.next();
        checkCancelled(signal);
      }
    }
    if (piece !== '') {
      yield piece;
      piece = '';
    }
    checkCancelled(signal);
  }
  yield '],"deleted":[';
  sep = '';
  for await (const paths of pull.deleted(signal)) {
    for (const path of paths) {
      yield sep + JSON.stringify(path);
      sep = ',';
    }
  }
  yield ']}';
}
