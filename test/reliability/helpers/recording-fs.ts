/**
 * A recording of every step the git store takes on disk (through the Node StoreFs's trace: each write,
 * file flush, rename, directory flush, unlink, mkdir), of every database batch, and of every answer, in the
 * order they happen; and a checker that reasons about that order the way crash-consistency checkers do: at
 * the instant a step starts, only steps that have ENDED before it are known to be on disk. The recording
 * can also hold back the flush of the branch's lock file (holdFlush), to show that the branch waits for it.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { nodeStoreFs, type FsTraceEvent, type NodeStoreFsOptions } from '../../../lib/runtime/node/store-fs.ts';
import type { StoreFs } from '../../../lib/git/fs.ts';
import type { Database, Stmt } from '../../../lib/runtime/node/libsql.ts';
import { readIdx } from '../../../lib/git/pack.ts';
import { git } from './git.ts';

export type Recorded =
  /** `creates` (mkdir, start): the directories missing when it started, which it makes (the path and its missing ancestors). */
  | (FsTraceEvent & { seq: number; kind: 'fs'; creates?: string[] })
  | { seq: number; kind: 'db'; id: number; phase: 'start' | 'end'; stmts: Stmt[]; failed?: boolean }
  | { seq: number; kind: 'answer'; sha: string; label: string };

export interface Recording {
  events: Recorded[];
  fs: StoreFs;
  /** `db` with every batch recorded (start and end). */
  wrapDb(db: Database): Database;
  /** Records that the caller answered a push whose commit is `sha`. */
  answer(sha: string, label: string): void;
  /**
   * Holds back the next data flush of `path` made through createExclusiveEarly (the branch's lock file,
   * `refs/heads/main.lock`): the `flushed` promise the store gets settles only once `release` is called,
   * and the flush's end is recorded then (the moment the store can learn of it), whenever the disk answered.
   */
  holdFlush(path: string): Hold;
}

export interface Hold {
  /** Resolves once the held flush has started (the file was created and written). */
  reached: Promise<void>;
  release(): void;
}

interface HoldState {
  path: string;
  /** The trace id of the held flush, once it started. */
  id: number | null;
  /** Its end, recorded only when released. */
  end: FsTraceEvent | null;
  reached: () => void;
  released: Promise<void>;
}

/** The directories `path` and its ancestors that do not exist now, deepest first. */
function missingDirs(path: string): string[] {
  const out: string[] = [];
  for (let d = path; !existsSync(d) && dirname(d) !== d; d = dirname(d)) out.push(d);
  return out;
}

