import * as nodeFs from 'node:fs';
import { open, rm, type FileHandle } from 'node:fs/promises';
import { inflateSync } from 'node:zlib';
import type { ImportRuntime, ImportSpool } from '../../repo/import-store.ts';
import type { ObjectInflater } from '../../git/import.ts';

/**
 * The Node build's import bodies (lib/repo/import-store.ts): each is written, as it arrives, to a file of its own
 * in the repositories' directory (`<root>/.import-<random>`, which no listing takes for a repository and
 * which GitStore.recoverAll and recoverLater remove at boot), flushed once whole, and read back by byte range. Memory holds
 * one chunk in flight, whatever the bundle's size. The pack is copied from it into the repository
 * (`copyRange`), never read whole.
 */
export function nodeImportRuntime(root: string): ImportRuntime {
  return {
    inflater: nodeInflater,
    async spool() {
      nodeFs.mkdirSync(root, { recursive: true });
      const path = `${root}/.import-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
      const handle = await open(path, 'wx+');
      return new FileSpool(path, handle);
    },
  };
}

/** zlib's inflate, which stops at the end of the record's stream and says how much of `data` it took. */
export const nodeInflater: ObjectInflater = (data, maxBytes) => {
  const out = inflateSync(data, { info: true, maxOutputLength: Math.max(1, maxBytes) }) as unknown as {
    buffer: Buffer;
    engine: { bytesWritten: number };
  };
  return { data: out.buffer, consumed: out.engine.bytesWritten };
};

/** Bytes copied at once (copyRange). */
const COPY_BYTES = 1024 * 1024;

class FileSpool implements ImportSpool {
  size = 0;
  #closed = false;
  constructor(
    readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  async append(chunk: Uint8Array): Promise<void> {
    let at = 0;
    while (at < chunk.byteLength) {
      const { bytesWritten } = await this.handle.write(chunk, at, chunk.byteLength - at, this.size);
      at += bytesWritten;
      this.size += bytesWritten;
    }
  }

  async seal(): Promise<void> {
    await this.handle.datasync();
  }

  async read(position: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.size - position));
    const buf = Buffer.allocUnsafe(n);
    let got = 0;
    while (got < n) {
      const { bytesRead } = await this.handle.read(buf, got, n - got, position + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return got === n ? buf : buf.subarray(0, got);
  }

  /** Bytes `start` to `end` of the spool as a new file `to`, flushed. */
  async copyRange(start: number, end: number, to: string): Promise<void> {
    const out = await open(to, 'wx');
    try {
      for (let at = start; at < end; ) {
        const chunk = await this.read(at, Math.min(COPY_BYTES, end - at));
        if (chunk.byteLength === 0) throw new Error('import spool shorter than expected');
        let w = 0;
        while (w < chunk.byteLength) w += (await out.write(chunk, w, chunk.byteLength - w, at - start + w)).bytesWritten;
        at += chunk.byteLength;
      }
      await out.datasync();
    } finally {
      await out.close();
    }
  }

  async discard(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      await this.handle.close().catch(() => undefined);
    }
    await rm(this.path, { force: true });
  }
}
