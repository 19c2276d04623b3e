/**
 * `kr watch`: keeps the project folder in sync with its repository as changes happen. It opens the
 * repository's event stream first, then pulls once to catch up, then pulls again on each push event — through
 * the same code as `kr pull` (client/sync.ts pullPages), so a local edit is never overwritten: a page
 * changed here and on the server is kept and reported, once. One line per change on stdout (`--json`: one JSON
 * object per line); connection news on stderr. A dropped connection or a restarted server is followed by a
 * reconnection with `Last-Event-ID` (lib/core/sse/client.ts), so no change is missed; a connection that could
 * not resume pulls again. Runs until Ctrl-C or SIGTERM (exit 0); removal from the repository, a token that is no
 * longer valid, or the repository's deletion end it with exit 1.
 */
import type { PushEventData, MemberEventData } from '../../schema/wire/events.ts';
import type { LiveEvent } from '../../lib/core/sse/client.ts';
import { connect, repoOf } from '../../client/config.ts';
import { refused } from '../../client/errors.ts';
import { followRepo, revokedMessage } from '../../client/live.ts';
import { clean, jsonText, note, out, paint, shortSha } from '../../client/output.ts';
import { openProject } from '../../client/project.ts';
import { pullPages, WILL_MERGE_WHY, type PullResult } from '../../client/sync.ts';

/** The `why` under which a page that will merge on push is remembered as reported (never a conflict's). */
const WILL_MERGE = '\u0000will merge';

/** Paths of a push named on its line; the rest are counted. */
const LINE_PATHS = 10;

/** `12:03:04` (UTC, as every time kr prints) of an RFC 3339 time, or of now when it does not parse. */
export function clockOf(time?: string): string {
  const t = time === undefined ? NaN : Date.parse(time);
  return new Date(Number.isNaN(t) ? Date.now() : t).toISOString().slice(11, 19);
}

/** `bob@example.com pushed 3 page(s) (1b7d048): wiki/a.md modified, wiki/b.md added` (values cleaned). */
export function pushLine(d: PushEventData): string {
  const n = d.paths.length + (d.more ?? 0);
  const named = d.paths.slice(0, LINE_PATHS).map((p) => `${clean(p.path)} ${p.status}`);
  const rest = n - named.length;
  const list = named.join(', ') + (rest > 0 ? `${named.length ? ', ' : ''}… and ${rest} more` : '');
  return `${clean(d.email)} pushed ${n} page(s) (${shortSha(d.sha)})${list ? `: ${list}` : ''}`;
}

/** `alice@example.com joined (member)`, `… was removed`, `… is now owner`. */
export function memberLine(d: MemberEventData): string {
  const who = clean(d.email);
  if (d.change === 'joined') return `${who} joined${d.role ? ` (${d.role})` : ''}`;
  if (d.change === 'removed') return `${who} was removed`;
  return `${who} is now ${d.role ?? 'a member'}`;
}

const counts = (r: PullResult): string => `${r.added.length} added, ${r.updated.length} updated, ${r.deleted.length} deleted`;
const pulled = (r: PullResult) => ({ new_head: r.new_head, added: r.added, updated: r.updated, deleted: r.deleted, conflicts: r.conflicts, will_merge: r.willMerge });

/** One JSON object on one line. */
const jsonLine = (value: unknown): void => {
  process.stdout.write(jsonText(value) + '\n');
};

export async function watch(opts: { repo?: string; json?: boolean }): Promise<void> {
  const first = await openProject();
  const session = await connect();
  const repo = repoOf(session, opts.repo, first);
  first.checkRepo(repo);
  const p = paint();
  /** Conflicts already reported (path and why): a page kept here is named once, not at every pull. */
  let reported = new Set<string>();

  /**
   * A pull as `kr pull` does it, the folder read afresh (other kr commands may have run meanwhile); with the
   * conflicts not reported before.
   */
  const pull = async (): Promise<{ r: PullResult; fresh: PullResult['conflicts'] }> => {
    const project = await openProject();
    const r = await pullPages(project, session.api, repo, false);
    const key = (c: PullResult['conflicts'][number]) => `${c.path}\u0000${c.why}`;
    // A page that will merge on push is reported once too, apart from the conflicts.
    const all = [...r.conflicts, ...r.willMerge.map((path) => ({ path, why: WILL_MERGE }))];
    const fresh = all.filter((c) => !reported.has(key(c)));
    reported = new Set(all.map(key));
    return { r, fresh };
  };
  const kept = (fresh: PullResult['conflicts']): void => {
    for (const c of fresh) {
      if (c.why === WILL_MERGE) out(`  ${p.cyan('will merge on push')} ${clean(c.path)}: ${WILL_MERGE_WHY}`);
      else out(`  ${p.red('conflict')} ${clean(c.path)}: ${c.why}; your file was kept`);
    }
  };

  const onEvent = async (e: LiveEvent): Promise<void> => {
    if (e.type === 'member') {
      if (opts.json) jsonLine({ event: 'member', id: e.id, ...e.data });
      else out(`${clockOf()} ${memberLine(e.data)}`);
      return;
    }
    // The pull comes before any output: when it fails, the follower reconnects and the event comes again.
    const { r, fresh } = await pull();
    if (e.type === 'push') {
      if (opts.json) jsonLine({ event: 'push', id: e.id, ...e.data, pulled: pulled(r) });
      else {
        out(`${clockOf(e.data.time)} ${pushLine(e.data)}`);
        kept(fresh);
      }
      return;
    }
    if (opts.json) jsonLine({ event: 'reset', reason: e.reason, pulled: pulled(r) });
    else {
      out(`${clockOf()} caught up after changes the server could not replay (${clean(e.reason)}): pulled ${clean(repo)} at ${shortSha(r.new_head)}, ${counts(r)}`);
      kept(fresh);
    }
  };

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const end = await followRepo(session.api, repo, {
      signal: stop.signal,
      onNotice: (n) => {
        if (opts.json) return;
        if (n.kind === 'connected' && n.first) note(`Watching ${clean(repo)} on ${session.serverUrl} (Ctrl-C stops).`);
        else if (n.kind === 'connected') note(n.resumed ? 'reconnected; resuming where the stream stopped' : 'reconnected; pulling what changed meanwhile');
        else if (n.kind === 'disconnected') note(`connection to the server lost (${clean(n.why)}); reconnecting in ${Math.max(1, Math.round(n.retryInMs / 1000))} s`);
        else note(`ignored ${n.why}`);
      },
      onConnected: async ({ first: starting, resumed }) => {
        // The stream is open before this pull, so a change made while it runs comes as an event afterwards.
        if (!starting && resumed) return;
        const { r, fresh } = await pull();
        const changed = r.added.length + r.updated.length + r.deleted.length > 0;
        if (opts.json) {
          if (starting || changed) jsonLine({ event: 'pull', ...pulled(r) });
        } else if (starting) {
          out(`${clockOf()} ${changed ? `pulled ${clean(repo)} at ${shortSha(r.new_head)}: ${counts(r)}` : `${clean(repo)} is up to date at ${shortSha(r.new_head)}`}`);
        } else if (changed) out(`${clockOf()} pulled what changed while disconnected: ${clean(repo)} at ${shortSha(r.new_head)}, ${counts(r)}`);
        if (!opts.json) kept(fresh);
      },
      onEvent,
    });
    if (end.kind === 'revoked') {
      if (opts.json) jsonLine({ event: 'revoked', reason: end.reason });
      throw refused(revokedMessage(end.reason, repo), 'revoked');
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
