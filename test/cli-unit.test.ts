/**
 * In-process checks of the command-line client's pieces that a child process cannot show: every command's
 * help carries examples, every read command takes --json, colour only on a TTY and never with NO_COLOR,
 * the config folder rules.
 */
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram, commandNamed } from '../cli/program.ts';
import { clean, colourEnabled, jsonText, pageForTerminal, terminalSafe } from '../client/output.ts';
import { checkRepoId, configDir, normaliseServerUrl, repoIdProblem } from '../client/config.ts';
import { Api, DEFAULT_LIMITS, DEFAULT_TIMEOUT_MS } from '../client/api.ts';
import { packPushes } from '../client/sync.ts';
import { frontmatterTrouble } from '../client/pagecheck.ts';
import { conflictSummary, listFieldsOf, PREAMBLE_LABEL, renderDiff, summaryLines } from '../client/render.ts';
import { paint } from '../client/output.ts';
import { diffPages } from '../lib/core/differ/index.ts';
import { isValidSlug } from '../lib/core/page/parse.ts';
import { pagePathProblem } from '../lib/core/page/path.ts';
import { homedir } from 'node:os';
import { join } from 'node:path';

function walk(cmd: Command, prefix: string[] = []): Array<{ name: string; cmd: Command }> {
  const out: Array<{ name: string; cmd: Command }> = [];
  for (const sub of cmd.commands) {
    const name = [...prefix, sub.name()].join(' ');
    out.push({ name, cmd: sub }, ...walk(sub, [...prefix, sub.name()]));
  }
  return out;
}

function helpOf(cmd: Command): string {
  let text = '';
  cmd.configureOutput({ writeOut: (s) => (text += s), writeErr: (s) => (text += s) });
  cmd.outputHelp();
  return text;
}

describe('kr command tree', () => {
  const program = buildProgram();
  const all = walk(program);

  it('a command line that names a command builds that command alone, the same as in the whole tree', () => {
    for (const top of program.commands) {
      const name = top.name();
      for (const argv of [[name, '--help'], ['--repo', 'acme', name], ['-r', 'acme', '--timeout=5', name, 'x'], ['--timeout', '9', '--repo=acme', name]]) {
        const one = buildProgram({ argv });
        expect(one.commands.map((c) => c.name()), argv.join(' ')).toEqual([name]);
        expect(walk(one).map((c) => c.name)).toEqual(walk(program).filter((c) => c.name === name || c.name.startsWith(`${name} `)).map((c) => c.name));
        expect(helpOf(one.commands[0]!)).toBe(helpOf(top));
      }
    }
    // No command, an option commander must read first, `--`, `help`, a misspelt command: the whole tree.
    const everything = program.commands.map((c) => c.name());
    expect(everything.length).toBeGreaterThan(20);
    for (const argv of [[], ['--help'], ['-V'], ['--json', 'status'], ['-rX', 'status'], ['--', 'status'], ['help', 'status'], ['stauts'], ['--repo']]) {
      expect(commandNamed(argv) === undefined || !everything.includes(commandNamed(argv)!), argv.join(' ')).toBe(true);
      expect(buildProgram({ argv }).commands.map((c) => c.name()), argv.join(' ')).toEqual(everything);
    }
  });

  it('has the commands docs/cli.md lists', () => {
    const names = all.map((c) => c.name);
    for (const n of [
      'login', 'remote set', 'remote set-repo', 'remote get', 'init', 'push', 'pull', 'status', 'log', 'timeline', 'history',
      'diff', 'evolution', 'repos list', 'repos create', 'invite create', 'invite list', 'invite revoke', 'join', 'members list',
      'members remove', 'pats create', 'pats list', 'pats revoke', 'rm', 'pages', 'show',
    ]) {
      expect(names).toContain(n);
    }
  });

  it('every command’s --help ends with examples', () => {
    for (const { name, cmd } of [{ name: 'kr', cmd: program }, ...all]) {
      expect(helpOf(cmd), name).toMatch(/\nExamples:\n {2}\$ kr /);
    }
  });

  it('every read command takes --json', () => {
    const reads = ['remote get', 'status', 'log', 'timeline', 'pages', 'show', 'history', 'diff', 'evolution', 'repos list', 'invite list', 'members list', 'pats list'];
    for (const { name, cmd } of all.filter((c) => reads.includes(c.name))) {
      expect(cmd.options.map((o) => o.long), name).toContain('--json');
    }
  });
});

