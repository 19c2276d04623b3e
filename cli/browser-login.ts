/**
 * `kr login --browser`: a one-shot HTTP listener on 127.0.0.1 (a random port) waits for the
 * dashboard to hand over a personal access token.
 *
 *  1. state = 32 random bytes (base64url); the listener binds 127.0.0.1:0;
 *  2. `<dashboard>/cli-login?port=&state=&hostname=` is opened in the browser (KR_BROWSER, else the platform's
 *     opener) and always printed on stderr, so a user without a local browser can copy it;
 *  3. the signed-in user allows it there; the dashboard mints a PAT labelled with the hostname and posts it
 *     with a form to `http://127.0.0.1:<port>/callback` (`state=&token=`, or `state=&error=denied` for Cancel,
 *     as application/x-www-form-urlencoded): the token travels in the body, so no address holds it (browser
 *     history, proxy or server logs of URLs);
 *  4. a callback with the right state (compared in constant time) ends the wait: the token is handed to
 *     `accept` (the same check and save as `kr login --token`), and the tab gets a short page saying how it
 *     went (the token is never echoed). A wrong state gets 400 and the wait goes on; a GET (the old
 *     query-string handover) gets 405, another body type 415, a body over 16 KiB 413.
 *
 * The wait ends after 5 minutes (KR_LOGIN_TIMEOUT_MS overrides it, for tests) or on Ctrl-C; the listener is
 * closed in every case.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname as osHostname } from 'node:os';
import { CliError, refused, usageError } from '../client/errors.ts';
import { clean, note } from '../client/output.ts';

export const DEFAULT_DASHBOARD_URL = 'http://localhost:5173';
export const DEFAULT_LOGIN_TIMEOUT_MS = 5 * 60_000;

/** The dashboard's base URL: `--dashboard`, else KR_DASHBOARD_URL, else http://localhost:5173; no trailing slash. */
export function dashboardBase(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const raw = flag ?? (env.KR_DASHBOARD_URL || DEFAULT_DASHBOARD_URL);
  const from = flag !== undefined ? '--dashboard' : env.KR_DASHBOARD_URL ? 'KR_DASHBOARD_URL' : 'the default';
  const typed = raw.trim();
  let url: URL;
  try {
    url = new URL(/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(typed) ? typed : `http://${typed}`);
  } catch {
    throw usageError(`not a URL: ${raw} (${from}; expected the dashboard's address, e.g. https://kr.example.com)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`unsupported URL scheme ${url.protocol} in ${from} (expected http or https)`);
  if (url.username || url.password) throw usageError(`the dashboard URL (${from}) must not carry a user name or password`);
  if (url.search || url.hash) throw usageError(`the dashboard URL (${from}) must not carry a query or fragment`);
  return url.toString().replace(/\/+$/, '');
}

/** How long to wait for the browser: KR_LOGIN_TIMEOUT_MS (a positive integer) or 5 minutes. */
export function loginTimeout(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.KR_LOGIN_TIMEOUT_MS;
  if (raw === undefined || raw === '') return DEFAULT_LOGIN_TIMEOUT_MS;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n <= 0) {
    throw usageError(`KR_LOGIN_TIMEOUT_MS must be a whole number of milliseconds greater than zero, not ${JSON.stringify(raw)}`);
  }
  return n;
}

/** 300000 → "5 minutes", 60000 → "1 minute", 1500 → "1.5 seconds". */
export function duration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return ms === 60_000 ? '1 minute' : `${ms / 60_000} minutes`;
  const s = Math.round(ms / 100) / 10;
  return s === 1 ? '1 second' : `${s} seconds`;
}

export const timeoutMessage = (ms: number): string => `no answer from the browser within ${duration(ms)}`;

/** This machine's name as the PAT label will show it (the dashboard caps it too). */
export function localHostname(): string {
  return (clean(osHostname()).trim() || 'unknown host').slice(0, 100);
}

/** `<dashboard>/cli-login?port=&state=&hostname=` */
export function loginUrl(dashboard: string, port: number, state: string, host: string): string {
  return `${dashboard}/cli-login?${new URLSearchParams({ port: String(port), state, hostname: host })}`;
}

const sameSecret = (a: string, b: string): boolean =>
  timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());

const isLoopbackPeer = (addr: string | undefined): boolean =>
  addr !== undefined && (addr === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(addr));

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** A small page for the browser tab (no script: there is nothing in its address to clean up). */
function page(title: string, text: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:3rem auto;padding:0 1rem;line-height:1.5}</style>
</head><body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></main>
</body></html>
`;
}

function answer(res: ServerResponse, status: number, title: string, text: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; form-action 'none'",
    ...extra,
  });
  res.end(page(title, text));
}

/** Largest callback body read: a state and a token are a few hundred bytes. */
export const CALLBACK_MAX_BYTES = 16 * 1024;

/** The form fields of a callback's body, or why it is refused (status and page text). */
async function readForm(req: IncomingMessage): Promise<URLSearchParams | { status: number; title: string; text: string }> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') {
    req.resume();
    return { status: 415, title: 'Unsupported answer', text: 'The answer must be a form (application/x-www-form-urlencoded).' };
  }
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > CALLBACK_MAX_BYTES) {
    req.resume();
    return { status: 413, title: 'Answer too large', text: 'The answer is larger than a sign-in can be.' };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > CALLBACK_MAX_BYTES) return { status: 413, title: 'Answer too large', text: 'The answer is larger than a sign-in can be.' };
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/**
 * Opens `url`: KR_BROWSER (a command; the URL is its last argument; on POSIX it runs through sh, so it may
 * carry arguments) or the platform's opener. Failing to open is not an error: the URL was printed.
 */
