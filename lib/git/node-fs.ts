import * as nodeFs from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import type { StoreFs } from './fs.ts';
import type { ObjectCodec } from './objects.ts';
import { mapBounded } from '../bounded.ts';

/** File operations one durable write keeps in flight at most. */
const FILES_IN_FLIGHT = 64;

/** Synchronous SHA-1 and deflate: a fraction of a millisecond per object. */
export const nodeCodec: ObjectCodec = {
  hashAndDeflate(data) {
    return { oid: createHash('sha1').update(data).digest('hex'), deflated: deflateSync(data) };
  },
};

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException)?.code === 'ENOENT';

async function fsyncPath(path: string, flags: string): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function writeAndSync(path: string, data: Uint8Array, flags: string): Promise<void> {
  const fh = await open(path, flags, 0o644);
  try {
    await fh.writeFile(data);
    // fdatasync: the data and the size needed to read it back; the timestamps need not be durable.
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** The git store's filesystem on local disk: fsync before rename, fsync directories after. */
export function nodeStoreFs(): StoreFs {
  /** Directories known to exist (object fan-out directories): no mkdir for them on every write. */
  const knownDirs = new Set<string>();
  return {
    iso: nodeFs,
    codec: nodeCodec,
    async readFile(path) {
      try {
        return await readFile(path);
      } catch (e) {
        if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
        throw e;
      }
    },
    async readdir(path) {
      try {
        return await readdir(path);
      } catch (e) {
        if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
        throw e;
      }
    },
    async exists(path) {
      try {
        await stat(path);
        return true;
      } catch (e) {
        if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
        throw e;
      }
    },
    async mkdirp(path) {
      await mkdir(path, { recursive: true });
    },
    async writeDurable(files, tmpDir) {
      if (files.length === 0) return;
      const temps = files.map((f) => ({ ...f, tmp: `${tmpDir}/tmp_obj_${randomBytes(8).toString('hex')}` }));
      // Every step keeps at most FILES_IN_FLIGHT descriptors or renames going, whatever the file count
      // (a push may write tens of thousands of objects): no EMFILE, and the threadpool stays shared.
      try {
        await mapBounded(temps, FILES_IN_FLIGHT, (f) => writeAndSync(f.tmp, f.data, 'wx'));
        const dirs = new Set(temps.map((f) => dirname(f.path)));
        // Directories this call created: their parents gained an entry too and are flushed as well.
        const created = new Set<string>();
        const ensureDir = async (d: string) => {
          if ((await mkdir(d, { recursive: true })) !== undefined) created.add(d);
          knownDirs.add(d);
        };
        await mapBounded([...dirs].filter((d) => !knownDirs.has(d)), FILES_IN_FLIGHT, ensureDir);
        await mapBounded(temps, FILES_IN_FLIGHT, async (f) => {
          try {
            await rename(f.tmp, f.path);
          } catch (e) {
            if (!isMissing(e)) throw e;
            // A directory we knew was removed meanwhile (e.g. by `git prune`): make it again.
            await ensureDir(dirname(f.path));
            await rename(f.tmp, f.path);
          }
        });
        const flush = new Set<string>(dirs);
        for (const d of created) flush.add(dirname(d));
        await mapBounded([...flush], FILES_IN_FLIGHT, (d) => fsyncPath(d, 'r'));
      } catch (e) {
        await mapBounded(temps, FILES_IN_FLIGHT, (f) => unlink(f.tmp).catch(() => undefined));
        throw e;
      }
    },
    async createExclusive(path, data) {
      try {
        await writeAndSync(path, data, 'wx');
        return true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
        // Created, then the write or the flush failed: leave no half-written lock behind for others to
        // mistake for a live one.
        await unlink(path).catch(() => undefined);
        throw e;
      }
    },
    async renameDurable(from, to) {
      await rename(from, to);
      await fsyncPath(dirname(to), 'r');
    },
    async unlink(path) {
      try {
        await unlink(path);
      } catch (e) {
        if (!isMissing(e)) throw e;
      }
    },
    async removeTree(path) {
      await rm(path, { recursive: true, force: true });
    },
    async mtimeMs(path) {
      try {
        return (await stat(path)).mtimeMs;
      } catch (e) {
        if (isMissing(e)) return null;
        throw e;
      }
    },
  };
}
