import { HttpError } from '../../errors.ts';
import type { Live } from '../../events/live.ts';
import type { StreamGrant } from '../../events/stream.ts';
import type { LiveMethod, RpcResult, StreamParams } from './repo-object.ts';
import { STREAM_PARAMS_HEADER } from './repo-object.ts';
import type { RepoNamespace } from './remote-repos.ts';
import type { MemberEventData, EventKind } from '../../../schema/wire/events.ts';
import type { Delivery, Webhook } from '../../../schema/wire/webhooks.ts';

/**
 * The hosted build's live events and webhooks as handlers see them (lib/events/live.ts): each repository's
 * are held by its Durable Object (lib/runtime/workers/repo-object.ts), reached by RPC — and, for an event stream, by the
 * object's `fetch`, whose response body is the stream itself, held open by the object. The Worker has
 * authenticated and authorised the caller before any of these.
 */
export class RemoteLive implements Live {
  constructor(private readonly ns: RepoNamespace) {}

  private stub(repoId: string) {
    return this.ns.get(this.ns.idFromName(repoId));
  }

  private async call<T>(repoId: string, method: LiveMethod, ...args: unknown[]): Promise<T> {
    const r: RpcResult = await this.stub(repoId).call(`live.${method}`, [repoId, ...args]);
    if (r.ok) return r.value as T;
    throw new HttpError(r.status, r.error, r.extra, r.headers);
  }

  async stream(repoId: string, grant: StreamGrant, after: string | null): Promise<ReadableStream<Uint8Array>> {
    const params: StreamParams = { repo: repoId, grant, after };
    const res = await this.stub(repoId).fetch(
      new Request('https://repository.internal/events', { headers: { [STREAM_PARAMS_HEADER]: JSON.stringify(params) } }),
    );
    if (res.status !== 200 || !res.body) {
      const body = (await res.json().catch(() => ({}))) as { error?: string };
      const retryAfter = res.headers.get('retry-after');
      throw new HttpError(res.status, body.error ?? 'internal error', undefined, retryAfter ? { 'Retry-After': retryAfter } : {});
    }
    return res.body;
  }

  /** Nothing to do here: the repository's object ends its own streams as it deletes its storage. */
  deleted(): void {}

  member(repoId: string, data: MemberEventData): Promise<void> {
    return this.call(repoId, 'member', data);
  }
  createWebhook(repoId: string, url: string, events: EventKind[]): Promise<{ webhook: Webhook; secret: string } | null> {
    return this.call(repoId, 'createWebhook', url, events);
  }
  listWebhooks(repoId: string): Promise<Webhook[]> {
    return this.call(repoId, 'listWebhooks');
  }
  deleteWebhook(repoId: string, webhookId: string): Promise<boolean> {
    return this.call(repoId, 'deleteWebhook', webhookId);
  }
  testWebhook(repoId: string, webhookId: string): Promise<boolean> {
    return this.call(repoId, 'testWebhook', webhookId);
  }
  deliveries(repoId: string, webhookId: string, limit: number): Promise<Delivery[] | null> {
    return this.call(repoId, 'deliveries', webhookId, limit);
  }
}
