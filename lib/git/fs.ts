/**
 * What the git store needs from a filesystem. The Node implementation is lib/git/node-fs.ts; the hosted
 * build supplies its own (Durable Object storage). Paths are absolute, `/`-separated.
 */
import type { ObjectCodec } from './objects.ts';

export interface StoreFs {
  /** A filesystem object in the shape isomorphic-git accepts (`{ promises: … }` or node:fs). */
  readonly iso: unknown;
  /** Hashing and deflating of new objects; the web-standard codec when absent. */
  readonly codec?: ObjectCodec;
  /** File bytes, or null when the file does not exist. */
  readFile(path: string): Promise<Uint8Array | null>;
  /** Directory entries, or [] when the directory does not exist. */
  readdir(path: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
  mkdirp(path: string): Promise<void>;
  /**
   * Writes every file atomically and durably: each goes to a temporary file in `tmpDir`, is flushed to
   * disk, renamed into place, and the directories that gained an entry are flushed. When this resolves,
   * a crash loses none of them; at no instant does a target hold partial content.
   */
  writeDurable(files: Array<{ path: string; data: Uint8Array }>, tmpDir: string): Promise<void>;
  /** Creates `path` holding `data` only if it does not exist (O_EXCL), flushed. False when it exists. */
  createExclusive(path: string, data: Uint8Array): Promise<boolean>;
  /**
   * Optional: as createExclusive, but resolves once the file is created (exclusively) and written, before
   * its bytes are flushed: `flushed` settles when they are. Null when the file exists. For a lock whose
   * holder has work to do before the flush matters.
   */
  createExclusiveEarly?(path: string, data: Uint8Array): Promise<{ flushed: Promise<void> } | null>;
  /** Atomic rename, then the target's directory is flushed. */
  renameDurable(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Removes a directory tree; missing is fine. */
  removeTree(path: string): Promise<void>;
  /** Modification time in ms, or null when missing. */
  mtimeMs(path: string): Promise<number | null>;
}
