import * as fs from 'node:fs';
import { promisify } from 'node:util';

/**
 * Flushes to disk, Node only. Opening and closing are synchronous (microseconds, in the page cache); only
 * the flush itself, which waits for the disk, goes through the threadpool.
 */

export const fdatasyncFd = promisify(fs.fdatasync);
const fsyncFd = promisify(fs.fsync);

async function withFd(path: string, fn: (fd: number) => Promise<void>): Promise<void> {
  const fd = fs.openSync(path, 'r');
  try {
    await fn(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** A file's data, and the size needed to read it back (fdatasync: its timestamps need not be durable). */
export const flushData = (path: string): Promise<void> => withFd(path, fdatasyncFd);

/** A directory's entries (fsync). */
export const flushDir = (path: string): Promise<void> => withFd(path, fsyncFd);
