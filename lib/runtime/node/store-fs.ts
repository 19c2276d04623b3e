import * as nodeFs from 'node:fs';
import { link, mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { fdatasyncFd, flushData, flushDir } from './flush.ts';
import { deflate, deflateSync, inflate, inflateSync, type ZlibOptions } from 'node:zlib';
import { replacedName, type StoreFs } from '../../git/fs.ts';
import type { ObjectCodec } from '../../git/objects.ts';
import { mapBounded } from '../../util/bounded.ts';

/**
 * libuv's threadpool runs every file operation, and a flush holds one of its threads until the disk answers:
 * with the default 4 threads, a group commit's few dozen flushes queue four at a time, while the kernel
 * would have answered them together (one journal commit). Effective only when set before the pool's first
 * use (true when the server's modules load, before it serves); an explicit setting is kept.
 */
if (process.env.UV_THREADPOOL_SIZE === undefined) process.env.UV_THREADPOOL_SIZE = '16';

/** File operations one durable write keeps in flight at most. */
const FILES_IN_FLIGHT = 64;

/**
 * Files up to this size are written or read, and closed synchronously: in the page cache that takes
 * microseconds, while each step through the threadpool is a round trip of its own (a ref read was four).
 * Opening an existing file to read is synchronous too. Creating a file is not: it waits for the filesystem's
 * journal while another flush commits it (0.6 ms a file under W7's concurrent pushes, which blocked the
 * event loop for 241 ms of a run; 21 ms once created through the threadpool). The flush, which waits for
 * the disk, always goes through the threadpool. Larger files (big packs, big objects) keep every step off
 * this thread.
 */
const SMALL_FILE = 64 * 1024;

const readFd = promisify(nodeFs.readFile);
const readAt = promisify(nodeFs.read);
const openFd = promisify(nodeFs.open);

/** A file created for writing: its data flushed on request, then closed. */
interface Created {
  datasync(): Promise<void>;
  close(): Promise<void>;
}

/**
 * zlib level 1, as git writes loose objects (core.looseCompression defaults to 1): a page deflates about
 * three times faster than at the default level 6 (35 µs against 105) for 10% more bytes, and a push
 * deflates every object it makes on the event loop.
 */
const DEFLATE = { level: 1 };

/**
 * Objects up to this size are deflated and inflated on this thread (a few milliseconds at most); larger ones
 * in libuv's threadpool (node:zlib's async API, the same bytes), so that one big page never holds the event
 * loop while other requests wait.
 */
const ON_THREAD_BYTES = 256 * 1024;
const deflateAsync = promisify(deflate) as (data: Uint8Array, opts: ZlibOptions) => Promise<Buffer>;
const inflateAsync = promisify(inflate) as (data: Uint8Array, opts: ZlibOptions) => Promise<Buffer>;

/** SHA-1 (synchronous, incremental too) and zlib: a fraction of a millisecond per page-sized object. */
export const nodeCodec: ObjectCodec = {
  hashAndDeflate(data) {
    if (data.byteLength > ON_THREAD_BYTES) {
      return deflateAsync(data, DEFLATE).then((deflated) => ({ oid: createHash('sha1').update(data).digest('hex'), deflated }));
    }
    return { oid: createHash('sha1').update(data).digest('hex'), deflated: deflateSync(data, DEFLATE) };
  },
  sha1: (data) => createHash('sha1').update(data).digest(),
  sha1Stream() {
    const hash = createHash('sha1');
    return { update: (data) => void hash.update(data), digest: () => new Uint8Array(hash.digest()) };
  },
  deflate: (data) => (data.byteLength > ON_THREAD_BYTES ? deflateAsync(data, DEFLATE) : deflateSync(data, DEFLATE)),
  // Output chunks no larger than the object (a pack record declares its size): zlib's default of 16 KiB a
  // chunk, allocated per call, was most of what reading many small objects allocated.
  inflate: (data, maxBytes) => {
    const opts = { maxOutputLength: Math.max(1, maxBytes), chunkSize: Math.min(16 * 1024, Math.max(64, maxBytes + 64)) };
    return maxBytes > ON_THREAD_BYTES ? inflateAsync(data, opts) : inflateSync(data, opts);
  },
};

const isMissing = (e: unknown) => (e as NodeJS.ErrnoException)?.code === 'ENOENT';

/** A descriptor of `path` opened for reading, or null when it (or a directory on its way) does not exist. */
function openToRead(path: string): number | null {
  try {
    return nodeFs.openSync(path, 'r');
  } catch (e) {
    if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return null;
    throw e;
  }
}

/**
 * One step the store's filesystem takes, as a trace sees it: `start` before the call is made, `end` once it
 * returned (or threw: `failed`). `write` creates and fills a file (not flushed); `fsync` flushes a file's
 * data; `fsyncDir` flushes a directory's entries; `rename`, `link` (`to` becomes a second name of `path`),
 * `unlink` and `mkdir` as named.
 */
export interface FsTraceEvent {
  /** Pairs a step's start with its end. */
  id: number;
  op: 'write' | 'fsync' | 'fsyncDir' | 'rename' | 'link' | 'unlink' | 'mkdir';
  phase: 'start' | 'end';
  path: string;
  /** The rename's target. */
  to?: string;
  /** The bytes written (write, start). */
  data?: Uint8Array;
  failed?: boolean;
}

export interface NodeStoreFsOptions {
  /** Sees every step, in the order they happen (for tests that check the order of writes and flushes). */
  trace?: (e: FsTraceEvent) => void;
  /**
   * How writeDurable makes files durable: `each` (default) flushes every temporary file before its rename,
   * then the directories; `after-rename` writes and renames every file unflushed, then flushes the files
   * and their directories in one round (one round of waiting less; a crash before that round may leave
   * a file not yet referenced by anything empty — only ever files a ref does not yet reach).
   */
  sync?: 'each' | 'after-rename';
  /**
   * Whether the store may write packfiles (`packs`, default true): one pack + idx per group instead of one
   * loose file per object. False leaves only writeDurable (as the Durable Object build has).
   */
  packs?: boolean;
}

let traceIds = 0;

/** `fn` between a start and an end event of `e` (no events without a trace). */
async function traced<T>(trace: NodeStoreFsOptions['trace'], e: Omit<FsTraceEvent, 'phase' | 'id'>, fn: () => Promise<T>): Promise<T> {
  if (!trace) return fn();
  const id = ++traceIds;
  trace({ ...e, id, phase: 'start' });
  try {
    const out = await fn();
    trace({ id, op: e.op, path: e.path, to: e.to, phase: 'end' });
    return out;
  } catch (err) {
    trace({ id, op: e.op, path: e.path, to: e.to, phase: 'end', failed: true });
    throw err;
  }
}

/** The git store's filesystem on local disk: fsync before rename, fsync directories after. */
export function nodeStoreFs(opts: NodeStoreFsOptions = {}): StoreFs {
  /** Directories known to exist (object fan-out directories): no mkdir for them on every write. */
  const knownDirs = new Set<string>();
  const { trace } = opts;
  const syncAfterRename = opts.sync === 'after-rename';
  const fsyncDir = (path: string) => traced(trace, { op: 'fsyncDir', path }, () => flushDir(path));
  const fsyncFile = (path: string) => traced(trace, { op: 'fsync', path }, () => flushData(path));
  /** Creates `path` holding `data` (flags `wx`: never an existing file) and returns it open, not flushed. */
  const create = (path: string, data: Uint8Array) =>
    traced(trace, { op: 'write', path, data }, async (): Promise<Created> => {
      if (data.byteLength <= SMALL_FILE) {
        const fd = await openFd(path, 'wx', 0o644);
        try {
          for (let at = 0; at < data.byteLength; ) at += nodeFs.writeSync(fd, data, at, data.byteLength - at);
        } catch (e) {
          nodeFs.closeSync(fd);
          throw e;
        }
        return { datasync: () => fdatasyncFd(fd), close: async () => nodeFs.closeSync(fd) };
      }
      const h = await open(path, 'wx', 0o644);
      try {
        await h.writeFile(data);
      } catch (e) {
        await h.close();
        throw e;
      }
      return h;
    });
  /** Creates `path` with `data` (flags `wx`: never an existing file), flushed unless `sync` is false. */
  const writeFile = async (path: string, data: Uint8Array, sync: boolean) => {
    const fh = await create(path, data);
    try {
      if (sync) await traced(trace, { op: 'fsync', path }, () => fh.datasync());
    } finally {
      await fh.close();
    }
  };
  const move = (from: string, to: string) => traced(trace, { op: 'rename', path: from, to }, () => rename(from, to));
  /**
   * A rename made synchronously: a few of them on a commit's path (a pack and its index, the ref), where a
   * threadpool round trip each would hold up the flush that follows. Many renames (writeDurable) stay off
   * this thread.
   */
  const moveNow = (from: string, to: string) =>
    traced(trace, { op: 'rename', path: from, to }, async () => {
      nodeFs.renameSync(from, to);
    });
  const remove = (path: string) => traced(trace, { op: 'unlink', path }, () => unlink(path));
  /** Second names (see keepReplaced) being unlinked through the threadpool. */
  const freeing = new Map<string, Promise<void>>();
  /**
   * Gives the file at `to`, about to be replaced by a rename, a second name beside it
   * (`.<name>.replaced`), so that the rename does not free it. Freeing a file is most of what a rename over
   * one costs on this machine's ext4: 165 µs of 180 on the event loop, on every push's ref update, against
   * 15 µs with the replaced file still linked. `freeLater` then unlinks the second name through the
   * threadpool. git skips names starting with a dot under refs/; one a crash left is replaced here (and
   * removed by GitStore's recovery at boot).
   * Null where there is nothing to keep: no file at `to`, a directory, or that name still being unlinked.
   */
  const keepReplaced = (to: string): Promise<string | null> => {
    const kept = `${dirname(to)}/${replacedName(basename(to))}`;
    if (freeing.has(kept)) return Promise.resolve(null);
    return traced(trace, { op: 'link', path: to, to: kept }, async () => {
      try {
        nodeFs.linkSync(to, kept);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
        nodeFs.unlinkSync(kept);
        nodeFs.linkSync(to, kept);
      }
      return kept;
    }).catch(() => null);
  };
  const freeLater = (kept: string) => {
    const done = remove(kept)
      .catch(() => undefined)
      .finally(() => freeing.delete(kept));
    freeing.set(kept, done);
  };
  return {
    codec: nodeCodec,
    async readFile(path) {
      const fd = openToRead(path);
      if (fd === null) return null;
      try {
        return nodeFs.fstatSync(fd).size <= SMALL_FILE ? nodeFs.readFileSync(fd) : await readFd(fd);
      } finally {
        nodeFs.closeSync(fd);
      }
    },
    async readRange(path, position, length) {
      const fd = openToRead(path);
      if (fd === null) return null;
      try {
        const out = new Uint8Array(length);
        let got = 0;
        if (length <= SMALL_FILE) {
          while (got < length) {
            const n = nodeFs.readSync(fd, out, got, length - got, position + got);
            if (n === 0) break;
            got += n;
          }
        } else {
          while (got < length) {
            const { bytesRead } = await readAt(fd, out, got, length - got, position + got);
            if (bytesRead === 0) break;
            got += bytesRead;
          }
        }
        return got === length ? out : out.subarray(0, got);
      } finally {
        nodeFs.closeSync(fd);
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
        await mapBounded(temps, FILES_IN_FLIGHT, (f) => writeFile(f.tmp, f.data, !syncAfterRename));
        const dirs = new Set(temps.map((f) => dirname(f.path)));
        // Directories this call created: their parents gained an entry too and are flushed as well.
        const created = new Set<string>();
        const ensureDir = async (d: string) => {
          if ((await traced(trace, { op: 'mkdir', path: d }, () => mkdir(d, { recursive: true }))) !== undefined) created.add(d);
          knownDirs.add(d);
        };
        await mapBounded([...dirs].filter((d) => !knownDirs.has(d)), FILES_IN_FLIGHT, ensureDir);
        // Unflushed (after-rename), a file must never replace one already there, which may be durable and
        // referenced: it is linked into place only where none exists. Where one does (the same object
        // written before, or left by a crash, possibly empty), the new file is flushed first and renamed
        // over it, as in `each`.
        const place = syncAfterRename
          ? async (f: { tmp: string; path: string }) => {
              try {
                await traced(trace, { op: 'rename', path: f.tmp, to: f.path }, () => link(f.tmp, f.path));
              } catch (e) {
                if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
                await fsyncFile(f.tmp);
                await move(f.tmp, f.path);
                return;
              }
              await remove(f.tmp);
            }
          : (f: { tmp: string; path: string }) => move(f.tmp, f.path);
        await mapBounded(temps, FILES_IN_FLIGHT, async (f) => {
          try {
            await place(f);
          } catch (e) {
            if (!isMissing(e)) throw e;
            // A directory we knew was removed meanwhile (e.g. by `git prune`): make it again.
            await ensureDir(dirname(f.path));
            await place(f);
          }
        });
        const flush = new Set<string>(dirs);
        for (const d of created) flush.add(dirname(d));
        // One round: the directories' entries, and (after-rename) the files' data, flushed together.
        await Promise.all([
          mapBounded([...flush], FILES_IN_FLIGHT, fsyncDir),
          syncAfterRename ? mapBounded(temps, FILES_IN_FLIGHT, (f) => fsyncFile(f.path)) : undefined,
        ]);
      } catch (e) {
        await mapBounded(temps, FILES_IN_FLIGHT, (f) => unlink(f.tmp).catch(() => undefined));
        throw e;
      }
    },
    async createExclusiveEarly(path, data) {
      let fh;
      try {
        fh = await create(path, data);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'EEXIST') return null;
        await unlink(path).catch(() => undefined);
        throw e;
      }
      const h = fh;
      const flushed = (async () => {
        try {
          await traced(trace, { op: 'fsync', path }, () => h.datasync());
        } finally {
          await h.close();
        }
      })();
      flushed.catch(() => undefined); // the caller awaits it; not an unhandled rejection meanwhile
      return { flushed };
    },
    async createExclusive(path, data) {
      try {
        await writeFile(path, data, true);
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
      const kept = from === to ? null : await keepReplaced(to);
      try {
        await moveNow(from, to);
        await fsyncDir(dirname(to));
      } finally {
        if (kept) freeLater(kept);
      }
    },
    async idle() {
      while (freeing.size > 0) await Promise.all(freeing.values());
    },
    async unlink(path) {
      try {
        await remove(path);
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
    packs: opts.packs === false ? undefined : {
      async write(packDir, name, pack, idx, issued) {
        const ensureDir = async () => {
          // Made here (a repository whose objects/pack was removed): its parent gained an entry to flush.
          if ((await traced(trace, { op: 'mkdir', path: packDir }, () => mkdir(packDir, { recursive: true }))) !== undefined) {
            await fsyncDir(dirname(packDir));
          }
          knownDirs.add(packDir);
        };
        if (!knownDirs.has(packDir)) await ensureDir();
        const tag = randomBytes(8).toString('hex');
        // git's own names for a pack being written: `git gc` and our recovery clear them after a crash.
        const files = [
          { tmp: `${packDir}/tmp_pack_${tag}`, path: `${packDir}/pack-${name}.pack`, data: pack },
          { tmp: `${packDir}/tmp_idx_${tag}`, path: `${packDir}/pack-${name}.idx`, data: idx },
        ];
        try {
          // Both files created and written, then both flushes requested at once: `issued` lets the caller
          // go on (a push records its index rows) while the disk works.
          const createAll = () => Promise.allSettled(files.map((f) => create(f.tmp, f.data)));
          let created = await createAll();
          if (created.every((c) => c.status === 'rejected' && isMissing(c.reason))) {
            // The directory we knew was removed meanwhile: make it again.
            await ensureDir();
            created = await createAll();
          }
          const open = created.flatMap((c, i) => (c.status === 'fulfilled' ? [{ h: c.value, path: files[i]!.tmp }] : []));
          try {
            const failed = created.find((c): c is PromiseRejectedResult => c.status === 'rejected');
            if (failed) throw failed.reason;
            // Settled, all of them, before any descriptor closes.
            const flushed = Promise.allSettled(open.map((f) => traced(trace, { op: 'fsync', path: f.path }, () => f.h.datasync())));
            issued?.();
            const failure = (await flushed).find((r): r is PromiseRejectedResult => r.status === 'rejected');
            if (failure) throw failure.reason;
          } finally {
            await Promise.all(open.map((f) => f.h.close().catch(() => undefined)));
          }
          // The .pack before the .idx: a reader that finds the .idx finds its .pack.
          for (const f of files) await moveNow(f.tmp, f.path);
          await fsyncDir(packDir);
        } catch (e) {
          await Promise.all(files.map((f) => unlink(f.tmp).catch(() => undefined)));
          throw e;
        }
      },
      async list(packDir) {
        let names: string[];
        try {
          names = await readdir(packDir);
        } catch (e) {
          if (isMissing(e) || (e as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
          throw e;
        }
        const idx = new Set(names.filter((n) => n.startsWith('pack-') && n.endsWith('.idx')).map((n) => n.slice(5, -4)));
        // A pack with a .keep file (git's mark for a pack never to be repacked) is not offered.
        const keep = new Set(names.filter((n) => n.startsWith('pack-') && n.endsWith('.keep')).map((n) => n.slice(5, -5)));
        const out: Array<{ name: string; bytes: number }> = [];
        for (const n of names) {
          if (!n.startsWith('pack-') || !n.endsWith('.pack') || !idx.has(n.slice(5, -5)) || keep.has(n.slice(5, -5))) continue;
          try {
            out.push({ name: n.slice(5, -5), bytes: (await stat(`${packDir}/${n}`)).size });
          } catch (e) {
            if (!isMissing(e)) throw e;
          }
        }
        return out;
      },
      async remove(packDir, names) {
        if (names.length === 0) return;
        const drop = async (path: string) => {
          try {
            await remove(path);
          } catch (e) {
            if (!isMissing(e)) throw e;
          }
        };
        // The .idx files first (readers stop finding the packs), then the .pack files, then what git may
        // have written beside a pack of its own (reverse index, bitmap).
        for (const ext of ['idx', 'pack', 'rev', 'bitmap']) await Promise.all(names.map((n) => drop(`${packDir}/pack-${n}.${ext}`)));
        await fsyncDir(packDir);
      },
    },
  };
}
