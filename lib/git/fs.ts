/**
 * What the git store needs from a filesystem. The Node implementation is lib/runtime/node/store-fs.ts; the hosted
 * build supplies its own (Durable Object storage). Paths are absolute, `/`-separated.
 */
import type { ObjectCodec } from './objects.ts';

/**
 * The second name a file replaced by `renameDurable` keeps beside it until it is freed (the Node build):
 * `.main.replaced` for `main`. git skips names starting with a dot under refs/; recovery removes one a crash
 * left.
 */
export const replacedName = (name: string): string => `.${name}.replaced`;

export interface StoreFs {
  /** Hashing and deflating of new objects; the web-standard codec when absent. */
  readonly codec?: ObjectCodec;
  /** File bytes, or null when the file does not exist. */
  readFile(path: string): Promise<Uint8Array | null>;
  /**
   * Optional: `length` bytes of the file from `position` (fewer at its end), or null when the file does
   * not exist. Where absent, readers take the range from readFile.
   */
  readRange?(path: string, position: number, length: number): Promise<Uint8Array | null>;
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
  /**
   * Atomic rename, then the target's directory is flushed. The Node build frees a file it replaces in the
   * background, after that flush (see `idle`).
   */
  renameDurable(from: string, to: string): Promise<void>;
  /** Optional: resolves once what the filesystem does in the background after a call has answered is done. */
  idle?(): Promise<void>;
  unlink(path: string): Promise<void>;
  /** Removes a directory tree; missing is fine. */
  removeTree(path: string): Promise<void>;
  /** Modification time in ms, or null when missing. */
  mtimeMs(path: string): Promise<number | null>;
  /**
   * Optional: packfiles (lib/git/pack.ts). Where present, the store writes each group's objects as one
   * pack; where absent (the Durable Object build), as loose objects through writeDurable.
   */
  readonly packs?: PackFs;
}

/** Packfiles in a repository's `objects/pack` directory (`packDir`), named `pack-<name>.{pack,idx}`. */
export interface PackFs {
  /**
   * Writes `pack-<name>.pack` and `pack-<name>.idx` atomically and durably: each to a temporary file in
   * `packDir`, both flushed, the .pack renamed into place, then the .idx (a pack is visible to readers
   * only once its .idx exists), then `packDir` flushed (and its parent, if `packDir` was created). When
   * this resolves, a crash loses neither. A pack of that name already there holds the same bytes (the
   * name is the checksum of its content) and is replaced by them. `issued`, when given, is called once
   * both files are written and their flushes requested (before they complete): the caller's work from
   * then on overlaps the disk's.
   */
  write(packDir: string, name: string, pack: Uint8Array, idx: Uint8Array, issued?: () => void): Promise<void>;
  /** The packs with both files present and no `.keep` file: name and the .pack's size in bytes. */
  list(packDir: string): Promise<Array<{ name: string; bytes: number }>>;
  /**
   * Deletes packs: every .idx first (readers stop finding them), then every .pack (and a .rev or .bitmap
   * git wrote beside it), then `packDir` is flushed. Missing files are fine.
   */
  remove(packDir: string, names: string[]): Promise<void>;
}
