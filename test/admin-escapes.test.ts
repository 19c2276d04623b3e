/**
 * What the admin command prints of names and emails that identity providers chose: a name with an escape
 * sequence that retitles the terminal and clears the screen, then a newline and a forged row, must reach
 * the terminal as `?`s on its own row (text), and exactly, escaped, in --json. The users are written as a
 * sign-in through the identity provider writes them (lib/db/users.ts upsert), into a real data root; the
 * command runs as its own process (`npm run admin -- …`).
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clean } from '../client/output.ts';
import { systemClock } from '../lib/util/clock.ts';
import { openDatabaseFile } from '../lib/runtime/node/open-db.ts';
import { Users, type User } from '../lib/db/users.ts';
import { runAdmin, type Run } from './helpers/admin.ts';

const NAME = 'Mallory\u001b]0;owned\u0007\u001b[2J\nbob@example.com  Bob  admin  active';
const C1_NAME = 'Csi\u009b2J';
const EMAIL = 'eve\u001b[8m@example.com';
/** Any C0 or C1 control character but the newline ending a line. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

let dir: string;
let dataRoot: string;
const users: Record<string, User> = {};

const admin = (...args: string[]): Promise<Run> => runAdmin(dataRoot, ...args);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kr-admin-escapes-'));
  dataRoot = join(dir, 'data');
  await mkdir(dataRoot);
  const db = await openDatabaseFile(join(dataRoot, 'service.db'), 0);
  const u = new Users(db, systemClock);
  const idp = 'https://idp.example';
  users.mallory = (await u.upsert({ issuer: idp, subject: 'mallory', email: 'mallory@example.com', name: NAME })).user;
  users.csi = (await u.upsert({ issuer: idp, subject: 'csi', email: 'csi@example.com', name: C1_NAME })).user;
  users.eve = (await u.upsert({ issuer: idp, subject: 'eve', email: EMAIL, name: 'Eve' })).user;
  await db.close();
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('admin command: control characters from identity providers', () => {
  it('user list: one row per user, every control character shown as ?', async () => {
    const r = await admin('user', 'list');
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).not.toMatch(CONTROL);
    const lines = r.stdout.split('\n');
    expect(lines).toHaveLength(5); // the header, three users, and what follows the last newline
    expect(lines.map((l) => l.split(/\s{2,}/).pop())).toEqual(['ID', users.mallory!.id, users.csi!.id, users.eve!.id, '']);
    expect(lines[1]).toContain(`mallory@example.com  ${clean(NAME)}  https://idp.example`);
    expect(lines[2]).toContain(`csi@example.com      ${clean(C1_NAME)}`);
    expect(lines[3]!.startsWith(`${clean(EMAIL)}  Eve`)).toBe(true);
  });

  it('user list --json: valid JSON with the exact values, no raw control character (C1 escaped too)', async () => {
    const r = await admin('user', 'list', '--json');
    expect(r.code).toBe(0);
    expect(r.stdout.slice(0, -1)).not.toMatch(CONTROL);
    expect(r.stdout).toContain('Csi\\u009b2J');
    expect(JSON.parse(r.stdout).users.map((u: { name: string; email: string }) => [u.email, u.name])).toEqual([
      ['mallory@example.com', NAME],
      ['csi@example.com', C1_NAME],
      [EMAIL, 'Eve'],
    ]);
  });

  it('messages naming the user (disable, token, enable) show the email cleaned', async () => {
    const disabled = await admin('user', 'disable', users.eve!.id);
    expect(disabled).toEqual({ code: 0, stdout: `disabled ${clean(EMAIL)}: their sessions and access tokens no longer work, and they cannot sign in\n`, stderr: '' });
    const refused = await admin('token', users.eve!.id);
    expect(refused).toEqual({ code: 1, stdout: '', stderr: `error: ${clean(EMAIL)} is disabled (user enable ${clean(EMAIL)} first)\n` });
    expect((await admin('user', 'enable', users.eve!.id)).stdout).toBe(`enabled ${clean(EMAIL)}\n`);
    const minted = await admin('token', users.eve!.id, '--label', 'cli');
    expect(minted.code).toBe(0);
    expect(minted.stderr).toBe(`personal access token for ${clean(EMAIL)} (label "cli", does not expire); it is shown only this once\n`);
  });
});
