/**
 * Live events of a repository (docs/api.md "Live events"): one stream per open repository view, read with fetch
 * (EventSource cannot send the Authorization header) and parsed as it arrives (lib/core/sse/parser.ts, the parser `kr watch` uses). A dropped stream is
 * opened again after a growing pause, resuming with `?after=<last event id>` (a browser may not send a
 * Last-Event-ID header across origins: the server's CORS does not allow it). What a view must do about it:
 *
 *  - load its data once the stream is open (or could not be opened): whatever changes after that arrives as
 *    an event, so nothing falls between the two;
 *  - reload its data whenever events may have been missed (`epoch` grows): an `event: reset`, or a stream
 *    opened again with no event id to resume after;
 *  - stop at `event: revoked` (its reason is shown), and at an answer that will not change by trying again
 *    (401, 403, 404, 400).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, errorText, type Api } from './api.ts';
import type { MemberEventData, PushEventData } from '../../schema/wire/events.ts';
import { SseParser } from '../../lib/core/sse/parser.ts';

export type { PushEventData, MemberEventData };

/** First pause before opening a dropped stream again; it doubles with each failed attempt, up to MAX_BACKOFF_MS. */
export const BASE_BACKOFF_MS = 1000;
export const MAX_BACKOFF_MS = 30_000;
/**
 * A stream that says nothing for this long is taken for dead and opened again: the server pings at least
 * every 15 s (SERVICE_EVENTS_PING_MS cannot be set higher), so this is three pings missed.
 */
export const IDLE_MS = 45_000;

/** Answers that trying again will not change: the stream stops with the server's reason. */
const FINAL_STATUSES = new Set([400, 401, 403, 404]);

/** `off`: the view asked for no stream. */
export type LiveStatus = 'connecting' | 'live' | 'retrying' | 'stopped' | 'off';

export interface StreamCallbacks {
  /** The stream opened for the first time, or could not be opened: the view may load its data now. */
  ready(): void;
  /** Events may have been missed: the view reloads its data. */
  gap(): void;
  status(status: LiveStatus, reason?: string): void;
  push(data: PushEventData): void;
  member(data: MemberEventData): void;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const isString = (v: unknown): v is string => typeof v === 'string';

/** A push event's data as the stream sends it (schema/wire/events.ts PushEventData), or null when it is not one. */
export function pushEventOf(v: unknown): PushEventData | null {
  if (!isObject(v)) return null;
  const { repo_id, sha, author, email, time, message, paths, more, merged } = v;
  if (![repo_id, sha, author, email, time, message].every(isString) || !Array.isArray(paths)) return null;
  const list = paths.filter((p): p is { path: string; status: 'added' | 'modified' | 'deleted' } =>
    isObject(p) && isString(p.path) && (p.status === 'added' || p.status === 'modified' || p.status === 'deleted'),
  );
  if (list.length !== paths.length) return null;
  const out: PushEventData = {
    repo_id: repo_id as string,
    sha: sha as string,
    author: author as string,
    email: email as string,
    time: time as string,
    message: message as string,
    paths: list.map((p) => ({ path: p.path, status: p.status })),
  };
  if (typeof more === 'number' && Number.isInteger(more) && more > 0) out.more = more;
  if (Array.isArray(merged)) out.merged = merged.filter(isString);
  return out;
}

/** A member event's data, or null when it is not one. */
export function memberEventOf(v: unknown): MemberEventData | null {
  if (!isObject(v)) return null;
  const { repo_id, user_id, email, change, role } = v;
  if (![repo_id, user_id, email].every(isString) || (change !== 'joined' && change !== 'removed' && change !== 'role')) return null;
  const out: MemberEventData = { repo_id: repo_id as string, user_id: user_id as string, email: email as string, change };
  if (role === 'owner' || role === 'member') out.role = role;
  return out;
}

/** "removed from this repo" → "Removed from this repo.": a reason as a sentence of its own. */
function sentence(text: string): string {
  const t = text.trim();
  const s = t.charAt(0).toUpperCase() + t.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

/** The reason of an `event: revoked` or `event: reset` (`{"reason"}`), as a sentence. */
function reasonOf(data: string): string {
  try {
    const v = JSON.parse(data) as unknown;
    if (isObject(v) && isString(v.reason) && v.reason.trim() !== '') return sentence(v.reason);
  } catch {
    // not JSON: no reason given
  }
  return 'The server gave no reason.';
}

/** The pause before attempt `n` (0-based) of opening a dropped stream again: doubling, capped, jittered. */
export function backoffMs(n: number, random: () => number = Math.random): number {
  const full = Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** Math.min(n, 16));
  return Math.round(full / 2 + (full / 2) * random());
}

/** One repository's event stream, kept open until `stop` (see the file's comment for what it tells its view). */
export class RepoEventStream {
  private stopped = false;
  private controller: AbortController | null = null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private wakeUp: (() => void) | null = null;
  /** The last event id seen: a stream opened again resumes after it. */
  private lastId: string | undefined;
  private everReady = false;
  /** Failed attempts since the stream last said anything. */
  private attempt = 0;

