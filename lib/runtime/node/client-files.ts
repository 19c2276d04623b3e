import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ClientFile, ClientFileName, ClientFiles } from '../../usecases/client-package.ts';

/**
 * The project root of this installation: the nearest folder above this module with a package.json (from the
 * sources, lib/runtime/node/ → the checkout; from the bundle, dist/server.cjs → the checkout or the image's /app).
 */
function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

/** dist/client/ of this installation, where the bundle step writes the client package. */
export const defaultClientDir = (): string => join(projectRoot(), 'dist', 'client');

/**
 * The client package from `dir` on disk. A file is read once and kept (at most a few MiB for both) until its
 * size or modification time changes: a rebuild while the server runs is served from the next request on.
 */
export function diskClientFiles(dir: string = defaultClientDir()): ClientFiles {
  const kept = new Map<ClientFileName, { size: number; mtimeMs: number; bytes: Uint8Array<ArrayBuffer> }>();
  return {
    async get(name: ClientFileName): Promise<ClientFile | null> {
      const file = join(dir, name);
      const st = await stat(file).catch(() => null);
      if (!st?.isFile()) return null;
      const have = kept.get(name);
      if (have && have.size === st.size && have.mtimeMs === st.mtimeMs) return { body: have.bytes, size: have.size };
      const data = await readFile(file);
      const bytes = new Uint8Array(data.length);
      bytes.set(data);
      kept.set(name, { size: bytes.length, mtimeMs: st.mtimeMs, bytes });
      return { body: bytes, size: bytes.length };
    },
  };
}