export function openBrowser(url: string, env: NodeJS.ProcessEnv = process.env): void {
  let cmd: string;
  let args: string[];
  const custom = env.KR_BROWSER?.trim();
  if (custom) {
    if (process.platform === 'win32') {
      const parts = custom.split(/\s+/);
      cmd = parts[0]!;
      args = [...parts.slice(1), url];
    } else {
      cmd = '/bin/sh';
      args = ['-c', `${custom} "$1"`, 'kr-browser', url];
    }
  } else if (process.platform === 'darwin') {
    cmd = 'open';
    args = [url];
  } else if (process.platform === 'win32') {
    cmd = 'rundll32';
    args = ['url.dll,FileProtocolHandler', url];
  } else {
    cmd = 'xdg-open';
    args = [url];
  }
  try {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: process.platform !== 'win32' });
    child.on('error', (e) => note(`(could not start ${custom ? 'KR_BROWSER' : cmd}: ${e.message}; open the URL above yourself)`));
    child.unref();
  } catch (e) {
    note(`(could not start ${custom ? 'KR_BROWSER' : cmd}: ${(e as Error).message}; open the URL above yourself)`);
  }
}

export interface BrowserLoginOptions {
  dashboard: string;
  /** Checks and saves the token (throws a CliError when the server refuses it). */
  accept: (token: string) => Promise<void>;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Runs the loop; resolves once a token was accepted, rejects with a CliError otherwise. */
export async function browserLogin(opts: BrowserLoginOptions): Promise<void> {
  const env = opts.env ?? process.env;
  const timeoutMs = opts.timeoutMs ?? loginTimeout(env);
  const state = randomBytes(32).toString('base64url');
  let settled = false;
  let handling = false;
  let port = 0;

  return new Promise<void>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onSigint = () => finish(new CliError('login interrupted: no token was saved', 1, 'interrupted'));
    // A request that breaks off while its body is read is dropped; the wait goes on.
    const server = createServer((req, res) => void handle(req, res).catch(() => res.destroy()));

    function finish(err?: CliError): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      process.off('SIGINT', onSigint);
      server.close();
      server.closeIdleConnections();
      // A connection the browser opened ahead of time, or kept busy, would hold the process: cut it once the
      // answer has had time to leave (the timer itself never holds the process).
      setTimeout(() => server.closeAllConnections(), 500).unref();
      if (err) reject(err);
      else resolve();
    }

    async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
      // Only this machine, by the literal address the dashboard was given (no DNS rebinding).
      const host = req.headers.host ?? '';
      if (!isLoopbackPeer(req.socket.remoteAddress) || (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)) {
        answer(res, 403, 'Refused', 'Only this computer may answer the kr command line.');
        return;
      }
      const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
      if (url.pathname !== '/callback') {
        answer(res, 404, 'Not found', 'Nothing lives at this address.');
        return;
      }
      if (req.method !== 'POST') {
        answer(res, 405, 'Method not allowed', 'Only the dashboard’s POST is answered here.', { allow: 'POST' });
        return;
      }
      const form = await readForm(req);
      if (!(form instanceof URLSearchParams)) {
        answer(res, form.status, form.title, form.text, { connection: 'close' });
        return;
      }
      const given = form.get('state') ?? '';
      if (!sameSecret(given, state)) {
        answer(res, 400, 'Sign-in link does not match', 'This answer does not belong to the kr command waiting here. Run "kr login --browser" again, and use the page it opens.');
        return;
      }
      if (settled || handling) {
        answer(res, 409, 'Already answered', 'The kr command line already has its answer. You can close this tab.');
        return;
      }
      handling = true;
      const error = form.get('error');
      const token = form.get('token');
      if (error !== null || !token) {
        const denied = error === 'denied';
        answer(res, 200, denied ? 'Sign-in cancelled' : 'Sign-in failed', denied ? 'The kr command line was not signed in. You can close this tab.' : 'The kr command line was not signed in. You can close this tab and try again.');
        res.on('finish', () =>
          finish(
            denied
              ? new CliError('login cancelled: the sign-in was denied in the browser; no token was saved', 1, 'denied')
              : refused(`login failed: the browser answered ${error === null ? 'without a token' : `"${clean(error).slice(0, 200)}"`}; no token was saved`),
          ),
        );
        return;
      }
      try {
        await opts.accept(token);
      } catch (e) {
        const err = e instanceof CliError ? e : refused(`login failed: ${(e as Error).message}`);
        answer(res, 502, 'Sign-in failed', `The kr command line could not use the token: ${err.message.split('\n')[0]}. See the terminal for details.`);
        res.on('finish', () => finish(err));
        return;
      }
      answer(res, 200, 'Signed in', 'The kr command line is signed in. You can close this tab.');
      res.on('finish', () => finish());
    }

    server.on('error', (e) => finish(refused(`cannot listen on 127.0.0.1 for the browser's answer: ${e.message}`)));
    server.listen(0, '127.0.0.1', () => {
      port = (server.address() as AddressInfo).port;
      const url = loginUrl(opts.dashboard, port, state, localHostname());
      note(`Open this URL to sign in: ${url}`);
      note(`Waiting for the browser (at most ${duration(timeoutMs)}; Ctrl-C to stop)…`);
      process.on('SIGINT', onSigint);
      // A token already being checked is let through: the check has its own time limit.
      timer = setTimeout(() => handling || finish(new CliError(timeoutMessage(timeoutMs), 1, 'timeout')), timeoutMs);
      openBrowser(url, env);
    });
  });
}