  constructor(
    private readonly api: Api,
    private readonly repo: string,
    private readonly on: StreamCallbacks,
    private readonly opts: { backoff?: (attempt: number) => number; idleMs?: number } = {},
  ) {}

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.controller?.abort();
    this.wakeUp?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const again = await this.once();
      if (!again || this.stopped) return;
      const pause = (this.opts.backoff ?? backoffMs)(this.attempt++);
      await new Promise<void>((resolve) => {
        this.wakeUp = resolve;
        this.timer = setTimeout(resolve, pause);
      });
      this.wakeUp = null;
    }
  }

  private becameReady(): void {
    if (this.everReady) return;
    this.everReady = true;
    this.on.ready();
  }

  /** One connection, to its end: whether to open the stream again. */
  private async once(): Promise<boolean> {
    const controller = new AbortController();
    this.controller = controller;
    let res: Response;
    try {
      res = await this.api.openEvents(this.repo, this.lastId, controller.signal);
      if (!res.ok) throw await this.api.refusal(res);
    } catch (e) {
      if (this.stopped) return false;
      const final = e instanceof ApiError && FINAL_STATUSES.has(e.status);
      this.on.status(final ? 'stopped' : 'retrying', errorText(e));
      this.becameReady();
      return !final;
    }
    // Opened again with no id to resume after: what happened in between is not replayed.
    if (!this.everReady) this.becameReady();
    else if (this.lastId === undefined) this.on.gap();
    this.on.status('live');

    const parser = new SseParser();
    const decoder = new TextDecoder();
    const reader = res.body!.getReader();
    let idle: ReturnType<typeof setTimeout> | undefined;
    const watch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => controller.abort(), this.opts.idleMs ?? IDLE_MS);
    };
    watch();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        watch();
        const comments = parser.comments;
        const messages = parser.push(decoder.decode(value, { stream: true }));
        if (messages.length > 0 || parser.comments > comments) this.attempt = 0;
        for (const m of messages) {
          if (this.stopped) return false;
          // An event over the parser's cap was dropped: what it said is lost, so the view reloads.
          if (m.oversized) {
            this.on.gap();
            continue;
          }
          if (!this.handle(m.event, m.data, m.id)) {
            controller.abort();
            return false;
          }
        }
      }
    } catch {
      // the connection broke, went silent (IDLE_MS) or was stopped
    } finally {
      clearTimeout(idle);
    }
    if (this.stopped) return false;
    this.on.status('retrying', 'The connection was lost.');
    return true;
  }

  /** One event; false when the stream is over for good. */
  private handle(event: string, data: string, lastId: string | undefined): boolean {
    let value: unknown;
    if (event === 'push' || event === 'member') {
      if (lastId) this.lastId = lastId;
      try {
        value = JSON.parse(data) as unknown;
      } catch {
        return true; // not an event this client can read
      }
    }
    if (event === 'push') {
      const d = pushEventOf(value);
      if (d) this.on.push(d);
    } else if (event === 'member') {
      const d = memberEventOf(value);
      if (d) this.on.member(d);
    } else if (event === 'reset') {
      // The events since the last id are not all there: start afresh from what the server holds now.
      this.lastId = undefined;
      this.on.gap();
    } else if (event === 'revoked') {
      this.on.status('stopped', reasonOf(data));
      return false;
    }
    return true;
  }
}

