import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { GitStore } from '../lib/git/store.ts';
import { nodeStoreFs } from '../lib/runtime/node/store-fs.ts';
import { PathIndex } from '../lib/repo/path-index.ts';
import { RepoStore } from '../lib/repo/repo-store.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { ManualClock } from '../lib/util/clock.ts';
import type { FetchRequest } from '../lib/git/upload-request.ts';
import type { Database } from '../lib/runtime/node/libsql.ts';
import { fsck, gitIn, tempDir } from './helpers/env.ts';

/**
 * The listing behind an upload-pack answer, on the store directly: what it reads and what the pack holds.
 * (test/git-http-cases.ts covers the protocol end to end with git itself on both builds.)
 */

const enc = (s: string) => new TextEncoder().encode(s);
const ann = { name: 'Ann Author', email: 'ann@example.test' };

let dir: { path: string; cleanup: () => Promise<void> };
let db: Database;
let store: GitStore;
let repos: RepoStore;
let clock: ManualClock;

beforeEach(async () => {
  dir = await tempDir();
  clock = new ManualClock(Date.UTC(2026, 4, 17, 10, 0, 0));
  db = await openDatabaseFile(join(dir.path, 'service.db'), 0);
  store = new GitStore({ fs: nodeStoreFs(), root: join(dir.path, 'repos') });
  repos = new RepoStore(store, new PathIndex(db), clock);
});
afterEach(async () => {
  await store.packMerges();
  await db.close();
  await dir.cleanup();
});

const gitdir = (id: string) => join(dir.path, 'repos', `${id}.git`);

const fetchRequest = (wants: string[], haves: string[]): FetchRequest => ({
  version: 2,
  wants,
  haves,
  shallows: [],
  depth: 0,
  deepenRelative: false,
  deepenSince: null,
  deepenNot: [],
  done: true,
  negotiates: true,
  sideBand: 2,
  multiAck: 0,
  noDone: false,
  noProgress: true,
});

/** The pack of a v2 fetch answer: the band-1 data of the side-band packets after `packfile`. */
function packOf(answer: Uint8Array): Buffer {
  const parts: Uint8Array[] = [];
  let inPack = false;
  for (let at = 0; at < answer.length; ) {
    const len = parseInt(new TextDecoder().decode(answer.subarray(at, at + 4)), 16);
    if (len < 4) {
      at += 4;
      continue;
    }
    const payload = answer.subarray(at + 4, at + len);
    at += len;
    if (!inPack) inPack = new TextDecoder().decode(payload) === 'packfile\n';
    else if (payload[0] === 1) parts.push(payload.subarray(1));
  }
  return Buffer.concat(parts);
}

/** Object ids of a pack, as git's index-pack reads it into `gitdir` (verified, strictly when it is self-contained). */
function objectsInPack(into: string, pack: Buffer, strict = true): string[] {
  execFileSync('git', ['init', '-q', '--bare', into]);
  execFileSync('git', ['--git-dir', into, 'index-pack', '--stdin', ...(strict ? ['--strict'] : [])], { input: pack, stdio: ['pipe', 'pipe', 'pipe'] });
  return gitIn(into, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)').trim().split('\n').sort();
}

/** Counts the tree ids the listing asks the store for. */
function countTreeReads(): Map<string, number> {
  const asked = new Map<string, number>();
  const readTrees = store.readTrees.bind(store);
  store.readTrees = async (id, oids) => {
    for (const oid of oids) asked.set(oid, (asked.get(oid) ?? 0) + 1);
    return readTrees(id, oids);
  };
  return asked;
}

describe('upload-pack listing', () => {
  /**
   * Three commits over 150 directories, each commit changing one page in every directory (so every directory's
   * tree changes) and leaving the other page as it was: more trees on a level than the listing reads at once.
   */
  async function history(): Promise<string[]> {
    await repos.create('r');
    const heads: string[] = [];
    for (let round = 0; round < 3; round++) {
      const files = [];
      for (let a = 0; a < 150; a++) {
        files.push({ path: `area-${a}/page-0.md`, content: enc(`# ${a} ${round}\n`) });
        if (round === 0) files.push({ path: `area-${a}/page-1.md`, content: enc(`# ${a} stays\n`) });
      }
      const r = await repos.commitFiles('r', files, ann, `round ${round}`);
      heads.push(r.commit!.sha);
      clock.advance(60_000);
    }
    return heads;
  }

  it('a clone reads each tree once and sends exactly the objects reachable from the head', async () => {
    const heads = await history();
    const asked = countTreeReads();
    const answer = await repos.uploadPack('r', fetchRequest([heads[2]!], []));
    const bytes = new Uint8Array(await new Response(answer.body).arrayBuffer());
    expect(answer.sends).toBe(true);
    const reachable = gitIn(gitdir('r'), 'rev-list', '--objects', heads[2]!).trim().split('\n').map((l) => l.slice(0, 40)).sort();
    expect(objectsInPack(join(dir.path, 'clone.git'), packOf(bytes))).toEqual(reachable);
    fsck(join(dir.path, 'clone.git'));
    const trees = execFileSync('git', ['--git-dir', gitdir('r'), 'cat-file', '--batch-check=%(objectname) %(objecttype)'], { input: reachable.join('\n'), encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter((l) => l.endsWith(' tree'))
      .map((l) => l.slice(0, 40));
    expect([...asked.keys()].sort()).toEqual([...trees].sort());
    expect([...asked.values()].every((n) => n === 1)).toBe(true);
  });

  it('a fetch over a common commit still sends only what the client lacks', async () => {
    const heads = await history();
    const answer = await repos.uploadPack('r', fetchRequest([heads[2]!], [heads[0]!]));
    const bytes = new Uint8Array(await new Response(answer.body).arrayBuffer());
    const lacking = gitIn(gitdir('r'), 'rev-list', '--objects', heads[2]!, `^${heads[0]!}`).trim().split('\n').map((l) => l.slice(0, 40)).sort();
    expect(objectsInPack(join(dir.path, 'fetch.git'), packOf(bytes), false)).toEqual(lacking);
  });
});
