/**
 * The W4 reference server: one bare Hono route returning the same page bytes, served by the same Node
 * adapter (@hono/node-server) as the service. W1·floor's HTTP part posts W1's push bodies to `/echo`, which
 * parses them and answers as a push does (a path and a sha per file), with no other work. Started as its own child process by bench/run.ts:
 * `node --import tsx bench/hono-ref.ts <page file>`; logs `{"event":"listening","url":...}`.
 */
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: hono-ref.ts <page file>\n');
  process.exit(2);
}
const page = readFileSync(file, 'utf8');
const ZERO_SHA = '0'.repeat(40);
const app = new Hono()
  .get('/x', (c) => c.text(page))
  .post('/echo', async (c) => {
    const body = (await c.req.json()) as { files: Array<{ path: string }> };
    return c.json({ pushed: body.files.map((f) => ({ path: f.path, sha: ZERO_SHA })), conflicts: [] });
  });
const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info: AddressInfo) => {
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: `http://127.0.0.1:${info.port}` })}\n`);
});
const stop = () => {
  (server as Server).close(() => process.exit(0));
  (server as Server).closeAllConnections();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
