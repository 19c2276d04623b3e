import { Agent, request } from 'node:http';

/**
 * A keep-alive HTTP client for the benchmark: one Agent, a bounded number of sockets, every request on
 * loopback. Latencies are measured around the whole exchange (request written → body fully read).
 */
export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  ms: number;
}

export class Api {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(
    baseUrl: string,
    private readonly token: string,
    maxSockets = 1,
  ) {
    this.base = new URL(baseUrl);
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  send(method: string, path: string, body?: unknown): Promise<HttpResult> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const req = request(
        {
          agent: this.agent,
          host: this.base.hostname,
          port: this.base.port,
          method,
          path,
          headers: {
            authorization: `Bearer ${this.token}`,
            ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: performance.now() - started }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  /** Sends and insists on `expect` (default 200); returns the parsed JSON body and the latency. */
  async json<T>(method: string, path: string, body?: unknown, expect = 200): Promise<{ data: T; ms: number }> {
    const r = await this.send(method, path, body);
    if (r.status !== expect) {
      throw new Error(`${method} ${path} → ${r.status} (expected ${expect}): ${r.body.toString('utf8').slice(0, 500)}`);
    }
    return { data: JSON.parse(r.body.toString('utf8')) as T, ms: r.ms };
  }

  close(): void {
    this.agent.destroy();
  }
}

/** Page path → URL path segment (each segment percent-encoded, slashes kept). */
export function encodePath(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

export interface PushBody {
  author_name: string;
  author_email: string;
  message: string;
  files: Array<{ path: string; content: string; parent_sha?: string }>;
}

export interface PushResponse {
  new_head: string;
  pushed: Array<{ path: string; sha: string; unchanged?: boolean }>;
  conflicts: unknown[];
}

export function pushBody(message: string, files: PushBody['files']): PushBody {
  return { author_name: 'Bench', author_email: 'bench@example.invalid', message, files };
}