export interface LiveState {
  /** The stream is open, or could not be opened: load the view's data now. */
  ready: boolean;
  /** Grows whenever events may have been missed: reload the view's data. */
  epoch: number;
  status: LiveStatus;
  /** Why the stream is not live: the last failure (retrying) or why it ended (stopped). */
  reason?: string;
}

export interface LiveHandlers {
  push?: (data: PushEventData) => void;
  member?: (data: MemberEventData) => void;
}

/**
 * The repository's event stream while the calling view is open; `handlers` may change on every render.
 * `enabled` false: no stream (status `off`, ready at once).
 */
export function useRepoEvents(api: Api, repo: string, handlers: LiveHandlers, enabled = true): LiveState {
  // The state belongs to one stream: another repository (or sign-in) starts from nothing.
  const [state, setState] = useState<{ of: [Api, string]; live: LiveState }>({ of: [api, repo], live: INITIAL });
  const latest = useRef(handlers);
  latest.current = handlers;
  useEffect(() => {
    if (!enabled) return;
    let open = true;
    const of: [Api, string] = [api, repo];
    const update = (f: (s: LiveState) => LiveState) =>
      open && setState((s) => ({ of, live: f(s.of[0] === api && s.of[1] === repo ? s.live : INITIAL) }));
    const stream = new RepoEventStream(api, repo, {
      ready: () => update((s) => ({ ...s, ready: true })),
      gap: () => update((s) => ({ ...s, epoch: s.epoch + 1 })),
      status: (status, reason) => update((s) => ({ ...s, status, reason })),
      push: (d) => open && latest.current.push?.(d),
      member: (d) => open && latest.current.member?.(d),
    });
    stream.start();
    return () => {
      open = false;
      stream.stop();
    };
  }, [api, repo, enabled]);
  if (!enabled) return OFF;
  return state.of[0] === api && state.of[1] === repo ? state.live : INITIAL;
}

const INITIAL: LiveState = { ready: false, epoch: 0, status: 'connecting' };
const OFF: LiveState = { ready: true, epoch: 0, status: 'off' };

/** Distinct names, in order, as "Bob", "Bob and Carol", "Bob, Carol and Dan". */
export function nameList(names: readonly string[]): string {
  const unique = [...new Set(names.filter((n) => n.trim() !== ''))];
  if (unique.length <= 1) return unique[0] ?? '';
  return `${unique.slice(0, -1).join(', ')} and ${unique.at(-1)}`;
}

/**
 * The authors of the commits after `from` up to and including `to`, oldest first, from a page's history
 * (newest first). `from` null (the page did not exist): every commit up to `to`; `from` not in the history
 * (cut short): the author of `to` alone.
 */
export function authorsBetween(commits: readonly { sha: string; author: string }[], from: string | null, to: string): string[] {
  const end = commits.findIndex((c) => c.sha === to);
  if (end === -1) return [];
  const start = from === null ? commits.length : commits.findIndex((c) => c.sha === from);
  // `from` not among them: only `to` is known to be one of the changes.
  const slice = start === -1 ? [commits[end]!] : commits.slice(end, start);
  return slice.map((c) => c.author).reverse();
}

/**
 * The pushes naming a page that came after the version shown (`shown`, the page's last commit): those after
 * the last event that made it. None shown yet (the page was missing): every one.
 */
export function changesSince<T extends { sha: string }>(changes: readonly T[], shown: string | null): T[] {
  if (shown === null) return [...changes];
  let at = -1;
  for (let i = changes.length - 1; i >= 0; i--) {
    if (changes[i]!.sha === shown) {
      at = i;
      break;
    }
  }
  return changes.slice(at + 1);
}
