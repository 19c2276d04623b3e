import { errorFromWire, type WireError } from '../../core/errors.ts';
import type { Live } from '../../events/live.ts';
import type { StreamGrant } from '../../events/stream.ts';
import type { GrantMatch } from '../../events/hub.ts';
import type { StreamSlots } from '../../events/slots.ts';
import { callRepoObject, forwarding, STREAM_PARAMS_HEADER, type RepoNamespace, type ServedLiveMethod, type StreamParams } from './rpc.ts';

/**
 * The hosted build's live events and webhooks as handlers see them (lib/events/live.ts): each repository's
 * are held by its Durable Object (lib/runtime/workers/repo-object.ts), reached by native RPC — every Live method
 * but `stream` and `deleted` is the object's method of the same name (the constructor forwards them) — and, for
 * an event stream, by the object's `fetch`, whose response body is the stream itself, held open by the object.
 * Errors come back by their codes and are rebuilt as the same classes (lib/core/errors.ts). The Worker has
 * authenticated and authorised the caller before any of these.
 */

/** The Live methods the object serves: RemoteLive forwards them by name (see its constructor). */
export interface RemoteLive extends Pick<Live, ServedLiveMethod> {}

export class RemoteLive implements Live {
  constructor(
    private readonly ns: RepoNamespace,
    /** The per-identity slots (STREAM_SLOTS): which repositories hold an identity's streams. */
    private readonly slots?: StreamSlots,
  ) {
    return forwarding(this, (name) => (repoId: string, ...args: unknown[]) =>
      callRepoObject(this.ns.get(this.ns.idFromName(repoId)), name, args),
    );
  }

  /**
   * The streams of the user (or of their PATs) end in every repository that holds one: the identity's slots
   * object knows which. Best effort: the credential is gone already, and where this does not get through
   * (no slots binding, an object being reset) the repositories' own sweep ends those streams within 2 s.
   */
  async endStreams(match: GrantMatch, reason: string): Promise<void> {
    if (!this.slots) return;
    let repos: string[];
    try {
      repos = await this.slots.repos(`user:${match.userId}`);
    } catch {
      return;
    }
    await Promise.allSettled(repos.map((repo) => this.ns.get(this.ns.idFromName(repo)).endStreams(match, reason)));
  }

  async stream(repoId: string, grant: StreamGrant, after: string | null): Promise<ReadableStream<Uint8Array>> {
    const params: StreamParams = { grant, after };
    const res = await this.ns
      .get(this.ns.idFromName(repoId))
      .fetch(new Request('https://repository.internal/events', { headers: { [STREAM_PARAMS_HEADER]: JSON.stringify(params) } }));
    if (res.status !== 200 || !res.body) throw errorFromWire((await res.json()) as WireError);
    return res.body;
  }

  /** Nothing to do here: the repository's object ends its own streams as it deletes its storage. */
  deleted(): void {}
}
