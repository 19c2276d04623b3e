/**
 * What crosses between the Worker and a repository's Durable Object (lib/runtime/workers/repo-object.ts), by
 * native RPC: the object's public methods, called directly on its stub. Their names and arguments are those of
 * the interfaces they serve (Repo, its RepoIndex, Live without its repository id), so no list of them is kept here: the types below are
 * made from those interfaces. Each returns an Outcome: the value, or the error by its code (lib/core/errors.ts), which
 * the Worker rebuilds as the same class — never its HTTP form.
 */
import type { GrantMatch } from '../../events/hub.ts';
import { errorFromWire, type WireError } from '../../core/errors.ts';
import type { Repo, RepoIndex } from '../../repo/repos.ts';
import type { Live } from '../../events/live.ts';
import type { StreamGrant } from '../../events/stream.ts';

/** A call's outcome as it crosses to the Worker. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: WireError };

/**
 * The Repo members a repository's handle (RemoteRepos.open) answers itself: its id, the index (RepoIndex, below),
 * the streamed bodies, which come from the object's `fetch` (BODY_PARAMS_HEADER), and `commitDatabase` (none:
 * a push's activity is recorded in D1 after its commit).
 */
type HandleMember = 'id' | 'index' | 'commitDatabase' | 'pullBody' | 'exportBody' | 'uploadPack';
/** The Repo methods the object serves, by the same name and arguments. */
export type ServedRepoMethod = Exclude<keyof Repo, HandleMember>;
/** The Live methods the object serves by RPC (`stream` goes through its `fetch`; `deleted` is the object's own doing). */
export type ServedLiveMethod = Exclude<keyof Live, 'stream' | 'deleted' | 'endStreams'>;

/** An interface whose methods take the repository id first, as one repository's: the id dropped. */
type ByRepo<T> = {
  [P in keyof T]: T[P] extends (repoId: string, ...args: infer A) => infer R ? (...args: A) => R : T[P];
};

/** The object's side of methods K of T: the same arguments, the outcome of the result. */
type Served<T, K extends keyof T> = {
  [P in K]: T[P] extends (...args: infer A) => Promise<infer R> ? (...args: A) => Promise<Outcome<R>> : never;
};
/** RepoIndex methods as the object serves them: `index` + the name (`indexResolve`, ...). */
export type IndexMethodName<K extends keyof RepoIndex & string> = `index${Capitalize<K>}`;
type ServedIndex = {
  [P in keyof RepoIndex & string as IndexMethodName<P>]: RepoIndex[P] extends (...args: infer A) => Promise<infer R>
    ? (...args: A) => Promise<Outcome<R>>
    : never;
};

/**
 * Every RPC method of the repository's object. None takes the repository id: the object holds one repository,
 * its name (`ctx.id.name`, given by idFromName). Live's methods, which take it first, are served without it.
 */
export type RepoObjectRpc = Served<Repo, ServedRepoMethod> &
  Served<ByRepo<Live>, ServedLiveMethod> &
  ServedIndex & {
    /** Makes the repository (D1 registered its id); lifts the tombstone of an earlier deletion. */
    create(creator?: string): Promise<Outcome<boolean>>;
    /** Deletes the repository: the object's whole storage, and a tombstone. */
    destroy(): Promise<Outcome<null>>;
    /** Ends the object's streams of a disabled user or of revoked PATs (Live.endStreams, per repository). */
    endStreams(match: GrantMatch, reason: string): Promise<Outcome<null>>;
  };

/** The object's name for the RepoIndex method `name`. */
export const indexMethodName = <K extends keyof RepoIndex & string>(name: K): IndexMethodName<K> =>
  `index${name[0]!.toUpperCase()}${name.slice(1)}` as IndexMethodName<K>;

/** A stub of the repository's object: its RPC methods, and `fetch` for event streams. */
export type RepoStub = RepoObjectRpc & { fetch(request: Request): Promise<Response> };

/** The part of the Durable Object namespace binding used here. */
export interface RepoNamespace {
  idFromName(name: string): unknown;
  get(id: unknown): RepoStub;
}

/** The request header that carries an event stream's parameters from the Worker (RemoteLive.stream). */
export const STREAM_PARAMS_HEADER = 'x-kr-stream';

/** The request header that asks for a pull's or an export's body (RepoObject.fetch), with its BodyParams. */
export const BODY_PARAMS_HEADER = 'x-kr-body';
/** Set on a body request's answer that is an error (its wire form as JSON). */
export const BODY_ERROR_HEADER = 'x-kr-error';
/** A pull body's answer: `1` when it holds any page. */
export const PAGES_HEADER = 'x-kr-pages';

/** A git fetch's answer: `1` when it sends a pack with commits in it. */
export const SENDS_HEADER = 'x-kr-sends';

/**
 * A pull's, an export's or a git fetch's body, asked for by the Worker (RemoteRepos). A fetch's parsed request
 * (lib/git/upload-request.ts FetchRequest) is the body of the Worker's request, as JSON.
 */
export interface BodyParams {
  method: 'pull' | 'export' | 'upload-pack';
  since?: string;
  requestId?: string;
}

/** What the Worker asks for when it opens an event stream. */
export interface StreamParams {
  grant: StreamGrant;
  after: string | null;
}

/**
 * An object whose every other method (a string name it does not have) is `forward(name)`: how the Worker's
 * side serves an interface's methods from the object's by their names, without a list of them. `then` is
 * never forwarded (the object is no promise).
 */
export function forwarding<T extends object, F>(target: T, forward: (name: string) => F): T {
  return new Proxy(target, {
    get(t, name, receiver) {
      if (typeof name !== 'string' || name in t || name === 'then') return Reflect.get(t, name, receiver);
      return forward(name);
    },
  });
}

/**
 * Calls `method` of the repository's object (its stub): its value, or the error it sent, rebuilt as the same
 * class (lib/core/errors.ts).
 */
export async function callRepoObject<T>(stub: RepoStub, method: string, args: readonly unknown[]): Promise<T> {
  const r = await (stub as unknown as Record<string, (...a: unknown[]) => Promise<Outcome<T>>>)[method]!(...args);
  if (r.ok) return r.value;
  throw errorFromWire(r.error);
}
