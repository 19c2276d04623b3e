/**
 * An export racing the repository's deletion, once for both builds (test/export-race.test.ts: the Node
 * server; test/export-race-workers.test.ts: the hosted build in workerd): each answer is a 404 before the
 * export starts, a bundle that `git bundle verify` accepts, or a transfer that breaks (the body's read
 * fails) — never a 200 whose body ends cleanly short of a whole bundle. The deletion lands at several
 * points: with the export's request, once its headers are in, after its first chunk while the reader
 * waits, and a few milliseconds into a reader that keeps reading. On the hosted build a deletion waits for
 * the bodies being streamed (workerd ends a response whose stream fails as if it were whole): there every
 * export that began is whole, and its deletion answers after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from './helpers/env.ts';
import { LEGACY_KEY, startTarget, type Target, type TargetKind } from './helpers/targets.ts';

/** Rounds per build: each deletion point about five times. */
const ROUNDS = 20;
/** Pages per repository, of text that hardly compresses: the bundle is several chunks (64 KiB) long. */
const PAGES = 120;
const pageText = (round: number, i: number) => {
  let text = `# ${round}/${i}\n`;
  for (let k = 0; text.length < 24_000; k++) text += `${createHash('sha256').update(`${round}:${i}:${k}`).digest('base64')}\n`;
  return text;
};

type Outcome = { kind: 'not found' } | { kind: 'bundle'; bytes: number } | { kind: 'cut'; bytes: number; error: string } | { kind: 'short'; bytes: number; why: string };

export function exportRaceCases(kind: TargetKind): void {
  describe(`an export racing the repository's deletion (${kind})`, () => {
    let t: Target;
    let work: { path: string; cleanup: () => Promise<void> };

    beforeAll(async () => {
      t = await startTarget(kind);
      work = await tempDir('kr-export-race-');
      // `git bundle verify` runs inside a repository; an empty one has every prerequisite (none).
      execFileSync('git', ['init', '-q', join(work.path, 'verify')]);
    }, 120_000);
    afterAll(async () => {
      await t?.stop();
      await work?.cleanup();
    });

    /** Whether git takes `bytes` for a whole bundle of `head`. */
    const verify = (bytes: Uint8Array, name: string, head: string): string | null => {
      const file = join(work.path, `${name}.bundle`);
      writeFileSync(file, bytes);
      try {
        execFileSync('git', ['bundle', 'verify', '-q', file], { cwd: join(work.path, 'verify'), stdio: 'pipe' });
        const heads = execFileSync('git', ['bundle', 'list-heads', file], { cwd: join(work.path, 'verify'), encoding: 'utf8' });
        return heads.includes(`${head} refs/heads/main`) ? null : `heads ${heads}`;
      } catch (e) {
        return String((e as { stderr?: Buffer }).stderr ?? e).slice(0, 300);
      }
    };

    it('answers 404, a whole bundle or a broken transfer, never a clean short 200', async () => {
      const outcomes: Outcome[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const repo = `race-${round}`;
        const files = Array.from({ length: PAGES }, (_, i) => ({ path: `p/${i}.md`, content: pageText(round, i) }));
        const pushed = await t.api(`/v1/repos/${repo}/sync/push`, { method: 'POST', json: { files, message: 'pages' } });
        expect(pushed.status).toBe(200);
        const head = ((await pushed.json()) as { new_head: string }).new_head;
        const point = round % 4;
        const del = async () => {
          const r = await t.api(`/v1/repos/${repo}?confirm=${repo}`, { method: 'DELETE' });
          expect(r.status).toBe(204);
        };
        // Plain fetch: the target's client reads a copy of every body whole, to check it against the OpenAPI document.
        const exporting = fetch(`${t.url}/v1/repos/${repo}/export`, { headers: { authorization: `Bearer ${LEGACY_KEY}` } });
        let deleting: Promise<void> | null = point === 0 ? del() : null;
        const r = await exporting;
        let outcome: Outcome;
        if (r.status === 404) {
          expect(await r.json()).toEqual({ error: 'repo not found', code: 'repo_not_found' });
          outcome = { kind: 'not found' };
        } else {
          expect(r.status).toBe(200);
          if (point === 1) deleting = del();
          const reader = r.body!.getReader();
          const parts: Uint8Array[] = [];
          let bytes = 0;
          let error: unknown = null;
          try {
            for (let n = 0; ; n++) {
              if (point === 2 && n === 1) {
                // The reader waits while the deletion runs.
                deleting = del();
                await sleep(300);
              }
              if (point === 3 && n === 1) deleting = sleep(round % 7).then(del);
              const { done, value } = await reader.read();
              if (done) break;
              parts.push(value);
              bytes += value.byteLength;
            }
          } catch (e) {
            error = e;
          }
          if (error !== null) {
            outcome = { kind: 'cut', bytes, error: String(error) };
          } else {
            const body = new Uint8Array(bytes);
            let at = 0;
            for (const p of parts) {
              body.set(p, at);
              at += p.byteLength;
            }
            const why = verify(body, repo, head);
            outcome = why === null ? { kind: 'bundle', bytes } : { kind: 'short', bytes, why };
          }
        }
        await deleting;
        outcomes.push(outcome);
        // The repository is gone either way.
        expect((await t.api(`/v1/repos/${repo}/export`)).status).toBe(404);
      }
      const counts: Record<string, number> = {};
      for (const o of outcomes) counts[o.kind] = (counts[o.kind] ?? 0) + 1;
      console.log(`export racing deletion (${kind}): ${JSON.stringify(counts)}`);
      const short = outcomes.filter((o) => o.kind === 'short');
      expect(short, JSON.stringify(outcomes)).toEqual([]);
      // The race was run: on Node some exports began before their deletion and did not finish (a deletion
      // after the first chunk, while the reader waits, leaves most of a bundle of several chunks unread); on
      // the hosted build those are whole, their deletions answered after them (checked above).
      if (kind === 'node') expect(outcomes.some((o) => o.kind === 'cut'), JSON.stringify(outcomes)).toBe(true);
      else expect(outcomes.filter((o) => o.kind === 'cut'), JSON.stringify(outcomes)).toEqual([]);
    }, 600_000);
  });
}