describe('colour', () => {
  const tty = { isTTY: true } as never;
  const pipe = { isTTY: false } as never;
  it('only on a TTY, never with NO_COLOR (any non-empty value) or TERM=dumb', () => {
    expect(colourEnabled(tty, {})).toBe(true);
    expect(colourEnabled(pipe, {})).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: '1' })).toBe(false);
    expect(colourEnabled(tty, { NO_COLOR: '' })).toBe(true);
    expect(colourEnabled(tty, { TERM: 'dumb' })).toBe(false);
  });
});

describe('config folder', () => {
  it('is $XDG_CONFIG_HOME/kr when that is absolute, else ~/.config/kr', () => {
    expect(configDir({ XDG_CONFIG_HOME: '/x/y' })).toBe('/x/y/kr');
    expect(configDir({ XDG_CONFIG_HOME: 'relative' })).toBe(join(homedir(), '.config', 'kr'));
    expect(configDir({})).toBe(join(homedir(), '.config', 'kr'));
  });
});

// --- test/cli-round2.test.ts: the pieces behind each item, in-process ------------------------------------

describe('Api: time limit, limits, token errors (items 3, 4, 11)', () => {
  const answer = (status: number, body: unknown) => async () => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

  it('every request has a 30 s limit by default; running out says the server did not answer', async () => {
    expect(DEFAULT_TIMEOUT_MS).toBe(30_000);
    expect(new Api({ baseUrl: 'http://x', token: 't' }).timeoutMs).toBe(30_000);
    const hang: typeof fetch = (_u, init) =>
      new Promise((_r, reject) => init?.signal?.addEventListener('abort', () => reject(init.signal!.reason)));
    const api = new Api({ baseUrl: 'http://127.0.0.1:9', token: 't', timeoutMs: 50, fetch: hang });
    await expect(api.repos()).rejects.toMatchObject({ message: 'the server at http://127.0.0.1:9 did not answer within 0.05 s', code: 'timeout', exitCode: 1 });
  });

  it('GET /v1/limits, and the defaults when an older server answers 404', async () => {
    const mine = { max_body_bytes: 1000, max_files_per_push: 3, max_page_path_bytes: 512 };
    expect(await new Api({ baseUrl: 'http://x', token: 't', fetch: answer(200, mine) }).limits()).toEqual(mine);
    expect(await new Api({ baseUrl: 'http://x', token: 't', fetch: answer(404, { error: 'not found', code: 'not_found' }) }).limits()).toEqual({
      max_body_bytes: 8388608,
      max_files_per_push: 10000,
      max_page_path_bytes: 512,
    });
    expect(DEFAULT_LIMITS).toEqual({ max_body_bytes: 8388608, max_files_per_push: 10000, max_page_path_bytes: 512 });
  });

  it('401 invalid token → "token expired or revoked; run kr login"; codes for the rest, matched on the server\'s code', async () => {
    const api = (status: number, body: unknown) => new Api({ baseUrl: 'http://x', token: 't', fetch: answer(status, body) });
    await expect(api(401, { error: 'invalid token', code: 'invalid_token' }).repos()).rejects.toMatchObject({ message: 'token expired or revoked; run kr login', code: 'token_invalid' });
    await expect(api(403, { error: 'not a member of this repo', code: 'not_a_member' }).repos()).rejects.toMatchObject({
      message: 'not a member of this repo',
      code: 'forbidden',
      refusal: 'not_a_member',
    });
    // Matched on the code, not on the text: the same words without it (a proxy, a server older than codes) are
    // shown as they are, named by their status, with no refusal.
    await expect(api(401, { error: 'invalid token' }).repos()).rejects.toMatchObject({ message: 'invalid token', code: 'unauthorized', refusal: null });
    await expect(api(403, { error: 'not a member of this repo' }).repos()).rejects.toMatchObject({ message: 'not a member of this repo', code: 'forbidden' });
    await expect(api(401, { error: 'whatever the words', code: 'invalid_token' }).repos()).rejects.toMatchObject({ message: 'token expired or revoked; run kr login', code: 'token_invalid' });
    await expect(api(402, { error: 'plan limit', code: 'quota_repos', limit: 3 }).repos()).rejects.toMatchObject({ code: 'quota_repos' });
  });

  it('the identity-provider probe reads the 503 that comes first without a provider', async () => {
    const probe = (status: number, body: unknown) => new Api({ baseUrl: 'http://x', token: null, fetch: answer(status, body) }).hasIdentityProvider();
    expect(await probe(503, { error: 'identity provider not configured', code: 'idp_not_configured' })).toBe(false);
    expect(await probe(400, { error: 'id_token required', code: 'id_token_required' })).toBe(true);
    expect(await probe(500, { error: 'internal error', code: 'internal_error' })).toBeNull();
  });
});

