import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { makePage, Rng } from '../content.ts';
import { Api, pushBody, type PushResponse } from '../http.ts';
import { REPO_ROOT, startService, type Child } from '../procs.ts';
import { SseParser } from '../sse.ts';
import { percentile, round, summarize } from '../stats.ts';
import { TARGETS, notAvailableRow, ratioOf } from '../targets.ts';
import { createRepo, type Ctx, type Row, type Workload } from './types.ts';
import { openContext } from '../../admin/context.ts';
import { repoOwner, token, userAdd } from '../../admin/commands.ts';

/**
 * W13 live events: many open `GET /v1/repos/:id/events` streams on one server (200 at both
 * scales), all on one repository. The server is one of W13's own (the same build and flags, on a data root
 * of its own, with `--expose-gc` so that its memory probe collects garbage before RSS is read). A server allows 10 streams per identity per repository, so the streams
 * belong to 20 users, made with the admin command's own functions on the server's data root (as an operator
 * would) and joined to the repository through an invite key (and one more user's streams, opened and closed
 * first, warm the code up). Then one-page pushes, one at a time: for each,
 * the time from sending it until every stream has received its `push` event (p50, p95), against the push's
 * own answer time; and the memory of an idle stream: the server's RSS with the streams open minus before
 * (each read right after a full garbage collection), ÷ their count. On a server without the route (it
 * answers 404) the rows say "not available".
 */

const PER_IDENTITY = 10;

interface Stream {
  req: ClientRequest;
  res: IncomingMessage;
}

/** Opens an event stream; resolves with it on a 200 (or with the status and body of anything else). */
function openStream(
  url: URL,
  path: string,
  bearer: string,
  onEvent: (event: string, data: string, at: number) => void,
): Promise<{ ok: true; stream: Stream } | { ok: false; status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path, method: 'GET', agent: false, headers: { authorization: `Bearer ${bearer}`, accept: 'text/event-stream' } },
      (res) => {
        res.setEncoding('utf8');
        if (res.statusCode !== 200) {
          let body = '';
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ ok: false, status: res.statusCode ?? 0, body }));
          return;
        }
        const parser = new SseParser();
        res.on('data', (c: string) => {
          const at = performance.now();
          for (const ev of parser.push(c)) onEvent(ev.event, ev.data, at);
        });
        res.on('error', () => undefined);
        resolve({ ok: true, stream: { req, res } });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Users made with the admin command's functions, each with a PAT; the first made an owner of `repo`. */
async function makeUsers(dataRoot: string, repo: string, count: number): Promise<string[]> {
  const admin = await openContext({ SERVICE_DATA_ROOT: dataRoot }, REPO_ROOT);
  try {
    const tokens: string[] = [];
    for (let i = 0; i < count; i++) {
      const email = `w13-user-${i + 1}@example.invalid`;
      await userAdd(admin, email, { name: `W13 user ${i + 1}` });
      tokens.push(((await token(admin, email, { label: 'bench' })).json as { token: string }).token);
      if (i === 0) await repoOwner(admin, repo, email);
    }
    return tokens;
  } finally {
    await admin.close();
  }
}

export const w13: Workload = {
  id: 'W13',
  title: 'live events',
  async measure(ctx) {
    const server = await startService({ dataRoot: join(ctx.work, 'w13-data'), apiKey: ctx.apiKey, logFile: join(ctx.work, 'w13-server.log'), gcOnProbe: true });
    const api = new Api(server.url, ctx.apiKey, 1);
    const streams: Stream[] = [];
    try {
      return await measureOn(ctx, server, api, streams);
    } finally {
      for (const s of streams) s.req.destroy();
      api.close();
      await server.stop();
    }
  },
};

