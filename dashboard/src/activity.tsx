/** A repository's activity feed with a chart of pushes per day by person, and a page's evolution timeline. */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { ActivityEvent } from '../../schema/wire/repos.ts';
import type { EvolutionResponse, SectionDiff } from '../../schema/wire/diff.ts';
import { useRepoEvents, type PushEventData } from './live.ts';
import { Crumbs, Empty, ErrorMessage, LiveNote, Loading, shortSha, useLoad } from './ui.tsx';
import { PageCrumbs, RepoTabs } from './repo-nav.tsx';
import { href } from './route.ts';
import { pageName, showTime, showValue, stringList } from './content.ts';
import { usePageMeta } from './titles.ts';

// ---------------------------------------------------------------- activity

/** Events per page of the feed. */
export const FEED_PAGE = 20;
/** The most events the chart counts from (the activity route clamps `limit` to 500). */
export const CHART_EVENTS = 500;
/** Days the chart spans, ending today (UTC). */
export const CHART_DAYS = 30;
/** Paths of a push listed by name; the rest are counted. */
const PATHS_SHOWN = 3;

const DAY_S = 86_400;
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * Colours of the chart's people, each at least 4.5:1 against white (so a bar reads against the page and the
 * legend's swatch beside dark text is clear); from the eighth person on, the rest share one grey series, "others".
 */
const COLOURS = ['#0550ae', '#bc4c00', '#116329', '#8250df', '#a40e26', '#1b7c83', '#7d4e00'];
const OTHERS_COLOUR = '#57606a';

function isoDay(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(0, 10);
}

/** "2026-11-23" → "23 Nov". */
function shortDay(day: string): string {
  const [, m, d] = day.split('-');
  return `${Number(d)} ${MONTHS[Number(m) - 1] ?? m}`;
}