describe('pushes packed under the body cap (item 3)', () => {
  it('first fit, largest first: as few pushes as fit, each within the byte and file limits', () => {
    const f = (bytes: number) => ({ bytes });
    const packs = packPushes([f(60), f(50), f(40), f(30), f(20)], 100, 10);
    expect(packs.map((p) => p.map((x) => x.bytes))).toEqual([[60, 40], [50, 30, 20]]);
    expect(packPushes([f(1), f(1), f(1)], 100, 2).map((p) => p.length)).toEqual([2, 1]);
    expect(packPushes([], 100, 2)).toEqual([]);
  });
});

describe('the slug rule is the path rule (item 8)', () => {
  it('a slug is valid exactly when the server accepts its layout paths', () => {
    for (const slug of ['decision-log', 'ünïcødé', 'notes.md', 'a b', 'v1.0']) {
      expect(isValidSlug(slug), slug).toBe(true);
      expect(pagePathProblem(`wiki/concepts/${slug}.md`)).toBeNull();
    }
    for (const slug of ['CON', 'nul', 'what?', 'a:b', 'trailing.', 'trailing ', '.git', 'git~1', 'Cafe\u0301', 'x'.repeat(300), '-rf', 'a/b', '']) {
      expect(isValidSlug(slug), slug).toBe(false);
    }
  });
});

describe('frontmatter that does not parse: the file line (item 9)', () => {
  it('names the line in the page file, not in the YAML block', () => {
    expect(frontmatterTrouble('---\ntitle: a\ntitle: b\n---\nx\n')).toEqual({ line: 3, problem: 'invalid YAML: Map keys must be unique' });
    expect(frontmatterTrouble('---\ntitle: a\n  bad: [\n---\n')?.line).toBeGreaterThanOrEqual(2);
    expect(frontmatterTrouble('---\ntitle: a\nno end\n')).toMatchObject({ line: 1 });
    expect(frontmatterTrouble('---\n- a list\n---\n')).toEqual({ line: 2, problem: 'frontmatter is not a mapping' });
    expect(frontmatterTrouble('no frontmatter at all\n')).toBeNull();
    expect(frontmatterTrouble('---\ntitle: fine\n---\n## A\n')).toBeNull();
  });
});

describe('renderings (item 12)', () => {
  const p = paint({ isTTY: false } as never);
  it('an added member of a list field reads as a list item; a new field as a new field', () => {
    const d = diffPages('---\ntags: [a]\n---\n', '---\ntags: [a, b]\nstatus: draft\n---\n');
    const text = renderDiff(d, { path: 'x.md', fromLabel: 'a', toLabel: 'b', listFields: listFieldsOf('---\ntags: [a, b]\n---\n') }, p);
    expect(text).toContain('  ~ tags: added list item "b"\n  + status: "draft" (new field)');
    // Without knowing the lists, a field with both an added and a removed member is still a list.
    const both = diffPages('---\ntags: [a, b]\n---\n', '---\ntags: [a, c]\n---\n');
    expect(renderDiff(both, { path: 'x.md', fromLabel: 'a', toLabel: 'b' }, p)).toContain('  ~ tags: added list item "c"\n  ~ tags: removed list item "b"');
    expect(summaryLines(both, p)).toEqual(['    frontmatter tags[+"c"] tags[-"b"]']);
  });

  it('one name for the preamble in every view', () => {
    const d = diffPages('---\na: 1\n---\nIntro\n## A\nx\n', '---\na: 1\n---\nIntro 2\n## A\nx\n');
    expect(PREAMBLE_LABEL).toBe('(preamble)');
    expect(renderDiff(d, { path: 'x.md', fromLabel: 'a', toLabel: 'b' }, p)).toContain('(preamble)  modified');
    expect(summaryLines(d, p)).toEqual(['    modified  (preamble)']);
    expect(conflictSummary('---\na: 1\n---\nMine\n', '---\na: 1\n---\nTheirs\n', undefined, p)).toEqual(['    differs                 (preamble)']);
    // A page whose frontmatter does not parse is compared as a whole: that entry is not the preamble.
    const fallback = diffPages('no frontmatter\n', 'no frontmatter either\n');
    expect(renderDiff(fallback, { path: 'x.md', fromLabel: 'a', toLabel: 'b' }, p)).toContain('(whole file)  modified');
    expect(summaryLines(fallback, p)).toEqual(['    modified  (whole file)']);
  });
});

