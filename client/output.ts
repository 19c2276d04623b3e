/**
 * Terminal output: colour (only on a TTY, never with NO_COLOR or TERM=dumb), aligned tables, UTC times,
 * a progress indicator for long runs, a hidden prompt, and scrubbing of control characters from anything
 * the server sent before it reaches a terminal.
 *
 * Text that someone else chose (names, emails, labels, repository ids, paths, commit messages, titles,
 * snippets, the server's error messages, page text) reaches the terminal in one way only:
 *  - each such value is put into a line through {@link clean} (or {@link table}, which cleans every cell), so
 *    it can neither start a new line nor carry an escape sequence;
 *  - every line leaves through {@link out}, {@link note}, {@link warn} or the error printer of cli/main.ts,
 *    which pass the whole text through {@link terminalSafe}: a value that missed `clean` still cannot move
 *    the cursor, retitle the window or clear the screen;
 *  - JSON goes out through {@link jsonText}, whose escapes cover the C1 controls too;
 *  - `kr show` prints a page's exact bytes into a pipe or a file, and {@link pageForTerminal}'s on a terminal.
 */
import type { Writable } from 'node:stream';
import { clean } from './http/text.ts';

type Stream = Writable & { isTTY?: boolean; columns?: number };

export function colourEnabled(stream: Stream, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export interface Paint {
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  bold(s: string): string;
  dim(s: string): string;
}

const sgr = (open: number, close: number) => (s: string) => `\u001b[${open}m${s}\u001b[${close}m`;
const plain = (s: string) => s;

export function paint(stream: Stream = process.stdout): Paint {
  if (!colourEnabled(stream)) return { red: plain, green: plain, yellow: plain, cyan: plain, bold: plain, dim: plain };
  return { red: sgr(31, 39), green: sgr(32, 39), yellow: sgr(33, 39), cyan: sgr(36, 39), bold: sgr(1, 22), dim: sgr(2, 22) };
}

export { clean } from './http/text.ts';

/** kr's own colour sequences (see {@link paint}): SGR, `ESC [ <digits and ;> m`. */
// eslint-disable-next-line no-control-regex
const SGR_OR_CONTROL = /\u001b\[[0-9;]*m|[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Whole lines of output, made safe for a terminal: newlines and tabs stay (kr's own line structure), every
 * other control character becomes `?`; with `colour`, kr's own colour sequences (SGR) stay as well.
 */
export function terminalSafe(text: string, colour = false): string {
  if (!colour) return text.replace(CONTROL, '?');
  return text.replace(SGR_OR_CONTROL, (m) => (m.length > 1 ? m : '?'));
}

/**
 * A page's text for a terminal (`kr show`): lines, tabs and CRLF line ends stay; every other control
 * character (an escape sequence in the page, a lone carriage return that would overprint a line) is `?`.
 */
export function pageForTerminal(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\r(?!\n)|[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g, '?');
}

/**
 * JSON text: JSON.stringify escapes the C0 controls itself; the C1 controls (U+0080–U+009F, which some
 * terminals obey) and DEL are escaped here too. The same JSON value, nothing raw left for a terminal.
 */
export function jsonText(value: unknown, indent?: number): string {
  // eslint-disable-next-line no-control-regex
  return JSON.stringify(value, null, indent).replace(/[\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Rows padded into columns (two spaces apart); the last column is not padded. */
export function table(rows: string[][], header?: string[], p: Paint = paint()): string {
  const all = header ? [header, ...rows] : rows;
  if (all.length === 0) return '';
  const cols = Math.max(...all.map((r) => r.length));
  const width: number[] = [];
  for (let c = 0; c < cols; c++) width[c] = Math.max(...all.map((r) => [...(r[c] ?? '')].length));
  const line = (r: string[]) =>
    r
      .map((cell, c) => (c === r.length - 1 ? cell : cell + ' '.repeat(width[c]! - [...cell].length)))
      .join('  ')
      .trimEnd();
  const out = rows.map((r) => line(r.map(clean)));
  if (header) out.unshift(p.bold(line(header)));
  return out.join('\n');
}

/** Unix seconds → `2026-05-17T10:00:00Z` (UTC, whole seconds). */
export function utc(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const shortSha = (sha: string): string => (sha === '' ? '(none)' : clean(sha.slice(0, 7)));

export function printJson(value: unknown): void {
  process.stdout.write(jsonText(value, 2) + '\n');
}

/** Lines on stdout (through {@link terminalSafe}). */
export function out(line = ''): void {
  process.stdout.write(terminalSafe(line, colourEnabled(process.stdout)) + '\n');
}

/** A warning on stderr (through {@link terminalSafe}). */
export function warn(line: string): void {
  const p = paint(process.stderr);
  process.stderr.write(terminalSafe(`${p.yellow('warning:')} ${line}`, colourEnabled(process.stderr)) + '\n');
}

/** Lines on stderr (through {@link terminalSafe}). */
export function note(line: string): void {
  process.stderr.write(terminalSafe(line, colourEnabled(process.stderr)) + '\n');
}

/** Below this many items no progress indicator is drawn. */
export const PROGRESS_THRESHOLD = 20;

export interface Progress {
  tick(n?: number): void;
  done(): void;
}

/**
 * A one-line `label 12/300` counter on stderr, redrawn in place; only on a TTY and only for at least
 * {@link PROGRESS_THRESHOLD} items, so logs and pipes never see it.
 */
export function progress(label: string, total: number, stream: Stream = process.stderr): Progress {
  if (stream.isTTY !== true || total < PROGRESS_THRESHOLD) return { tick() {}, done() {} };
  let n = 0;
  let last = 0;
  const draw = () => stream.write(`\r${label} ${n}/${total}`);
  draw();
  return {
    tick(k = 1) {
      n += k;
      const now = Date.now();
      if (now - last > 50 || n >= total) {
        last = now;
        draw();
      }
    },
    done() {
      stream.write('\r\u001b[2K');
    },
  };
}

/** A spinner-free "working" line for a single long request (TTY only), erased when done. */
export function busy(label: string, stream: Stream = process.stderr): { done(): void } {
  if (stream.isTTY !== true) return { done() {} };
  stream.write(`${label}…`);
  return {
    done() {
      stream.write('\r\u001b[2K');
    },
  };
}

/** Reads a secret from the terminal without echoing it. */
export async function promptSecret(question: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) throw new Error('stdin is not a terminal');
  process.stderr.write(question);
  return new Promise<string>((resolve, reject) => {
    let value = '';
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const finish = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      process.stderr.write('\n');
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new Error('cancelled'));
        if (ch === '\u007f' || ch === '\b') value = value.slice(0, -1);
        else if (ch >= ' ') value += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/** All of stdin as text (for `--token -`). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
