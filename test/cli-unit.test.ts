/**
 * In-process checks of the command-line client's pieces that a child process cannot show: every command's
 * help carries examples, every read command takes --json, colour only on a TTY and never with NO_COLOR,
 * the config folder rules.
 */
import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../cli/program.ts';
import { colourEnabled } from '../cli/output.ts';
import { configDir } from '../cli/config.ts';
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

  it('has every command of issue 9', () => {
    const names = all.map((c) => c.name);
    for (const n of [
      'login', 'remote set', 'remote set-repo', 'remote get', 'init', 'push', 'pull', 'status', 'log', 'timeline', 'history',
      'diff', 'evolution', 'repos list', 'repos create', 'invite create', 'invite list', 'invite revoke', 'join', 'members list',
      'members remove', 'pats create', 'pats list', 'pats revoke',
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
    const reads = ['remote get', 'status', 'log', 'timeline', 'history', 'diff', 'evolution', 'repos list', 'invite list', 'members list', 'pats list'];
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
