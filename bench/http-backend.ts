import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * git's own smart-HTTP server on loopback: `git http-backend` (the CGI program git ships) behind a small
 * node:http server, serving the bare repositories under `root` at `/<name>.git` (read-only: upload-pack).
 * The reference that `git clone` over kr's git routes is measured against, and what tests compare answers with.
 */
export interface GitHttpServer {
  url: string;
  close(): Promise<void>;
}

const BACKEND = '/usr/lib/git-core/git-http-backend';

export async function startGitHttpBackend(root: string): Promise<GitHttpServer> {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      GIT_CONFIG_NOSYSTEM: '1',
      HOME: root,
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: '127.0.0.1',
      GATEWAY_INTERFACE: 'CGI/1.1',
    };
    if (req.headers['content-length']) env.CONTENT_LENGTH = req.headers['content-length'];
    if (req.headers['content-encoding']) env.HTTP_CONTENT_ENCODING = req.headers['content-encoding'];
    if (req.headers['git-protocol']) env.GIT_PROTOCOL = String(req.headers['git-protocol']);
    const child = spawn(BACKEND, [], { env, stdio: ['pipe', 'pipe', 'ignore'] });
    req.pipe(child.stdin);
    child.stdin.on('error', () => undefined);
    // The CGI answer: header lines up to a blank line, then the body, streamed as it comes.
    let head = Buffer.alloc(0);
    let headerDone = false;
    child.stdout.on('data', (chunk: Buffer) => {
      if (headerDone) {
        if (!res.write(chunk)) {
          child.stdout.pause();
          res.once('drain', () => child.stdout.resume());
        }
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      const endLf = head.indexOf('\n\n');
      const at = end >= 0 ? end : endLf;
      if (at < 0) return;
      const sep = end >= 0 ? 4 : 2;
      let status = 200;
      for (const line of head.subarray(0, at).toString('latin1').split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon < 0) continue;
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(name, value);
      }
      res.statusCode = status;
      headerDone = true;
      const rest = head.subarray(at + sep);
      if (rest.byteLength > 0) res.write(rest);
    });
    child.on('close', () => res.end());
    res.on('close', () => child.kill());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// Run on its own (`node --import tsx bench/http-backend.ts <root>`): a small process of its own, so that the
// CGI programs it forks are forked from a small process; prints its URL, serves until stdin closes.
if (import.meta.url === `file://${process.argv[1]}`) {
  const root = process.argv[2];
  if (!root) {
    process.stderr.write('usage: http-backend.ts <root>\n');
    process.exit(2);
  }
  const s = await startGitHttpBackend(root);
  process.stdout.write(`${s.url}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void s.close().then(() => process.exit(0)));
}