describe('server URLs (item 12)', () => {
  it('host:port alone means http://', () => {
    expect(normaliseServerUrl('localhost:8080')).toBe('http://localhost:8080');
    expect(normaliseServerUrl('10.0.0.5:8080/kr/')).toBe('http://10.0.0.5:8080/kr');
    expect(normaliseServerUrl('kr.example.com')).toBe('http://kr.example.com');
    expect(normaliseServerUrl('https://kr.example.com/')).toBe('https://kr.example.com');
    expect(() => normaliseServerUrl('ftp://x')).toThrow('unsupported URL scheme ftp:');
  });
});

describe('text for the terminal', () => {
  const EVIL = '\u001b]0;x\u0007\u001b[2J\nforged\u009b2J';

  it('clean: one value on one line, every control character but tab as "?"', () => {
    expect(clean(`a\t${EVIL}`)).toBe('a\t?]0;x??[2J?forged?2J');
  });

  it('terminalSafe: lines and tabs stay; kr\'s own colours only when colour is on', () => {
    const red = `\u001b[31merror:\u001b[39m`;
    expect(terminalSafe(`${red} x\n\ty${EVIL}`, true)).toBe(`${red} x\n\ty?]0;x??[2J\nforged?2J`);
    expect(terminalSafe(`${red} x`, false)).toBe('?[31merror:?[39m x');
  });

  it('pageForTerminal: CRLF line ends stay, a lone carriage return does not', () => {
    expect(pageForTerminal(`a\r\nb\rc\t${EVIL}`)).toBe('a\r\nb?c\t?]0;x??[2J\nforged?2J');
  });

  it('jsonText: the same JSON value, with the C1 controls and DEL escaped too', () => {
    const value = { e: EVIL + '\u007f' };
    const text = jsonText(value, 2);
    expect(text).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    expect(JSON.parse(text)).toEqual(value);
  });

  it("the server's error text is cleaned before it becomes a message", async () => {
    const api = new Api({ baseUrl: 'http://x', token: 't', fetch: async () => new Response(JSON.stringify({ error: `bad ${EVIL}` }), { status: 400 }) });
    await expect(api.repos()).rejects.toMatchObject({ message: 'bad ?]0;x??[2J?forged?2J', code: 'bad_request' });
  });
});

describe('repository ids the server would strip', () => {
  it('names the id it would become', () => {
    expect(repoIdProblem('team;x')).toBe(
      'invalid repository id "team;x" (letters, digits, _ and -, at most 64): the server would strip it to "teamx", another repository; if you mean teamx, give that',
    );
    expect(repoIdProblem('x\u001b')).toContain('invalid repository id "x\\u001b"');
    expect(repoIdProblem('ok')).toBe('invalid repository id "ok" (letters, digits, _ and -, at most 64)');
    expect(repoIdProblem(`${'a'.repeat(65)};`)).toBe(
      `invalid repository id "${'a'.repeat(65)};" (letters, digits, _ and -, at most 64): even with the other characters stripped it is 65 characters long`,
    );
    expect(() => checkRepoId('a b', '/p/.kr/state.json')).toThrow('invalid repository id "a b" in /p/.kr/state.json (letters');
    expect(checkRepoId('a_b-1')).toBe('a_b-1');
  });
});