/** W13 on its own server; the streams it opens go into `streams` (closed by the caller). */
async function measureOn(ctx: Ctx, server: Child, api: Api, streams: Stream[]): Promise<Row[]> {
  const n = ctx.scale.w13Streams;
  const url = new URL(server.url);
  const created = await api.send('POST', '/v1/repos/w13');
  if (created.status !== 201) throw new Error(`W13: create → ${created.status}`);
  await api.json<PushResponse>('POST', '/v1/repos/w13/sync/push', pushBody('seed W13', [{ path: 'live/page.md', content: makePage(new Rng(1301), 'Live page').render() }]));
  const title = `${n} open event streams on one repository`;
  const target = `p95 ≤ ${TARGETS.w13P95Ms} ms`;
  const probe = await openStream(url, '/v1/repos/w13/events', ctx.apiKey, () => undefined);
  if (!probe.ok) {
    if (probe.status === 404) {
      const why = `GET /v1/repos/:id/events answered 404 (${probe.body.trim().slice(0, 80)}): this server has no live events`;
      return [notAvailableRow('W13', `${title}: time for a push to reach all of them`, target, why), notAvailableRow('W13·mem', `${title}: memory per idle stream`, '(measured)', why)];
    }
    throw new Error(`W13: GET /v1/repos/w13/events → ${probe.status}: ${probe.body.slice(0, 300)}`);
  }
  probe.stream.req.destroy();

  const identities = Math.ceil(n / PER_IDENTITY);
  // One more user for the warm-up streams, so that the measured ones never wait for those to be let go.
  const tokens = await makeUsers(join(ctx.work, 'w13-data'), 'w13', identities + 1);
  const warmUser = tokens[identities]!;
  const owner = tokens[0]!;
  const invite = await sendAs(server.url, owner, 'POST', '/v1/repos/w13/invite-keys', { label: 'bench' }, 201);
  const key = (invite as { token: string }).token;
  for (const t of tokens.slice(1)) await sendAs(server.url, t, 'POST', '/v1/repos/join', { key }, 200);
  ctx.log(`W13: ${identities + 1} users members of w13; opening ${n} streams`);

  /** Arrival times of each push event, by commit sha. */
  const arrivals = new Map<string, number[]>();
  let waiter: { sha: string; resolve: () => void } | null = null;
  const onEvent = (event: string, data: string, at: number) => {
    if (event !== 'push') return;
    const sha = (JSON.parse(data) as { sha: string }).sha;
    let list = arrivals.get(sha);
    if (!list) arrivals.set(sha, (list = []));
    list.push(at);
    if (waiter && waiter.sha === sha && list.length === n) waiter.resolve();
  };
  // Once untimed: the streams' code paths loaded and compiled before the memory they are measured against.
  const warm: Stream[] = [];
  for (let s = 0; s < PER_IDENTITY; s++) {
    const r = await openStream(url, '/v1/repos/w13/events', warmUser, () => undefined);
    if (!r.ok) throw new Error(`W13: warm-up stream → ${r.status}: ${r.body.slice(0, 300)}`);
    warm.push(r.stream);
  }
  for (const s of warm) s.req.destroy();
  const before = await liveMemory(server);
  for (let s = 0; s < n; s++) {
    const r = await openStream(url, '/v1/repos/w13/events', tokens[Math.floor(s / PER_IDENTITY)]!, onEvent);
    if (!r.ok) throw new Error(`W13: stream ${s + 1} → ${r.status}: ${r.body.slice(0, 300)}`);
    streams.push(r.stream);
  }
  const open = await liveMemory(server);
  const rssBefore = before.rssKb;
  const rssOpen = open.rssKb;
  const perStreamKiB = (rssOpen - rssBefore) / n;
  // The V8 heap and external memory, for context.
  const heapKiB = (open.heapAndExternal - before.heapAndExternal) / 1024 / n;
  ctx.log(`W13: ${n} streams open; RSS ${round(rssBefore / 1024, 1)} → ${round(rssOpen / 1024, 1)} MiB`);

  const pushes = ctx.scale.name === 'full' ? 30 : 10;
  const rng = new Rng(1302);
  const reachAll: number[] = [];
  const pushMs: number[] = [];
  const eachStream: number[] = [];
  for (let i = 0; i < pushes; i++) {
    const t0 = performance.now();
    const p = await api.json<PushResponse>('POST', '/v1/repos/w13/sync/push', pushBody(`W13 ${i}`, [{ path: 'live/page.md', content: makePage(rng, `Live page ${i}`).render() }]));
    pushMs.push(p.ms);
    const sha = p.data.new_head;
    if ((arrivals.get(sha)?.length ?? 0) < n) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`W13: push ${sha} reached ${arrivals.get(sha)?.length ?? 0} of ${n} streams in 30 s`)), 30_000);
        waiter = {
          sha,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        };
      });
      waiter = null;
    }
    const times = arrivals.get(sha)!;
    reachAll.push(Math.max(...times) - t0);
    eachStream.push(...times.map((t) => t - t0));
  }
  const o = summarize(reachAll);
  const ref = summarize(pushMs);
  return [
    {
      id: 'W13',
      title: `${title}: time for a push to reach all of them (${pushes} pushes)`,
      ours: {
        label: `push sent → its event received on all ${n} streams`,
        command: `POST /v1/repos/w13/sync/push (1 page), then wait for "event: push" with that sha on every GET /v1/repos/w13/events`,
        unit: 'ms',
        median: o.median,
        p95: o.p95,
        n: o.n,
        extra: { each_stream_p50_ms: round(percentile(eachStream, 50)), each_stream_p95_ms: round(percentile(eachStream, 95)), identities },
      },
      reference: { label: "the push's own answer", command: 'the same pushes: request sent → answer read', unit: 'ms', median: ref.median, p95: ref.p95, n: ref.n },
      ratio: ratioOf(o.median, ref.median),
      ratioBasis: 'p50/p50',
      target: { text: target, met: o.p95 <= TARGETS.w13P95Ms },
      notes: [`${n} streams of ${identities} users (${PER_IDENTITY} each, the server's limit per identity and repository)`],
    },
    {
      id: 'W13·mem',
      title: `${title}: memory per idle stream`,
      ours: {
        label: 'server RSS with the streams open minus before, ÷ streams',
        command: '/proc/‹server pid›/status VmRSS before opening the streams and once all answered 200, each read right after a full garbage collection',
        unit: 'KiB',
        median: round(perStreamKiB, 1),
        p95: round(perStreamKiB, 1),
        n,
        extra: { rss_before_mib: round(rssBefore / 1024, 1), rss_open_mib: round(rssOpen / 1024, 1), heap_and_external_per_stream_kib: round(heapKiB, 1) },
      },
      reference: null,
      ratio: null,
      ratioBasis: '—',
      target: { text: '(measured)', met: null },
      notes: [
        `V8 heap used + external per stream: ${round(heapKiB, 1)} KiB` +
          (perStreamKiB <= 0 ? '; RSS did not grow: less than this way can measure' : ''),
      ],
    },
  ];
}

/**
 * The server's RSS and V8 heap (used + external) right after a full garbage collection (its memory probe
 * collects first: the server runs with --expose-gc and KR_BENCH_GC=1), so that neither counts garbage.
 */
async function liveMemory(server: Child): Promise<{ rssKb: number; heapAndExternal: number }> {
  const heap = await server.heap();
  if (!heap) throw new Error("W13: the server's memory probe did not answer");
  return { rssKb: server.memory().rssKb, heapAndExternal: heap.heapUsed + heap.external };
}

/** A JSON request with another bearer than the legacy key; insists on `expect`. */
async function sendAs(base: string, bearer: string, method: string, path: string, body: unknown, expect: number): Promise<unknown> {
  const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== expect) throw new Error(`W13: ${method} ${path} → ${res.status} (expected ${expect}): ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}
