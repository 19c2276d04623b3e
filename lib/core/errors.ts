/**
 * Every error of the service that has a name, in one place. Each class carries a stable `code`: it is how the
 * error crosses the Durable Object boundary (`errorToWire` / `errorFromWire`: the hosted build's repository
 * object sends the code, message and fields; the Worker rebuilds the same class), and what the one mapping to
 * HTTP (`toHttpError`) reads. An error that maps to nothing is a 500 `internal error`, its details only in
 * the log. This `code` is not the `code` of an error body: that one is the refusal's (lib/core/refusals.ts), which
 * an HttpError carries as `refusal`. This module imports only the catalogue of refusals: every layer may
 * throw these.
 */
import { R, type Refusal } from './refusals.ts';

/** The codes, one per class. */
export type ErrorCode =
  | 'http'
  | 'store'
  | 'unsafe_name'
  | 'unknown_sha'
  | 'concurrent_update'
  | 'path_collision'
  | 'path_case'
  | 'repo_not_found'
  | 'repo_busy'
  | 'lock_timeout'
  | 'object_missing'
  | 'corrupt_object'
  | 'search_query';

/** The base of every named error: its code, and the fields that rebuild it on the other side of an RPC. */
export abstract class DomainError extends Error {
  abstract readonly code: ErrorCode;
  /** What `errorFromWire` needs besides the message (plain data). */
  fields(): Record<string, unknown> {
    return {};
  }
}

/**
 * A refusal whose HTTP answer is decided where it is thrown (handlers, policy, request parsing). Rendered by
 * the app as `{"error": message, "code": refusal, ...extra}` with the given status and headers. Made from an
 * entry of the catalogue (`refuse`, below); the constructor takes the parts for `errorFromWire` and the
 * subclasses.
 */
