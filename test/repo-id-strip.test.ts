/**
 * Repository ids in paths are stripped to `[A-Za-z0-9_-]` (docs/concepts.md "Repositories"), and every stripping is logged: a
 * `repo_id_stripped` warning with the raw and the stripped forms and the request id. On both builds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTarget, type Target, type TargetKind } from './helpers/targets.ts';

interface Stripped {
  level: string;
  event: string;
  id: string;
  raw: string;
  stripped: string;
}

for (const kind of ['node', 'workers'] as TargetKind[]) {
  describe(`${kind}: a stripped repository id is logged`, () => {
    let t: Target;
    beforeAll(async () => {
      t = await startTarget(kind);
    });
    afterAll(async () => t?.stop());

    /** GET `path` with the legacy key: status, body and request id. */
    const get = async (path: string) => {
      const res = await t.api(path);
      return { status: res.status, body: await res.json(), requestId: res.headers.get('x-request-id')! };
    };
    const strippedLines = () =>
      t.logs
        .filter((l) => l.includes('"event":"repo_id_stripped"'))
        .map((l) => JSON.parse(l.slice(l.indexOf('{'))) as Stripped);
    /** The line of this request, once the runtime's output has reached the test (workerd's comes a moment later). */
    const lineOf = async (requestId: string) => {
      for (let i = 0; i < 200 && !strippedLines().some((l) => l.id === requestId); i++) await new Promise((r) => setTimeout(r, 10));
      return strippedLines().filter((l) => l.id === requestId);
    };

    it('team;x → teamx and x%2F..%2Fteam → xteam: used as stripped, each logged once with its request id', async () => {
      expect((await t.api('/v1/repos/team', { method: 'POST' })).status).toBe(201);
      const plain = await get('/v1/repos/team/pages');
      expect(plain.status).toBe(200);
      const semi = await get('/v1/repos/team;x/pages');
      expect([semi.status, semi.body]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
      expect(await lineOf(semi.requestId)).toEqual([
        { time: expect.any(String), level: 'warn', event: 'repo_id_stripped', id: semi.requestId, raw: 'team;x', stripped: 'teamx' },
      ]);
      const slashes = await get('/v1/repos/x%2F..%2Fteam/pages');
      expect([slashes.status, slashes.body]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
      expect(await lineOf(slashes.requestId)).toEqual([
        { time: expect.any(String), level: 'warn', event: 'repo_id_stripped', id: slashes.requestId, raw: 'x/../team', stripped: 'xteam' },
      ]);
      // Stripped into an existing repository's id: served, and logged all the same.
      const into = await get('/v1/repos/te%20am/pages');
      expect([into.status, into.body]).toEqual([200, { pages: [] }]);
      expect((await lineOf(into.requestId)).map((l) => [l.raw, l.stripped])).toEqual([['te am', 'team']]);
      // An id used as given is not logged (its line would have come before the later ones).
      expect(strippedLines().filter((l) => l.id === plain.requestId)).toEqual([]);
    });

    it('nothing usable left → 400 and no stripping logged; a long raw id is logged cut to 200 characters', async () => {
      const empty = await get('/v1/repos/%3B%3B/pages');
      expect([empty.status, empty.body]).toEqual([400, { error: 'invalid repo id', code: 'invalid_repo_id' }]);
      const long = await get(`/v1/repos/a${';'.repeat(300)}/pages`);
      expect([long.status, long.body]).toEqual([404, { error: 'repo not found', code: 'repo_not_found' }]);
      const [line] = await lineOf(long.requestId);
      expect(line).toMatchObject({ raw: `a${';'.repeat(199)}…`, stripped: 'a' });
      expect(strippedLines().filter((l) => l.id === empty.requestId)).toEqual([]);
    });
  });
}
