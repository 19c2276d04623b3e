import type { RepoStore } from '../repo/repo-store.ts';
import type { Logger } from '../framework/log.ts';
import type { Delivery, Webhook } from '../../schema/wire/webhooks.ts';
import type { EventKind, MemberEventData } from '../../schema/wire/events.ts';
import type { GrantMatch, Hub, OpenOptions } from './hub.ts';
import type { StreamGrant } from './stream.ts';

/**
 * Live events and webhooks as handlers see them (Deps.live), whatever holds them: on Node, LocalLive over
 * the server's RepoStore, its hub of open streams and its delivery loop; on Workers, the repository's
 * Durable Object running that same LocalLive, reached from the Worker by RemoteLive
 * (lib/runtime/workers/remote-live.ts). Every method takes the repository id first; who may call what is decided
 * before (lib/usecases/policy.ts).
 */
export interface Live {
  /**
   * Opens an event stream of the repository (Server-Sent Events text) resuming after `after` (an event id;
   * null: from now). 429 `too many event streams` past the caps of the grant's identity; 503 `server busy`
   * past the streams the holder may hold in all. `options.onCut` is the runtime's way to cut the
   * connection at once (Node), where it has one.
   */
  stream(repoId: string, grant: StreamGrant, after: string | null, options?: OpenOptions): Promise<ReadableStream<Uint8Array>>;
  /**
   * A user was disabled (`patIds` absent) or some of their PATs were revoked: their streams, in every
   * repository, end with `event: revoked` before this resolves.
   */
  endStreams(match: GrantMatch, reason: string): Promise<void>;
  /**
   * Records a member event and announces it; a removal first ends the removed user's streams with
   * `event: revoked`.
   */
  member(repoId: string, data: MemberEventData): Promise<void>;
  /** A new webhook and its secret, or null when the repository has the most it may. */
  createWebhook(repoId: string, url: string, events: EventKind[]): Promise<{ webhook: Webhook; secret: string } | null>;
  listWebhooks(repoId: string): Promise<Webhook[]>;
  /** False when the repository has no such webhook. */
  deleteWebhook(repoId: string, webhookId: string): Promise<boolean>;
  /** Queues a `ping` delivery; false when the repository has no such webhook. */
  testWebhook(repoId: string, webhookId: string): Promise<boolean>;
  /** Newest first; null when the repository has no such webhook. */
  deliveries(repoId: string, webhookId: string, limit: number): Promise<Delivery[] | null>;
  /**
   * The repository was deleted: its streams end with `event: revoked`. (Its event log, webhooks and deliveries
   * went with its rows: PathIndex.removalStmts on Node, the Durable Object's storage on Workers, which ends its
   * streams itself.)
   */
  deleted(repoId: string): void;
}

/** Why the streams of a deleted repository end. */
export const REPO_DELETED = 'repository deleted';

/** Why a removed member's streams end. */
export const REMOVED_FROM_REPO = 'removed from this repo';

/**
 * The events and webhooks of the repositories a RepoStore holds: its event log and webhook tables, a hub of
 * open streams, and `kick`, which gets the deliverer going (Node: DeliveryLoop.kick; Workers: an alarm now).
 */
export class LocalLive implements Live {
  constructor(
    private readonly store: RepoStore,
    readonly hub: Hub,
    private readonly kick: () => void,
    private readonly logger: Logger,
  ) {
    store.onPublished = async (repoId, { deliveries }) => {
      try {
        await hub.announce(repoId);
      } catch (e) {
        logger.warn('event_announce', { repo: repoId, error: String(e) });
      }
      if (deliveries > 0) kick();
    };
  }

  stream(repoId: string, grant: StreamGrant, after: string | null, options?: OpenOptions): Promise<ReadableStream<Uint8Array>> {
    return this.hub.open(repoId, grant, after, options);
  }

  async endStreams(match: GrantMatch, reason: string): Promise<void> {
    this.hub.endGrants(match, reason);
  }

  deleted(repoId: string): void {
    this.hub.endRepo(repoId, REPO_DELETED);
  }

  async member(repoId: string, data: MemberEventData): Promise<void> {
    const queued = await this.store.exclusive(
      repoId,
      async () => {
        const n = await this.store.events.append(repoId, 'member', data);
        if (data.change === 'removed') this.hub.endUser(repoId, data.user_id, REMOVED_FROM_REPO);
        try {
          await this.hub.announce(repoId);
        } catch (e) {
          this.logger.warn('event_announce', { repo: repoId, error: String(e) });
        }
        return n;
      },
      'member event',
    );
    if (queued > 0) this.kick();
  }

  createWebhook(repoId: string, url: string, events: EventKind[]) {
    return this.store.webhooks.create(repoId, url, events);
  }

  listWebhooks(repoId: string): Promise<Webhook[]> {
    return this.store.webhooks.list(repoId);
  }

  deleteWebhook(repoId: string, webhookId: string): Promise<boolean> {
    return this.store.webhooks.remove(repoId, webhookId);
  }

  async testWebhook(repoId: string, webhookId: string): Promise<boolean> {
    const queued = await this.store.webhooks.ping(repoId, webhookId);
    if (queued) this.kick();
    return queued;
  }

  deliveries(repoId: string, webhookId: string, limit: number): Promise<Delivery[] | null> {
    return this.store.webhooks.deliveries(repoId, webhookId, limit);
  }
}