function eventTime(e: ActivityEvent): string {
  return new Date(e.created_at * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

export interface PushChart {
  /** The days shown, oldest first (YYYY-MM-DD, UTC). */
  days: string[];
  /** People with at least one push in the window, most pushes first (then by email). */
  people: { email: string; total: number }[];
  /** The chart's series: one per person for the first COLOURS.length people, then one for all the others. */
  series: { label: string; emails: string[]; colour: string; total: number }[];
  /** counts[day][email]: pushes. */
  counts: Map<string, Map<string, number>>;
  total: number;
  /** The events counted did not reach back to the window's start: older pushes in it are missing. */
  truncated: boolean;
}

/** Pushes per UTC day and person over the CHART_DAYS days ending on `now`'s day. */
export function countPushes(events: ActivityEvent[], totalEvents: number, nowMs: number): PushChart {
  const today = Math.floor(nowMs / 1000 / DAY_S);
  const days: string[] = [];
  for (let d = today - CHART_DAYS + 1; d <= today; d++) days.push(isoDay(d * DAY_S));
  const inWindow = new Set(days);
  const counts = new Map<string, Map<string, number>>();
  const byPerson = new Map<string, number>();
  let total = 0;
  for (const e of events) {
    if (e.action !== 'push') continue;
    const day = isoDay(e.created_at);
    if (!inWindow.has(day)) continue;
    const row = counts.get(day) ?? new Map<string, number>();
    row.set(e.email, (row.get(e.email) ?? 0) + 1);
    counts.set(day, row);
    byPerson.set(e.email, (byPerson.get(e.email) ?? 0) + 1);
    total++;
  }
  const people = [...byPerson.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([email, n]) => ({ email, total: n }));
  const own = people.length > COLOURS.length ? COLOURS.length - 1 : people.length;
  const series = people.slice(0, own).map((p, i) => ({ label: p.email, emails: [p.email], colour: COLOURS[i]!, total: p.total }));
  const rest = people.slice(own);
  if (rest.length > 0) {
    series.push({
      label: `${rest.length} others`,
      emails: rest.map((p) => p.email),
      colour: OTHERS_COLOUR,
      total: rest.reduce((n, p) => n + p.total, 0),
    });
  }
  const oldest = events[events.length - 1];
  const truncated = events.length < totalEvents && oldest !== undefined && isoDay(oldest.created_at) >= days[0]!;
  return { days, people, series, counts, total, truncated };
}

export function chartLabel(c: PushChart): string {
  return `Pushes per day by person, last ${CHART_DAYS} days: ${plural(c.total, 'push', 'pushes')} by ${plural(c.people.length, 'person', 'people')}`;
}

function PushesChart({ chart }: { chart: PushChart }) {
  const W = 480;
  const H = 180;
  const left = 28;
  const right = 8;
  const top = 10;
  const bottom = 26;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  const dayTotals = chart.days.map((d) => [...(chart.counts.get(d)?.values() ?? [])].reduce((a, b) => a + b, 0));
  const max = Math.max(1, ...dayTotals);
  const slot = plotW / chart.days.length;
  const barW = Math.max(2, slot * 0.7);
  const y = (n: number) => top + plotH - (n / max) * plotH;
  const ticks = max <= 4 ? Array.from({ length: max + 1 }, (_, i) => i) : [0, Math.round(max / 2), max];
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={chartLabel(chart)} class="chart-svg">
        {ticks.map((t) => (
          <g key={`t${t}`}>
            <line x1={left} x2={W - right} y1={y(t)} y2={y(t)} stroke="#d0d7de" stroke-width="1" />
            <text x={left - 4} y={y(t) + 4} text-anchor="end" font-size="12" fill="#57606a">
              {t}
            </text>
          </g>
        ))}
        {chart.days.map((day, i) => {
          const row = chart.counts.get(day);
          let acc = 0;
          const x = left + i * slot + (slot - barW) / 2;
          return (
            <g key={day}>
              {chart.series.map((p) => {
                const n = p.emails.reduce((sum, e) => sum + (row?.get(e) ?? 0), 0);
                if (n === 0) return null;
                const y0 = y(acc + n);
                const h = y(acc) - y0;
                acc += n;
                return (
                  <rect key={p.label} x={x} y={y0} width={barW} height={h} fill={p.colour}>
                    <title>{`${day}: ${p.label}, ${plural(n, 'push', 'pushes')}`}</title>
                  </rect>
                );
              })}
              {(i % 7 === (chart.days.length - 1) % 7) && (
                <text
                  x={i === chart.days.length - 1 ? W - right : left + i * slot + slot / 2}
                  y={H - 8}
                  text-anchor={i === chart.days.length - 1 ? 'end' : 'middle'}
                  font-size="12"
                  fill="#57606a"
                >
                  {shortDay(day)}
                </text>
              )}
            </g>
          );
        })}
        <line x1={left} x2={W - right} y1={top + plotH} y2={top + plotH} stroke="#57606a" stroke-width="1" />
      </svg>
      <figcaption>
        <ul class="legend" aria-label="Legend">
          {chart.series.map((p) => (
            <li key={p.label}>
              <svg class="swatch" viewBox="0 0 10 10" width="12" height="12" aria-hidden="true">
                <rect width="10" height="10" fill={p.colour} />
              </svg>
              <span class="who-email">{p.label}</span> <span class="count">({plural(p.total, 'push', 'pushes')})</span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  );
}

function ChartTable({ chart }: { chart: PushChart }) {
  const rows = chart.days.filter((d) => chart.counts.has(d));
  return (
    <details class="chart-data">
      <summary>The chart's numbers as a table</summary>
      <div class="scroll" role="region" aria-label="Pushes per day by person, as a table" tabIndex={0}>
        <table class="data" id="pushes-table">
          <caption>Pushes per day by person (days without pushes left out)</caption>
          <thead>
            <tr>
              <th scope="col">Day (UTC)</th>
              {chart.people.map((p) => (
                <th scope="col" key={p.email}>
                  {p.email}
                </th>
              ))}
              <th scope="col">Total</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => {
              const row = chart.counts.get(d)!;
              return (
                <tr key={d}>
                  <th scope="row">{d}</th>
                  {chart.people.map((p) => (
                    <td key={p.email}>{row.get(p.email) ?? 0}</td>
                  ))}
                  <td>{[...row.values()].reduce((a, b) => a + b, 0)}</td>
                </tr>
              );
            })}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">All days</th>
              {chart.people.map((p) => (
                <td key={p.email}>{p.total}</td>
              ))}
              <td>{chart.total}</td>
            </tr>
          </tfoot>
        </table>
      </div>
    </details>
  );
}

/** A push as the event stream announced it, in the feed's shape: `sha` ties it to its entry once the feed has it. */
export function feedEventOf(d: PushEventData): ActivityEvent {
  const seconds = Math.floor(Date.parse(d.time) / 1000);
  const detail: Record<string, unknown> = { paths: d.paths.map((p) => p.path), message: d.message };
  if (d.more) detail.more = d.more;
  if (d.merged && d.merged.length > 0) detail.merged = d.merged;
  return { user_id: '', email: d.email, action: 'push', created_at: Number.isFinite(seconds) ? seconds : Math.floor(Date.now() / 1000), detail, sha: d.sha };
}

/**
 * A membership change (a `member` event) as a sentence: "a@b joined", "x removed y", "x made y owner". The
 * event's email is who made the change; its detail names the member it is about.
 */
export function memberChange(e: ActivityEvent): { verb: string; whom?: string; after?: string } {
  const d = e.detail ?? {};
  const whom = typeof d.email === 'string' && d.email !== '' ? d.email : typeof d.user_id === 'string' && d.user_id !== '' ? d.user_id : 'someone';
  switch (d.change) {
    case 'joined':
      return { verb: 'joined' };
    case 'removed':
      // An owner removing themselves left.
      return d.user_id === e.user_id ? { verb: 'left' } : { verb: 'removed', whom };
    case 'role':
      return { verb: 'made', whom, after: d.role === 'owner' ? 'owner' : 'a member' };
    default:
      return { verb: 'changed the membership of', whom };
  }
}

function MemberItem({ e }: { e: ActivityEvent }) {
  const { verb, whom, after } = memberChange(e);
  const time = eventTime(e);
  return (
    <li>
      <span class="title">{e.email}</span> <span class="badge action-member">{verb}</span>{' '}
      {whom !== undefined && (
        <>
          <span class="who-email">{whom}</span>{' '}
        </>
      )}
      {after !== undefined && <>{after} </>}
      <time dateTime={time}>{showTime(time)}</time>
    </li>
  );
}

/** The badge of each action of the feed but `member` (a sentence of its own, MemberItem). */
const ACTION_VERBS: Record<string, string> = { push: 'pushed', pull: 'pulled', import: 'imported' };

function EventItem({ repo, e, fresh }: { repo: string; e: ActivityEvent; fresh?: boolean }) {
  if (e.action === 'member') return <MemberItem e={e} />;
  const push = e.action === 'push';
  const paths = push ? stringList(e.detail?.paths) : [];
  const more = push && typeof e.detail?.more === 'number' ? e.detail.more : 0;
  const merged = push ? stringList(e.detail?.merged) : [];
  const client = e.action === 'pull' && typeof e.detail?.client === 'string' ? e.detail.client : undefined;
  const message = push && typeof e.detail?.message === 'string' && e.detail.message.trim() !== '' ? e.detail.message : undefined;
  const time = eventTime(e);
  const count = paths.length + more;
  return (
    <li class={fresh ? 'fresh' : undefined}>
      <span class="title">{e.email}</span>{' '}
      <span class={`badge action-${e.action}`}>{ACTION_VERBS[e.action] ?? e.action}</span>{' '}
      {merged.length > 0 && (
        <>
          <span class="badge merged" title="Written on top of changes made meanwhile, merged section by section">
            merged
          </span>{' '}
        </>
      )}
      {fresh && (
        <>
          <span class="badge new">new</span>{' '}
        </>
      )}
      <time dateTime={time}>{showTime(time)}</time>
      {message && <div class="message">{message}</div>}
      {paths.length > 0 && (
        <div class="meta paths">
          <span>{plural(count, 'page')}:</span>
          {paths.slice(0, PATHS_SHOWN).map((p) => (
            <a key={p} href={href({ name: 'page', repo, path: p })}>
              {p}
            </a>
          ))}
          {count > PATHS_SHOWN && <span>+{count - PATHS_SHOWN} more</span>}
        </div>
      )}
      {merged.length > 0 && (
        <div class="meta paths merged-paths">
          <span>Merged section by section with changes made meanwhile:</span>
          {merged.slice(0, PATHS_SHOWN).map((p) => (
            <a key={p} href={href({ name: 'page', repo, path: p })}>
              {p}
            </a>
          ))}
          {merged.length > PATHS_SHOWN && <span>+{merged.length - PATHS_SHOWN} more</span>}
        </div>
      )}
      {client && (
        <div class="meta">
          <span>
            with <code>{client}</code>
          </span>
        </div>
      )}
    </li>
  );
}

/** A pager button that stays focusable when it cannot act (aria-disabled), so the keyboard user keeps their place. */
function PagerButton({ label, off, go }: { label: string; off: boolean; go: () => void }) {
  return (
    <button type="button" aria-disabled={off ? 'true' : undefined} onClick={() => !off && go()}>
      {label}
    </button>
  );
}

/** Pushes announced live kept by the view (newest first); the feed holds the rest. */
const LIVE_KEPT = 200;

/**
 * A repository's activity, live: the chart and the feed are loaded once the repository's event stream is
 * open, and each push it announces is put at the top of the first page (and counted in the chart) until the
 * feed itself holds it (the same `sha`). Reloaded whenever events may have been missed.
 */
/** What the feed shows unless pulls are asked for: pushes, membership changes and imports. */
export const FEED_ACTIONS = ['push', 'member', 'import'] as const;
/** With "Show pulls": every action (the feed asked without `actions` leaves membership changes out). */
export const FEED_ACTIONS_WITH_PULLS = ['push', 'pull', 'member', 'import'] as const;

export function ActivityView({ api, repo }: { api: Api; repo: string }) {
  // The position belongs to this repository: another one starts at its newest events.
  const [at, setAt] = useState({ repo, offset: 0 });
  const offset = at.repo === repo ? at.offset : 0;
  // Pulls are left out unless asked for: with a few watchers and agents they are half of the feed.
  const [showPulls, setShowPulls] = useState(false);
  const [arrived, setArrived] = useState<{ repo: string; events: ActivityEvent[] }>({ repo, events: [] });
  // Membership changes announced live: the feed is read again (the event does not say who made the change).
  const [memberChanges, setMemberChanges] = useState(0);
  const fresh = arrived.repo === repo ? arrived.events : [];
  const live = useRepoEvents(api, repo, {
    push: (d) =>
      setArrived((a) => {
        const events = a.repo === repo ? a.events : [];
        if (events.some((e) => e.sha === d.sha)) return a;
        return { repo, events: [feedEventOf(d), ...events].slice(0, LIVE_KEPT) };
      }),
    member: () => setMemberChanges((n) => n + 1),
  });
  // A new position is read afresh from the feed, which by then holds what arrived live.
  const setOffset = (n: number) => {
    setArrived({ repo, events: [] });
    setAt({ repo, offset: n });
  };
  const chartData = useLoad(() => api.activity(repo, { limit: CHART_EVENTS, offset: 0 }), [api, repo, live.epoch], live.ready);
  const feed = useLoad(
    () => api.activity(repo, { limit: FEED_PAGE, offset, actions: showPulls ? FEED_ACTIONS_WITH_PULLS : FEED_ACTIONS }),
    [api, repo, offset, showPulls, live.epoch, memberChanges],
    live.ready,
  );
  /** What arrived live and `list` does not hold yet. */
  const notIn = (list: ActivityEvent[] | undefined) => {
    const held = new Set((list ?? []).map((e) => e.sha));
    return fresh.filter((e) => !held.has(e.sha));
  };
  const chartNew = notIn(chartData.data?.events);
  const chart = chartData.data ? countPushes([...chartNew, ...chartData.data.events], chartData.data.total + chartNew.length, Date.now()) : null;
  const feedNew = notIn(feed.data?.events);
  const total = (feed.data?.total ?? 0) + feedNew.length;
  // On the first page, what arrived live comes first, by time with the page (a reload may have put newer ones in it).
  const top = offset === 0 ? feedNew : [];
  const shown = [...top, ...(feed.data?.events ?? [])].sort((a, b) => b.created_at - a.created_at);
  const freshSet = new Set(top);

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'Activity' }]} />
      <h1 tabIndex={-1}>Activity in {repo}</h1>
      <RepoTabs repo={repo} current="activity" />
      <LiveNote live={live} hint="Live: new pushes appear at the top as they happen." />

      <section aria-labelledby="chart-h">
        <h2 id="chart-h">Pushes per day, last {CHART_DAYS} days</h2>
        <ErrorMessage message={chartData.error} />
        {chartData.loading && !chartData.data && <Loading what="the chart" />}
        {chart && chart.total === 0 && <Empty>No pushes in the last {CHART_DAYS} days.</Empty>}
        {chart && chart.total > 0 && (
          <>
            <PushesChart chart={chart} />
            {chart.truncated && (
              <p class="hint">
                Counted from the newest {CHART_EVENTS} events only: older pushes in these {CHART_DAYS} days are left out.
              </p>
            )}
            <ChartTable chart={chart} />
          </>
        )}
      </section>

      <section aria-labelledby="feed-h">
        <h2 id="feed-h">Events</h2>
        <label class="choice">
          <input
            type="checkbox"
            checked={showPulls}
            onChange={(e) => {
              setShowPulls((e.target as HTMLInputElement).checked);
              setOffset(0);
            }}
          />{' '}
          Show pulls
        </label>
        <ErrorMessage message={feed.error} />
        {feed.loading && !feed.data && <Loading what="the events" />}
        {offset > 0 && feedNew.length > 0 && (
          <p class="note" role="status">
            {plural(feedNew.length, 'new push', 'new pushes')} since this page was loaded.{' '}
            <button type="button" class="inline-action" onClick={() => setOffset(0)}>
              Show the newest
            </button>
          </p>
        )}
        {offset === 0 && top.length > 0 && (
          <p class="sr-only" role="status">
            {plural(top.length, 'new push', 'new pushes')} at the top.
          </p>
        )}
        {feed.data && total === 0 && <Empty>Nothing has happened here yet. Pushes, pulls and membership changes appear here.</Empty>}
        {feed.data && total > 0 && shown.length === 0 && <Empty>No events at this position. Go back to the newest.</Empty>}
        {shown.length > 0 && (
          <ol class="list feed" aria-label="Events, newest first" aria-busy={feed.loading}>
            {shown.map((e, i) => (
              <EventItem key={e.sha ? `${e.sha}:${e.action}` : `${offset + i}`} repo={repo} e={e} fresh={freshSet.has(e)} />
            ))}
          </ol>
        )}
        {feed.data && total > 0 && (
          <div class="pager">
            <PagerButton label="Newer" off={offset === 0 || feed.loading} go={() => setOffset(Math.max(0, offset - FEED_PAGE))} />
            <p class="count" role="status">
              {shown.length > 0 ? `Events ${offset + 1}–${offset + shown.length} of ${total}` : `${total} events`}
            </p>
            <PagerButton label="Older" off={offset + shown.length >= total || feed.loading} go={() => setOffset(offset + FEED_PAGE)} />
          </div>
        )}
      </section>
    </section>
  );
}