export class HttpError extends DomainError {
  readonly code = 'http' as const;
  readonly status: number;
  /** The refusal's code (lib/core/refusals.ts): the error body's `code`. */
  readonly refusal: string;
  readonly extra: Record<string, unknown> | undefined;
  /** Response headers that go with the error (`Retry-After` of a 503, `Connection: close` of a 408). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    refusal: string,
    message: string,
    extra?: Record<string, unknown>,
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.refusal = refusal;
    this.extra = extra;
    this.headers = headers;
  }

  body(): Record<string, unknown> {
    return { error: this.message, code: this.refusal, ...(this.extra ?? {}) };
  }

  override fields(): Record<string, unknown> {
    return { status: this.status, refusal: this.refusal, extra: this.extra, headers: this.headers };
  }
}

/** The HttpError of a catalogue entry, its message made from `args` (`refuse(R.unknown_sha, value)`). */
export function refuse<A extends Array<string | number>>(r: Refusal<A>, ...args: A): HttpError {
  return new HttpError(r.status, r.code, r.text(...args));
}

/** As refuse, with extra body fields and response headers. */
export function refuseWith<A extends Array<string | number>>(
  r: Refusal<A>,
  opts: { extra?: Record<string, unknown>; headers?: Record<string, string> },
  ...args: A
): HttpError {
  return new HttpError(r.status, r.code, r.text(...args), opts.extra, opts.headers);
}

/** The git store refused an operation (an object of the wrong type, a batch used out of order). */
export class StoreError extends DomainError {
  readonly code: ErrorCode = 'store';
}
/** The id or a path could escape the data root or is not allowed; nothing touched the filesystem. */
export class UnsafeNameError extends StoreError {
  override readonly code = 'unsafe_name' as const;
}
/** A sha (or abbreviation) that resolves to no commit, or to more than one. */
export class UnknownShaError extends StoreError {
  override readonly code = 'unknown_sha' as const;
  constructor(readonly value: string) {
    super(`unknown sha: ${value}`);
  }
  override fields() {
    return { value: this.value };
  }
}
/** The branch moved since the writer started: nothing was changed. */
export class ConcurrentUpdateError extends StoreError {
  override readonly code = 'concurrent_update' as const;
}
/** A file write collides with a directory of the same name, or the reverse. */
export class PathCollisionError extends StoreError {
  override readonly code = 'path_collision' as const;
  constructor(readonly path: string) {
    super(`path collides with an existing page or directory: ${path}`);
  }
  override fields() {
    return { path: this.path };
  }
}
/**
 * A push would create a page whose path differs only in letter case (foldPathCase) from another page's:
 * one at head, or another new one in the same push. On a case-insensitive disk both would be one file.
 */
export class PathCaseError extends StoreError {
  override readonly code = 'path_case' as const;
  constructor(
    readonly path: string,
    readonly existing: string,
  ) {
    super(`path "${path}" differs only in letter case from "${existing}"`);
  }
  override fields() {
    return { path: this.path, existing: this.existing };
  }
}
export class RepoNotFoundError extends StoreError {
  override readonly code = 'repo_not_found' as const;
  constructor(readonly id: string) {
    super(`repo not found: ${id}`);
  }
  override fields() {
    return { id: this.id };
  }
}

/** Who held a lock, doing what, when a waiter gave up on it. */
export interface LockHolder {
  owner: string;
  step: string;
  heldMs: number;
}

/** A waiter gave up: the lock was not free within its deadline. Carries who held it, doing what. */
export class LockTimeoutError extends DomainError {
  readonly code = 'lock_timeout' as const;
  constructor(
    readonly key: string,
    readonly waitedMs: number,
    readonly holder: LockHolder | null,
  ) {
    super(
      `lock ${key} not free after ${Math.round(waitedMs)} ms` +
        (holder ? ` (held ${Math.round(holder.heldMs)} ms by ${holder.owner} at ${holder.step})` : ''),
    );
    this.name = 'LockTimeoutError';
  }
  override fields() {
    return { key: this.key, waitedMs: this.waitedMs, holder: this.holder };
  }
}

/** What a RepoBusyError asks the client to wait before retrying, in seconds. */
export const REPO_BUSY_RETRY_AFTER_S = 5;

/**
 * The repository's write lock was not free within the store's lock wait (its holder is stuck, or the queue is
 * that long): the caller gets 503 with Retry-After and retries later. The lock's holder is in `lock`, for the
 * log only.
 */
export class RepoBusyError extends DomainError {
  readonly code = 'repo_busy' as const;
  constructor(readonly lock: LockTimeoutError) {
    super(lock.message);
    this.name = 'RepoBusyError';
  }
  override fields() {
    return lock(this.lock);
  }
}
const lock = (l: LockTimeoutError) => ({ key: l.key, waitedMs: l.waitedMs, holder: l.holder });

/** The object is in no pack and no loose file of the repository. */
export class ObjectMissingError extends DomainError {
  readonly code = 'object_missing' as const;
  constructor(readonly oid: string) {
    super(`object ${oid} not found`);
    this.name = 'ObjectMissingError';
  }
  override fields() {
    return { oid: this.oid };
  }
}

/** The object's file or record does not decode as git writes them. */
export class CorruptObjectError extends DomainError {
  readonly code = 'corrupt_object' as const;
  constructor(
    readonly oid: string,
    readonly why: string,
  ) {
    super(`object ${oid} is corrupt: ${why}`);
    this.name = 'CorruptObjectError';
  }
  override fields() {
    return { oid: this.oid, why: this.why };
  }
}

/**
 * A refused search query: 400 with a message that says what is wrong, `q required` (no query at all) or
 * `invalid query: <problem>`.
 */
export class SearchQueryError extends DomainError {
  readonly code = 'search_query' as const;
  /** The problem, or null when there is no query. */
  readonly problem: string | null;
  constructor(problem: string | null) {
    super(problem === null ? R.q_required.message : R.invalid_query.text(problem));
    this.name = 'SearchQueryError';
    this.problem = problem;
  }
  override fields() {
    return { problem: this.problem };
  }
}

/**
 * The one mapping of errors to their HTTP form (status, `{"error": ..., "code": ...}` body, headers), each
 * through its entry of the catalogue. Null for anything else: the app answers 500 `internal error` and logs
 * it.
 */
export function toHttpError(e: unknown): HttpError | null {
  if (!(e instanceof DomainError)) return null;
  switch (e.code) {
    case 'http':
      return e as HttpError;
    case 'unknown_sha':
      return refuse(R.unknown_sha, (e as UnknownShaError).value);
    case 'unsafe_name':
      return refuse(R.unsafe_name, e.message);
    case 'path_case':
      return refuse(R.path_case, (e as PathCaseError).path, (e as PathCaseError).existing);
    case 'search_query': {
      const problem = (e as SearchQueryError).problem;
      return problem === null ? refuse(R.q_required) : refuse(R.invalid_query, problem);
    }
    case 'repo_not_found':
      return refuse(R.repo_not_found);
    case 'path_collision':
      return refuse(R.path_collision, (e as PathCollisionError).path);
    case 'concurrent_update':
      return refuse(R.concurrent_update);
    case 'repo_busy':
      return refuseWith(R.repo_busy, { headers: { 'Retry-After': String(REPO_BUSY_RETRY_AFTER_S) } });
    case 'store':
    case 'lock_timeout':
    case 'object_missing':
    case 'corrupt_object':
      return null;
  }
}

/** A named error as it crosses an RPC boundary: plain data, structured-clonable. */
export interface WireError {
  code: ErrorCode;
  message: string;
  fields: Record<string, unknown>;
}

/** The wire form of a named error; null for any other error (which crosses, if at all, as a plain failure). */
export function errorToWire(e: unknown): WireError | null {
  return e instanceof DomainError ? { code: e.code, message: e.message, fields: e.fields() } : null;
}

const str = (v: unknown) => String(v);
const lockOf = (f: Record<string, unknown>) =>
  new LockTimeoutError(str(f.key), Number(f.waitedMs), (f.holder as LockHolder | null | undefined) ?? null);

/** The same error class, rebuilt from its wire form. */
export function errorFromWire(w: WireError): DomainError {
  const f = w.fields;
  switch (w.code) {
    case 'http':
      return new HttpError(
        Number(f.status),
        str(f.refusal),
        w.message,
        f.extra as Record<string, unknown> | undefined,
        (f.headers as Record<string, string> | undefined) ?? {},
      );
    case 'store':
      return new StoreError(w.message);
    case 'unsafe_name':
      return new UnsafeNameError(w.message);
    case 'unknown_sha':
      return new UnknownShaError(str(f.value));
    case 'concurrent_update':
      return new ConcurrentUpdateError(w.message);
    case 'path_collision':
      return new PathCollisionError(str(f.path));
    case 'path_case':
      return new PathCaseError(str(f.path), str(f.existing));
    case 'repo_not_found':
      return new RepoNotFoundError(str(f.id));
    case 'repo_busy':
      return new RepoBusyError(lockOf(f));
    case 'lock_timeout':
      return lockOf(f);
    case 'object_missing':
      return new ObjectMissingError(str(f.oid));
    case 'corrupt_object':
      return new CorruptObjectError(str(f.oid), str(f.why));
    case 'search_query':
      return new SearchQueryError(f.problem === null || f.problem === undefined ? null : str(f.problem));
  }
}
