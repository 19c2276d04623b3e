/**
 * Resource subscriptions of the agent tool server (docs/agents.md "Live updates"): an agent learns of a teammate's change without
 * polling. The server declares `resources.subscribe`; `resources/subscribe` takes `kr://index` and
 * `kr://page/{slug}`. While at least one resource is subscribed, one event stream of the folder's repository
 * is open (client/live.ts, lib/core/sse/client.ts); on each push event the folder is pulled exactly as kr_pull
 * pulls it (a local edit is never overwritten), then `notifications/resources/updated` goes out for each
 * subscribed page the push or the pull changed, and for `kr://index`. The stream closes when nothing is
 * subscribed any more, and when the session ends.
 *
 * A notification carries only a URI the agent subscribed to, exactly as it gave it: nothing from a page is
 * sent unasked. The first subscription answers once the stream is open, or with the reason it cannot be (not a
 * member, token no longer valid, too many streams); later troubles end live updates with a line on stderr and
 * in kr_status, and the next subscription tries again.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, SubscribeRequestSchema, UnsubscribeRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { LiveEvent } from '../lib/core/sse/client.ts';
import { isValidSlug, pageRefOfPath } from '../lib/core/page/parse.ts';
import { pullPages } from '../client/sync.ts';
import { followRepo, revokedMessage } from '../client/live.ts';
import type { KrContext } from './context.ts';
import { oneLine } from './safety.ts';

export const INDEX_URI = 'kr://index';
const PAGE_PREFIX = 'kr://page/';
/** Resources one session may subscribe to at once, and the length of a URI taken. */
export const MAX_SUBSCRIPTIONS = 1000;
const MAX_URI_CHARS = 2048;

/** The slug a page resource's URI names (`kr://page/decision-log`), or null. */
export function slugOfUri(uri: string): string | null {
  if (!uri.startsWith(PAGE_PREFIX)) return null;
  let slug: string;
  try {
    slug = decodeURIComponent(uri.slice(PAGE_PREFIX.length));
  } catch {
    return null;
  }
  return isValidSlug(slug) ? slug : null;
}

interface Follower {
  stop: AbortController;
  /** Settles once the stream is open (or could not be opened). */
  ready: Promise<void>;
}

export class LiveResources {
  private readonly subscribed = new Set<string>();
  private follower: Follower | null = null;
  /** Why live updates ended on their own, until the next subscription starts them again. */
  private endedBecause: string | null = null;

  constructor(
    private readonly server: McpServer,
    private readonly ctx: KrContext,
    private readonly log: (line: string) => void = (line) => process.stderr.write(`kr mcp: ${line}\n`),
  ) {}

  /** Declares the capability and answers subscribe and unsubscribe (before the server connects). */
  register(): void {
    this.server.server.registerCapabilities({ resources: { subscribe: true } });
    this.server.server.setRequestHandler(SubscribeRequestSchema, async (req) => {
      await this.subscribe(req.params.uri);
      return {};
    });
    this.server.server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
      this.unsubscribe(req.params.uri);
      return {};
    });
  }

  /** A line for kr_status; null while nothing is subscribed. */
  status(): string | null {
    if (this.subscribed.size === 0) return null;
    if (this.follower) return `Live updates: on for ${this.subscribed.size} subscribed resource(s); pushes by others are pulled as they happen.`;
    return `Live updates: stopped (${oneLine(this.endedBecause ?? 'not started', 600)}); subscribe to a resource again to retry.`;
  }

  async subscribe(uri: string): Promise<void> {
    if (uri.length > MAX_URI_CHARS || (uri !== INDEX_URI && slugOfUri(uri) === null)) {
      throw new McpError(ErrorCode.InvalidParams, `cannot subscribe to ${oneLine(uri, 200)}: updates are sent for ${INDEX_URI} and kr://page/{slug}`);
    }
    const added = !this.subscribed.has(uri);
    if (added && this.subscribed.size >= MAX_SUBSCRIPTIONS) {
      throw new McpError(ErrorCode.InvalidParams, `too many subscriptions (at most ${MAX_SUBSCRIPTIONS}): unsubscribe from some first`);
    }
    this.subscribed.add(uri);
    try {
      await this.start();
    } catch (e) {
      if (added) this.subscribed.delete(uri);
      throw new McpError(ErrorCode.InternalError, `cannot follow the repository's changes: ${oneLine(e instanceof Error ? e.message : String(e), 600)}`);
    }
  }

  unsubscribe(uri: string): void {
    this.subscribed.delete(uri);
    if (this.subscribed.size === 0) this.stop();
  }

  /** The session ended: no stream stays open. */
  close(): void {
    this.subscribed.clear();
    this.stop();
  }

  private stop(): void {
    this.follower?.stop.abort();
    this.follower = null;
  }

  /** Opens the repository's stream unless it is open: settles once it is (or cannot be). */
  private start(): Promise<void> {
    if (this.follower) return this.follower.ready;
    let opened!: () => void;
    let failed!: (e: unknown) => void;
    const ready = new Promise<void>((resolve, reject) => {
      opened = resolve;
      failed = reject;
    });
    ready.catch(() => undefined);
    const follower: Follower = { stop: new AbortController(), ready };
    this.follower = follower;
    this.endedBecause = null;
    const ended = (why: string) => {
      if (this.follower !== follower) return;
      this.follower = null;
      this.endedBecause = why;
      this.log(`live updates stopped: ${why}`);
    };
    void (async () => {
      try {
        const c = await this.ctx.connect();
        const end = await followRepo(c.api, c.repo, {
          signal: follower.stop.signal,
          onConnected: async ({ first, resumed }) => {
            if (first) opened();
            // Reconnected without a place to resume from: what happened meanwhile comes by a pull.
            else if (!resumed) await this.update(null);
          },
          onEvent: (e) => this.onEvent(e),
          onNotice: (n) => {
            if (n.kind === 'disconnected') this.log(`event stream lost (${n.why}); reconnecting in ${Math.max(1, Math.round(n.retryInMs / 1000))} s`);
            else if (n.kind === 'ignored') this.log(`ignored ${n.why}`);
          },
        });
        if (end.kind === 'revoked') ended(revokedMessage(end.reason, c.repo));
        failed(new Error('stopped'));
      } catch (e) {
        failed(e);
        ended(e instanceof Error ? e.message : String(e));
      }
    })();
    return ready;
  }

  private async onEvent(e: LiveEvent): Promise<void> {
    if (e.type === 'member') return;
    await this.update(e.type === 'push' ? e.data.paths.map((p) => p.path) : []);
  }

  /**
   * Pulls as kr_pull does, then notifies each subscribed page among `pushed` (the event's paths; null after a
   * reconnection, when only the pull knows) and what the pull wrote or deleted, and the index — after a
   * reconnection only when the pull changed something.
   */
  private async update(pushed: string[] | null): Promise<void> {
    const r = await this.ctx.exclusive(async () => {
      const c = await this.ctx.connect();
      return pullPages(c.project, c.api, c.repo, false);
    });
    const changed = [...(pushed ?? []), ...r.added, ...r.updated, ...r.deleted];
    if (pushed === null && changed.length === 0) return;
    const slugs = new Set(changed.flatMap((path) => pageRefOfPath(path)?.slug ?? []));
    for (const uri of [...this.subscribed]) {
      const slug = slugOfUri(uri);
      if (uri !== INDEX_URI && (slug === null || !slugs.has(slug))) continue;
      // A session closing meanwhile is not an error of the pull.
      await this.server.server.sendResourceUpdated({ uri }).catch(() => undefined);
    }
  }
}
