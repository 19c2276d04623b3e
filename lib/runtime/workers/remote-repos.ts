import type { SqlDatabase, Stmt } from '../../db/sql.ts';
import { ownerStmt } from '../../db/members.ts';
import { repositoryRowsDeletion } from '../../db/repo-rows.ts';
import type { Clock } from '../../util/clock.ts';
import { errorFromWire, type WireError } from '../../core/errors.ts';
import { openSealedBody } from './sealed-body.ts';
import type { Repo, RepoIndex, Repos, StreamOptions } from '../../repo/repos.ts';
import type { FetchRequest } from '../../git/upload-request.ts';
import type { UploadAnswer } from '../../git/upload-pack.ts';
import {
  BODY_ERROR_HEADER,
  BODY_PARAMS_HEADER,
  callRepoObject,
  forwarding,
  indexMethodName,
  PAGES_HEADER,
  SENDS_HEADER,
  type BodyParams,
  type RepoNamespace,
  type RepoStub,
  type ServedRepoMethod,
} from './rpc.ts';

export type { RepoNamespace } from './rpc.ts';

/**
 * The hosted build's repositories as handlers see them (lib/repo/repos.ts): each repository's content
 * and index live in its own Durable Object (lib/runtime/workers/repo-object.ts), reached by native RPC with the id
 * as the object's name: a repository's handle (`open`, RemoteRepo) holds the object's stub, and every Repo
 * method but the streamed bodies is the object's method of the same name (forwarded,
 * lib/runtime/workers/rpc.ts), its errors rebuilt from their codes. Which repositories exist is kept in D1 (`repo_registry`), since objects cannot be listed.
 * Creation is atomic there: the unique `id_fold` lets exactly one of two racing creators of an id (or of
 * two spellings of it) in, and a user's creation records its owner row (within the plan cap) in the same
 * batch (`createOwned`). Deletion (`remove`) empties the object first, which then refuses to be made again
 * until D1 registers the id anew, then deletes the registry row with every row of D1 about the repository.
 */

const fold = (id: string) => id.replace(/[A-Z]/g, (c) => c.toLowerCase());

export class RemoteRepos implements Repos {
  /**
   * No lock of its own: D1 serialises creations (see `createOwned`), across isolates too, which a lock in
   * this isolate could not; and workerd cancels, as hung, a request that waits on a promise another request
   * settles, as a waiter on an in-memory lock would.
   */
  readonly creation = { run: <T>(_key: string, fn: () => Promise<T>): Promise<T> => fn() };
  /**
   * Repositories seen to exist by this isolate. One deleted through another isolate may stay here: its
   * object then answers 404 `repo not found` (the tombstone of lib/runtime/workers/repo-object.ts), which is all the
   * stale entry can lead to.
   */
  private readonly known = new Set<string>();

  constructor(
    private readonly ns: RepoNamespace,
    private readonly db: SqlDatabase,
    private readonly clock: Clock,
  ) {}

  private stub(id: string): RepoStub {
    return this.ns.get(this.ns.idFromName(id));
  }

  /** Repos.open on Workers: the repository's object, its stub bound to the id (no request is made). */
  open(id: string): Repo {
    return new RemoteRepo(this.stub(id), id);
  }

  async exists(id: string): Promise<boolean> {
    if (this.known.has(id)) return true;
    const found = (await this.db.get('SELECT 1 AS x FROM repo_registry WHERE id = ?', [id])) !== undefined;
    if (found) this.known.add(id);
    return found;
  }

  async list(): Promise<string[]> {
    const rows = await this.db.all<{ id: string }>('SELECT id FROM repo_registry ORDER BY id');
    return rows.map((r) => String(r.id));
  }

  async caseVariant(id: string): Promise<string | null> {
    const r = await this.db.get<{ id: string }>('SELECT id FROM repo_registry WHERE id_fold = ?', [fold(id)]);
    return r ? String(r.id) : null;
  }

  async creatorOf(id: string): Promise<string | null> {
    const r = await this.db.get<{ creator: string | null }>('SELECT creator FROM repo_registry WHERE id = ?', [id]);
    return r?.creator ? String(r.creator) : null;
  }

  async create(id: string, creator?: string): Promise<boolean> {
    const { changes } = await this.db.run(
      'INSERT INTO repo_registry (id, id_fold, creator, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING',
      [id, fold(id), creator ?? null, Math.floor(this.clock.now() / 1000)],
    );
    if (changes === 0) return false;
    // The object makes its bare repository now (and would on first use if this call died here).
    await callRepoObject(this.stub(id), 'create', [creator]);
    this.known.add(id);
    return true;
  }