// ---------------------------------------------------------------- evolution

/** First evolution request; "Show more" adds this many, up to the route's cap. */
export const EVOLUTION_STEP = 50;
export const EVOLUTION_MAX = 200;

function headingText(heading: string): string {
  return heading === '_preamble' ? 'Before the first section' : heading.replace(/^#+\s*/, '');
}

function clip(s: string, n = 40): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

interface ChangeChip {
  kind: 'added' | 'modified' | 'removed' | 'renamed';
  sym: string;
  text: string;
}

/** What one commit changed, as chips: sections first (in the diff's order), then frontmatter fields. */
export function changeChips(diff: SectionDiff): { sections: ChangeChip[]; fields: ChangeChip[] } {
  const sections: ChangeChip[] = [];
  for (const s of [...(diff.preamble ? [diff.preamble] : []), ...diff.sections]) {
    const name = headingText(s.heading);
    if (s.status === 'added') sections.push({ kind: 'added', sym: '+', text: name });
    else if (s.status === 'modified') sections.push({ kind: 'modified', sym: '~', text: name });
    else if (s.status === 'removed') sections.push({ kind: 'removed', sym: '−', text: name });
    else if (s.status === 'renamed') sections.push({ kind: 'renamed', sym: '', text: `${headingText(s.old_heading ?? '')} → ${name}` });
  }
  const v = (x: unknown) => clip(showValue(x));
  const fields: ChangeChip[] = [
    ...diff.frontmatter.added.map((f) => ({ kind: 'added' as const, sym: '+', text: `${f.field}: ${v(f.to)}` })),
    ...diff.frontmatter.changed.map((f) => ({ kind: 'modified' as const, sym: '~', text: `${f.field}: ${v(f.from)} → ${v(f.to)}` })),
    ...diff.frontmatter.removed.map((f) => ({ kind: 'removed' as const, sym: '−', text: `${f.field}: ${v(f.from)}` })),
  ];
  return { sections, fields };
}

function Chips({ label, chips }: { label: string; chips: ChangeChip[] }) {
  return (
    <ul class="chips" aria-label={label}>
      {chips.map((c, i) => (
        <li key={i} class={`chip-${c.kind}`}>
          {c.sym && <span aria-hidden="true">{c.sym} </span>}
          {c.text}
          <span class="sr-only"> ({c.kind})</span>
        </li>
      ))}
    </ul>
  );
}

function EvolutionEntry({ repo, path, entry }: { repo: string; path: string; entry: EvolutionResponse['entries'][number] }) {
  const { commit, diff } = entry;
  const { sections, fields } = changeChips(diff);
  const first = diff.from_sha === '';
  return (
    <li class="evo-entry" tabIndex={-1}>
      <div class="evo-head">
        <code title={commit.sha}>{shortSha(commit.sha)}</code> <span class="title">{commit.message}</span>
      </div>
      <div class="meta">
        <span>
          by {commit.author} · <time dateTime={commit.time}>{showTime(commit.time)}</time>
        </span>
        {first && <span>created the page</span>}
      </div>
      {sections.length > 0 && <Chips label="Sections" chips={sections} />}
      {fields.length > 0 && <Chips label="Frontmatter" chips={fields} />}
      {sections.length === 0 && fields.length === 0 && <p class="hint">No section or field changed.</p>}
      {diff.parse_fallback && <p class="hint">The frontmatter could not be read on a side: a whole-file change.</p>}
      <p class="evo-link">
        {first ? (
          <a href={href({ name: 'page', repo, path })}>
            The page<span class="sr-only"> at {shortSha(commit.sha)}</span>
          </a>
        ) : (
          <a href={href({ name: 'diff', repo, path, from: diff.from_sha, to: diff.to_sha })}>
            Full diff<span class="sr-only"> of {shortSha(commit.sha)}</span>
          </a>
        )}
      </p>
    </li>
  );
}

export function EvolutionView({ api, repo, path }: { api: Api; repo: string; path: string }) {
  // "Show more" belongs to this page: another one starts at the first EVOLUTION_STEP commits.
  const [asked, setAsked] = useState({ key: `${repo}\n${path}`, limit: EVOLUTION_STEP });
  const limit = asked.key === `${repo}\n${path}` ? asked.limit : EVOLUTION_STEP;
  const setLimit = (n: number) => setAsked({ key: `${repo}\n${path}`, limit: n });
  const evo = useLoad(() => api.evolution(repo, path, { limit, blame: true }), [api, repo, path, limit]);
  const title = usePageMeta(api, repo, path)?.title ?? pageName(path);
  const entries = evo.data?.entries ?? [];
  const more = evo.data !== undefined && entries.length >= limit && limit < EVOLUTION_MAX && !evo.data.truncated;
  // After "Show more", the keyboard goes on from the first commit that arrived (the button may be gone).
  const list = useRef<HTMLOListElement>(null);
  const pendingFocus = useRef<{ from: number; sawLoading: boolean } | null>(null);
  useEffect(() => {
    const p = pendingFocus.current;
    if (!p) return;
    if (evo.loading) {
      p.sawLoading = true;
      return;
    }
    if (!p.sawLoading) return;
    pendingFocus.current = null;
    (list.current?.children[Math.min(p.from, entries.length - 1)] as HTMLElement | undefined)?.focus();
  }, [evo.loading, entries.length]);
  const showMore = () => {
    if (evo.loading) return;
    pendingFocus.current = { from: entries.length, sawLoading: false };
    setLimit(Math.min(EVOLUTION_MAX, limit + EVOLUTION_STEP));
  };

  return (
    <section>
      <PageCrumbs repo={repo} path={path} here="Evolution" title={title} />
      <h1 tabIndex={-1}>Evolution of {title}</h1>
      <p class="meta">
        <code>{path}</code>
      </p>
      <ErrorMessage message={evo.error} />
      {evo.loading && !evo.data && <Loading what="the evolution" />}
      {evo.data && entries.length === 0 && <Empty>No commit has touched this page.</Empty>}
      {entries.length > 0 && (
        <>
          <p class="count" role="status">
            {entries.length === 1 ? '1 commit' : `${entries.length} commits`}, newest first
          </p>
          <ol class="timeline" aria-label="Commits, newest first" ref={list}>
            {entries.map((e) => (
              <EvolutionEntry key={e.commit.sha} repo={repo} path={path} entry={e} />
            ))}
          </ol>
        </>
      )}
      {evo.data?.truncated && <p class="note">The server stopped early (size or work budget): older commits are left out.</p>}
      {more && (
        <button type="button" aria-disabled={evo.loading ? 'true' : undefined} onClick={showMore}>
          {evo.loading ? 'Loading…' : 'Show more'}
        </button>
      )}
      {evo.data && !more && entries.length >= EVOLUTION_MAX && (
        <p class="hint">
          The newest {EVOLUTION_MAX} commits are shown; see the <a href={href({ name: 'page', repo, path })}>page's history</a> for
          the rest.
        </p>
      )}
    </section>
  );
}