export function recording(opts: Pick<NodeStoreFsOptions, 'sync' | 'packs'> = {}): Recording {
  const events: Recorded[] = [];
  let dbIds = 0;
  const holds: HoldState[] = [];
  const inner = nodeStoreFs({
    ...opts,
    trace: (e) => {
      const held = holds.find((h) => e.op === 'fsync' && (e.phase === 'start' ? h.id === null && h.path === e.path : h.id === e.id));
      if (held && e.phase === 'start') {
        held.id = e.id;
        held.reached();
      } else if (held) {
        held.end = e;
        return;
      }
      // Called just before the step runs: what is missing now is what a mkdir makes.
      const creates = e.op === 'mkdir' && e.phase === 'start' ? missingDirs(e.path) : undefined;
      events.push({ ...e, kind: 'fs', seq: events.length, ...(creates ? { creates } : {}) });
    },
  });
  const early = inner.createExclusiveEarly!;
  const fs: StoreFs = {
    ...inner,
    async createExclusiveEarly(path, data) {
      const made = await early(path, data);
      const held = holds.find((h) => h.path === path && h.id !== null && h.end === null);
      if (!made || !held) return made;
      const flushed = (async () => {
        try {
          await made.flushed;
        } finally {
          await held.released;
          holds.splice(holds.indexOf(held), 1);
          // The end the trace gave (possibly failed; it came before `made.flushed` settled), recorded now.
          if (held.end) events.push({ ...held.end, kind: 'fs', seq: events.length });
        }
      })();
      flushed.catch(() => undefined); // the store awaits it
      return { flushed };
    },
  };
  return {
    events,
    fs,
    holdFlush(path) {
      let reached!: () => void;
      let release!: () => void;
      const state: HoldState = {
        path,
        id: null,
        end: null,
        reached: () => reached(),
        released: new Promise<void>((r) => (release = r)),
      };
      holds.push(state);
      return { reached: new Promise<void>((r) => (reached = r)), release: () => release() };
    },
    wrapDb(db) {
      return new Proxy(db, {
        get(target, key) {
          if (key === 'batch') {
            return async (stmts: Stmt[]) => {
              const id = ++dbIds;
              events.push({ kind: 'db', id, phase: 'start', stmts, seq: events.length });
              try {
                const out = await target.batch(stmts);
                events.push({ kind: 'db', id, phase: 'end', stmts, seq: events.length });
                return out;
              } catch (e) {
                events.push({ kind: 'db', id, phase: 'end', stmts, failed: true, seq: events.length });
                throw e;
              }
            };
          }
          const v = Reflect.get(target, key, target) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
    },
    answer(sha, label) {
      events.push({ kind: 'answer', sha, label, seq: events.length });
    },
  };
}

type FsEv = Extract<Recorded, { kind: 'fs' }>;
interface Step {
  start: FsEv;
  end: FsEv | null;
}

/**
 * Every violation of the durability order in `events` for the repository at `gitdir` (empty: none):
 *  1. before the rename that moves `refs/heads/main` starts, every object the new value reaches (git
 *     rev-list --objects) is durable: its bytes flushed (the temporary file before its rename, or the file
 *     itself after it) and the directory entry flushed after the rename, all ended before; and the lock
 *     file being renamed was flushed. An object in a pack is durable when the pack's .idx lists it (the
 *     bytes written to its temporary file) and both the .pack and the .idx are durable in that sense in
 *     `objects/pack` (flushed, renamed into place, the directory flushed after), and no deletion of that
 *     .idx or .pack had started;
 *  2. before a push is answered, a move of the branch to its commit or a descendant ended, and the
 *     branch's directory was flushed after that move ended;
 *  3. before a push is answered, a database batch that inserts its commit into git_commits ended (without
 *     failing);
 *  4. before the rename that moves `refs/heads/main` starts, every directory of the repository a mkdir made
 *     (missing when the mkdir started: a loose object's fan-out directory `objects/xx`, a re-created
 *     `objects/pack`) has had its parent directory flushed after that mkdir ended: else a crash may lose
 *     the directory, and every object in it, while the branch names them.
 */
export async function orderViolations(events: Recorded[], gitdir: string): Promise<string[]> {
  const problems: string[] = [];
  const steps = new Map<number, Step>();
  for (const e of events) {
    if (e.kind !== 'fs') continue;
    if (e.phase === 'start') steps.set(e.id, { start: e, end: null });
    else steps.get(e.id)!.end = e;
  }
  const all = [...steps.values()];
  const done = (s: Step, before: number) => s.end !== null && !s.end.failed && s.end.seq < before;
  const ref = `${gitdir}/refs/heads/main`;
  const lockPath = `${ref}.lock`;

  /** Whether `path` holds durable bytes, as far as steps ended before `t` show. */
  const durable = (path: string, t: number): string | null => {
    const placed = all.filter((s) => s.start.op === 'rename' && s.start.to === path && done(s, t));
    if (placed.length === 0) return `never renamed into place`;
    for (const r of placed) {
      const tmp = r.start.path;
      const dataBefore = all.some((s) => s.start.op === 'fsync' && s.start.path === tmp && done(s, r.start.seq));
      const dataAfter = all.some((s) => s.start.op === 'fsync' && s.start.path === path && s.start.seq > r.end!.seq && done(s, t));
      const dir = all.some((s) => s.start.op === 'fsyncDir' && s.start.path === dirname(path) && s.start.seq > r.end!.seq && done(s, t));
      if ((dataBefore || dataAfter) && dir) return null;
    }
    return 'bytes or directory entry not flushed';
  };

  /** The ids each pack's .idx lists (from the bytes written to the temporary file renamed onto it). */
  const packDir = `${gitdir}/objects/pack`;
  const packs: Array<{ idx: string; pack: string; oids: Set<string> }> = [];
  for (const r of all) {
    if (r.start.op !== 'rename' || !r.start.to || dirname(r.start.to) !== packDir || !r.start.to.endsWith('.idx')) continue;
    const write = all.find((s) => s.start.op === 'write' && s.start.path === r.start.path && s.start.seq < r.start.seq);
    if (!write?.start.data) continue;
    packs.push({ idx: r.start.to, pack: r.start.to.replace(/\.idx$/, '.pack'), oids: new Set(readIdx(write.start.data).map((e) => e.oid)) });
  }
  const deleted = (path: string, t: number) => all.some((s) => s.start.op === 'unlink' && s.start.path === path && s.start.seq < t);
  /** Whether `oid` is in a pack durable (and not being deleted) before `t`. */
  const packed = (oid: string, t: number) =>
    packs.some(
      (p) => p.oids.has(oid) && !deleted(p.idx, t) && !deleted(p.pack, t) && durable(p.idx, t) === null && durable(p.pack, t) === null,
    );

  /** The sha each write of the lock file put in it. */
  const lockSha = (before: number): string | null => {
    const writes = events.filter((e): e is FsEv => e.kind === 'fs' && e.op === 'write' && e.phase === 'start' && e.path === lockPath && e.seq < before);
    const last = writes[writes.length - 1];
    return last?.data ? new TextDecoder().decode(last.data).trim() : null;
  };

  const moves = all.filter((s) => s.start.op === 'rename' && s.start.path === lockPath && s.start.to === ref);
  const moved: Array<{ sha: string; step: Step; history: Set<string> }> = [];
  for (const m of moves) {
    const sha = lockSha(m.start.seq);
    if (!sha) {
      problems.push(`ref move #${m.start.seq}: no lock write before it`);
      continue;
    }
    const lockWrite = events.filter((e): e is FsEv => e.kind === 'fs' && e.op === 'write' && e.path === lockPath && e.phase === 'start' && e.seq < m.start.seq).pop()!;
    if (!all.some((s) => s.start.op === 'fsync' && s.start.path === lockPath && s.start.seq > lockWrite.seq && done(s, m.start.seq))) {
      problems.push(`ref move to ${sha}: the lock file was not flushed before the rename`);
    }
    for (const s of all) {
      if (s.start.op !== 'mkdir' || !s.start.creates || s.start.seq > m.start.seq || s.end?.failed) continue;
      for (const d of s.start.creates) {
        if (!d.startsWith(`${gitdir}/`)) continue;
        const parentFlushed =
          done(s, m.start.seq) &&
          all.some((f) => f.start.op === 'fsyncDir' && f.start.path === dirname(d) && f.start.seq > s.end!.seq && done(f, m.start.seq));
        if (!parentFlushed) {
          problems.push(`ref move to ${sha.slice(0, 8)} at #${m.start.seq}: directory ${d.slice(gitdir.length + 1)} made, its parent not flushed after`);
        }
      }
    }
    const objects = (await git(gitdir, 'rev-list', '--objects', sha)).split('\n').filter(Boolean).map((l) => l.slice(0, 40));
    for (const oid of objects) {
      if (packed(oid, m.start.seq)) continue;
      const why = durable(`${gitdir}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`, m.start.seq);
      if (why) problems.push(`ref move to ${sha.slice(0, 8)} at #${m.start.seq}: object ${oid.slice(0, 8)} not durable (${why})`);
    }
    if (m.end && !m.end.failed) {
      moved.push({ sha, step: m, history: new Set((await git(gitdir, 'rev-list', sha)).split('\n').filter(Boolean)) });
    }
  }

  for (const a of events) {
    if (a.kind !== 'answer') continue;
    const ok = moved.some(
      (m) =>
        m.history.has(a.sha) &&
        done(m.step, a.seq) &&
        all.some((s) => s.start.op === 'fsyncDir' && s.start.path === dirname(ref) && s.start.seq > m.step.end!.seq && done(s, a.seq)),
    );
    if (!ok) problems.push(`answer ${a.label} (${a.sha.slice(0, 8)}): no flushed branch move to it before the answer`);
    const recorded = events.some(
      (e) =>
        e.kind === 'db' &&
        e.phase === 'end' &&
        !e.failed &&
        e.seq < a.seq &&
        e.stmts.some((st) => st.sql.startsWith('INSERT INTO git_commits') && st.args?.includes(a.sha)),
    );
    if (!recorded) problems.push(`answer ${a.label} (${a.sha.slice(0, 8)}): its commit's index batch had not committed`);
  }
  return problems;
}
