import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { flushDir } from '../lib/runtime/node/flush.ts';

/**
 * W1·floor: what a durable one-page push must wait for on this machine, with no work of its own. The disk
 * steps are those the Node store takes for a push (lib/runtime/node/store-fs.ts), in its order and with its overlap:
 *
 *   1. a pack and its index created under temporary names and written, the ref's lock file created and
 *      written, the database's commit (its write-ahead log frames, written over a log that has wrapped
 *      around, as in the steady state) written; the four flushed (fdatasync) at once;
 *   2. the pack and its index renamed to their names, their directory flushed (fsync);
 *   3. the lock renamed over the ref, the ref's directory flushed.
 *
 * Step 2 must end before step 3 starts (the durability ordering: a ref never names objects a crash can lose).
 * Nothing else is done: no objects are built, hashed or compressed, no SQL runs.
 */

export interface FlushChainSizes {
  packBytes: number;
  idxBytes: number;
  /** What one push's index batch appends to the database's write-ahead log. */
  walBytes: number;
}

/** The log's size before SQLite checkpoints it and starts over (1,000 frames of 4 KiB pages). */
const WAL_BYTES = 1000 * 4120;

export interface FlushChainTimes {
  /** Whole chain per push, ms. */
  total: number[];
  /** Step 1 (create, write, flush the three files), step 2, step 3, ms. */
  files: number[];
  packDir: number[];
  ref: number[];
}

async function createFlushed(path: string, data: Uint8Array): Promise<void> {
  const h = await open(path, 'wx');
  try {
    await h.write(data);
    await h.datasync();
  } finally {
    await h.close();
  }
}

/** Runs the chain `n` times in a fresh directory under `root` (on the data root's filesystem), then removes it. */
export async function measureFlushChain(root: string, n: number, sizes: FlushChainSizes): Promise<FlushChainTimes> {
  const dir = join(root, `flush-floor-${process.pid}`);
  const packDir = join(dir, 'objects', 'pack');
  const refDir = join(dir, 'refs', 'heads');
  await rm(dir, { recursive: true, force: true });
  await mkdir(packDir, { recursive: true });
  await mkdir(refDir, { recursive: true });
  const ref = join(refDir, 'main');
  await writeFile(ref, `${'0'.repeat(40)}\n`);
  await flushDir(refDir);
  const walPath = join(dir, 'index.db-wal');
  await writeFile(walPath, new Uint8Array(WAL_BYTES));
  const wal = await open(walPath, 'r+');
  await wal.sync();
  await flushDir(dir);
  const frames = new Uint8Array(sizes.walBytes).fill(0x33);
  let walAt = 0;
  const commitWal = async () => {
    if (walAt + frames.byteLength > WAL_BYTES) walAt = 0;
    await wal.write(frames, 0, frames.byteLength, walAt);
    walAt += frames.byteLength;
    await wal.datasync();
  };
  const pack = new Uint8Array(sizes.packBytes).fill(0x5a);
  const idx = new Uint8Array(sizes.idxBytes).fill(0x17);
  const out: FlushChainTimes = { total: [], files: [], packDir: [], ref: [] };
  try {
    for (let i = 0; i < n; i++) {
      const name = `${i.toString(16).padStart(40, '0')}`;
      const lock = `${ref}.lock`;
      const t0 = performance.now();
      await Promise.all([
        createFlushed(join(packDir, `tmp_pack_${i}`), pack),
        createFlushed(join(packDir, `tmp_idx_${i}`), idx),
        createFlushed(lock, new TextEncoder().encode(`${name}\n`)),
        commitWal(),
      ]);
      const t1 = performance.now();
      await rename(join(packDir, `tmp_pack_${i}`), join(packDir, `pack-${name}.pack`));
      await rename(join(packDir, `tmp_idx_${i}`), join(packDir, `pack-${name}.idx`));
      await flushDir(packDir);
      const t2 = performance.now();
      await rename(lock, ref);
      await flushDir(refDir);
      const t3 = performance.now();
      out.total.push(t3 - t0);
      out.files.push(t1 - t0);
      out.packDir.push(t2 - t1);
      out.ref.push(t3 - t2);
    }
  } finally {
    await wal.close();
    await rm(dir, { recursive: true, force: true });
  }
  return out;
}