  /**
   * Repos.createOwned on Workers: one D1 batch registers the id only where `when` (the cap) holds, and
   * records the owner only where it was registered, so racing creators in any isolates never pass the cap
   * together and never share an id. The object makes its bare repository after (or on first use).
   */
  async createOwned(id: string, owner: string, when: Stmt | null): Promise<'created' | 'exists' | 'refused'> {
    const now = Math.floor(this.clock.now() / 1000);
    const [registered, , taken] = await this.db.batch([
      {
        sql: `INSERT INTO repo_registry (id, id_fold, creator, created_at) SELECT ?, ?, ?, ? WHERE (${when?.sql ?? '1'})
              ON CONFLICT DO NOTHING`,
        args: [id, fold(id), owner, now, ...(when?.args ?? [])],
      },
      ownerStmt(id, owner, now, { sql: 'changes() > 0' }),
      { sql: 'SELECT 1 AS x FROM repo_registry WHERE id_fold = ?', args: [fold(id)] },
    ]);
    if (registered!.changes === 0) return taken!.rows.length > 0 ? 'exists' : 'refused';
    await callRepoObject(this.stub(id), 'create', [owner]);
    this.known.add(id);
    return 'created';
  }

  /**
   * Repos.remove on Workers. The object is emptied first (its storage `deleteAll`, and a tombstone: no
   * request of any isolate can bring the repository back on first use), then one D1 batch deletes the
   * registry row and every row about the repository (lib/db/repo-rows.ts): the owner's repository count
   * drops with it. A failure between the two leaves the id registered with its members and an empty,
   * tombstoned object that answers 404: the owner deletes it again.
   */
  async remove(id: string): Promise<boolean> {
    if ((await this.db.get('SELECT 1 AS x FROM repo_registry WHERE id = ?', [id])) === undefined) return false;
    await callRepoObject(this.stub(id), 'destroy', []);
    await this.db.batch(repositoryRowsDeletion(id));
    this.known.delete(id);
    return true;
  }
}

/** The Repo methods the object serves: RemoteRepo forwards them by name (see its constructor). */
export interface RemoteRepo extends Pick<Repo, ServedRepoMethod> {}

/**
 * One repository of the hosted build (RemoteRepos.open): its Durable Object's stub and its id. Every method but
 * the streamed bodies is the object's method of the same name and arguments (the object knows its repository by
 * its name); the index's are the object's `index…` methods.
 */
export class RemoteRepo implements Repo {
  readonly index: RepoIndex;
  /** None: the commit is recorded in the object, the activity feed in D1 (set, so that it is not forwarded). */
  readonly commitDatabase = undefined;

  constructor(
    private readonly stub: RepoStub,
    readonly id: string,
  ) {
    this.index = forwarding({} as RepoIndex, (name) => (...args: unknown[]) =>
      callRepoObject(stub, indexMethodName(name as keyof RepoIndex & string), args),
    );
    return forwarding(this, (name) => (...args: unknown[]) => callRepoObject(stub, name, args));
  }

  /**
   * A pull's, an export's or an upload-pack's body from the object (RepoObject.fetch with BODY_PARAMS_HEADER: a response body is
   * cancelled in the object when the client goes away, a stream returned by an RPC method is not). The object
   * logs how the stream ended (`onEnd` stays unused here; `requestId` goes with it). A refusal's body is the
   * error's wire form, rebuilt here as the same class. A streamed body comes sealed (sealed-body.ts): one that
   * ends without its end mark (its stream failed in the object) fails here, and the client's transfer breaks.
   */
  private async body(params: BodyParams, json?: unknown): Promise<Response> {
    const init: RequestInit = { headers: { [BODY_PARAMS_HEADER]: JSON.stringify(params) } };
    if (json !== undefined) Object.assign(init, { method: 'POST', body: JSON.stringify(json) });
    const res = await this.stub.fetch(new Request('https://repo/body', init));
    if (res.headers.get(BODY_ERROR_HEADER)) throw errorFromWire((await res.json()) as WireError);
    return res;
  }

  /** The object streams the answer (RepoStore.pullBody): its bytes come through as the client reads them. */
  async pullBody(since?: string, opts: StreamOptions = {}): Promise<{ pages: boolean; body: ReadableStream<Uint8Array> }> {
    const params: BodyParams = { method: 'pull' };
    if (since !== undefined) params.since = since;
    if (opts.requestId !== undefined) params.requestId = opts.requestId;
    const res = await this.body(params);
    return { pages: res.headers.get(PAGES_HEADER) === '1', body: openSealedBody(res.body ?? new Response('').body!) };
  }

  /** As pullBody: the object streams the bundle (RepoStore.exportBody); null (204) while it has no commit. */
  async exportBody(opts: StreamOptions = {}): Promise<ReadableStream<Uint8Array> | null> {
    const params: BodyParams = { method: 'export' };
    if (opts.requestId !== undefined) params.requestId = opts.requestId;
    const res = await this.body(params);
    return res.status === 204 ? null : openSealedBody(res.body ?? new Response('').body!);
  }

  /** As pullBody: the object negotiates and streams the pack (RepoStore.uploadPack); the request goes as JSON. */
  async uploadPack(req: FetchRequest, opts: StreamOptions = {}): Promise<UploadAnswer> {
    const params: BodyParams = { method: 'upload-pack' };
    if (opts.requestId !== undefined) params.requestId = opts.requestId;
    const res = await this.body(params, req);
    return { sends: res.headers.get(SENDS_HEADER) === '1', body: openSealedBody(res.body ?? new Response('').body!) };
  }
}
