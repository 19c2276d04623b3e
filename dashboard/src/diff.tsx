/** What changed in a page between two of its versions, section by section, with the frontmatter's fields. */
import { useEffect, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { Commit } from '../../schema/wire/common.ts';
import type { SectionDiff, SectionEntry } from '../../schema/wire/diff.ts';
import { pageName, showTime, showValue } from './content.ts';
import { PageCrumbs } from './repo-nav.tsx';
import { href } from './route.ts';
import { usePageMeta } from './titles.ts';
import { Empty, ErrorMessage, Loading, shortSha, useLoad } from './ui.tsx';

const STATUS_TEXT: Record<SectionEntry['status'], string> = {
  added: 'added',
  removed: 'removed',
  modified: 'modified',
  unchanged: 'unchanged',
  renamed: 'renamed',
};

function commitLabel(c: Commit): string {
  return `${shortSha(c.sha)} · ${c.message.split('\n')[0]} · ${c.author} · ${showTime(c.time)}`;
}

/** One labelled picker of the page's commits (the compare form's From and To). */
function CommitSelect(props: { id: string; label: string; commits: Commit[]; value: string; onPick: (sha: string) => void }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={(e) => props.onPick((e.target as HTMLSelectElement).value)}>
        {props.commits.map((c) => (
          <option key={c.sha} value={c.sha}>
            {commitLabel(c)}
          </option>
        ))}
      </select>
    </div>
  );
}

export function DiffView({ api, repo, path, from, to }: { api: Api; repo: string; path: string; from?: string; to?: string }) {
  const history = useLoad(async () => (await api.history(repo, path, 200)).commits, [api, repo, path]);
  const commits = history.data ?? [];
  const canDefault = commits.length > 1;
  // With only `to`, it may be the commit that created the page, which has no earlier one to diff with (the
  // diff route would refuse): its diff against the empty page comes from the evolution route. Undefined while
  // the history is not known, null when it does not matter.
  const oldest = to && !from ? (history.data ? (history.data.at(-1)?.sha ?? '') : undefined) : null;
  const diff = useLoad<SectionDiff | null>(async () => {
    if (!(from || to || canDefault) || oldest === undefined) return null;
    if (oldest && to && oldest.startsWith(to.toLowerCase())) {
      const evo = await api.evolution(repo, path, { limit: Math.max(1, Math.min(200, commits.length)), blame: true });
      const entry = evo.entries.find((e) => e.commit.sha === oldest);
      if (entry) return entry.diff;
    }
    return api.diff(repo, path, { from, to, blame: true });
  }, [api, repo, path, from, to, canDefault, oldest]);
  const meta = usePageMeta(api, repo, path);
  const title = meta?.title ?? pageName(path);
  const [pick, setPick] = useState<{ from: string; to: string; edited: boolean }>({ from: from ?? '', to: to ?? '', edited: false });
  // The pickers follow the diff shown until the reader picks; a diff that arrives after a pick never undoes it.
  useEffect(() => {
    setPick({ from: from ?? '', to: to ?? '', edited: false });
  }, [from, to]);
  useEffect(() => {
    const d = diff.data;
    if (d) setPick((p) => (p.edited ? p : { from: d.from_sha, to: d.to_sha, edited: false }));
  }, [diff.data]);

  const compare = (ev: Event) => {
    ev.preventDefault();
    location.hash = href({ name: 'diff', repo, path, from: pick.from || undefined, to: pick.to || undefined });
  };

  return (
    <section>
      <PageCrumbs repo={repo} path={path} here="Changes" title={title} />
      <h1 tabIndex={-1}>Changes to {title}</h1>
      <ErrorMessage message={history.error} />
      {history.loading && !history.data && <Loading what="history" />}
      {history.data && commits.length === 0 && <Empty>No commit has touched this page.</Empty>}
      {history.data && commits.length === 1 && !from && !to && (
        <Empty>This page has a single commit: there is nothing to compare yet.</Empty>
      )}
      {commits.length > 1 && (
        <form class="card compare" onSubmit={compare}>
          <CommitSelect id="from" label="From (older)" commits={commits} value={pick.from} onPick={(sha) => setPick((p) => ({ ...p, from: sha, edited: true }))} />
          <CommitSelect id="to" label="To (newer)" commits={commits} value={pick.to} onPick={(sha) => setPick((p) => ({ ...p, to: sha, edited: true }))} />
          <button type="submit">Compare</button>
        </form>
      )}
      <ErrorMessage message={diff.error} />
      {(diff.loading || oldest === undefined) && (from || to || canDefault) && <Loading what="the changes" />}
      {diff.data && !diff.loading && <DiffBody diff={diff.data} />}
    </section>
  );
}

function DiffBody({ diff }: { diff: SectionDiff }) {
  const fm = [
    ...diff.frontmatter.changed.map((c) => ({ ...c, kind: 'changed' })),
    ...diff.frontmatter.added.map((c) => ({ ...c, kind: 'added' })),
    ...diff.frontmatter.removed.map((c) => ({ ...c, kind: 'removed' })),
  ];
  const sections = [...(diff.preamble ? [diff.preamble] : []), ...diff.sections];
  const changed = sections.filter((s) => s.status !== 'unchanged').length;
  return (
    <div class="diff" aria-label="Section diff">
      <p class="hint" role="status">
        From <code>{diff.from_sha ? shortSha(diff.from_sha) : 'the empty page'}</code> to <code>{shortSha(diff.to_sha)}</code>:{' '}
        {changed} of {sections.length} {sections.length === 1 ? 'section' : 'sections'} changed
        {fm.length > 0 ? `, ${fm.length} frontmatter ${fm.length === 1 ? 'change' : 'changes'}` : ''}.
      </p>
      {diff.truncated && <p class="note">The server ran out of its work budget: parts of this diff are coarser.</p>}
      {diff.parse_fallback && <p class="note">A side's frontmatter could not be read: this is a whole-file diff.</p>}
      {fm.length > 0 && (
        <div class="scroll">
          <table class="frontmatter">
            <caption>Frontmatter changes</caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Change</th>
                <th scope="col">Before</th>
                <th scope="col">After</th>
              </tr>
            </thead>
            <tbody>
              {fm.map((c, i) => (
                <tr key={i} class={`fm-${c.kind}`}>
                  <th scope="row">{c.field}</th>
                  <td>{c.kind}</td>
                  <td>{c.from === undefined ? '' : showValue(c.from)}</td>
                  <td>{c.to === undefined ? '' : showValue(c.to)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {sections.length === 0 && <Empty>Neither side has any text.</Empty>}
      {sections.map((s, i) => (
        <SectionCard key={`${s.heading}-${i}`} s={s} />
      ))}
    </div>
  );
}

function SectionCard({ s }: { s: SectionEntry }) {
  const title = s.heading === '_preamble' ? 'Before the first section' : s.heading.replace(/^#+\s*/, '');
  const lines = (s.line_diff ?? '').split('\n').filter((l, i, all) => !(l === '' && i === all.length - 1));
  const body = (
    <>
      {s.line_diff !== undefined && (
        <pre class="lines">
          {lines.map((l, i) => {
            const kind = l.startsWith('+ ') ? 'add' : l.startsWith('- ') ? 'del' : 'ctx';
            return (
              <span key={i} class={`line ${kind}`}>
                {kind === 'add' && <span class="sr-only">added: </span>}
                {kind === 'del' && <span class="sr-only">removed: </span>}
                {l}
                {'\n'}
              </span>
            );
          })}
        </pre>
      )}
    </>
  );
  return (
    <section class={`section status-${s.status}`}>
      <header>
        <h3>{title}</h3>
        <span class={`status ${s.status}`}>{STATUS_TEXT[s.status]}</span>
        {s.old_heading && (
          <span class="renamed-from">
            renamed from <q>{s.old_heading.replace(/^#+\s*/, '')}</q>
          </span>
        )}
        {s.introduced_by && (
          <span class="chip" title={`${s.introduced_by.sha}\n${s.introduced_by.message}`}>
            introduced by {s.introduced_by.author} · <time dateTime={s.introduced_by.time}>{showTime(s.introduced_by.time).slice(0, 10)}</time> ·{' '}
            <code>{shortSha(s.introduced_by.sha)}</code>
          </span>
        )}
      </header>
      {s.status === 'unchanged' ? (
        <details>
          <summary>Show the unchanged text</summary>
          {body}
        </details>
      ) : s.line_diff === undefined && s.status === 'renamed' ? (
        <p class="meta">Only the heading changed.</p>
      ) : (
        body
      )}
    </section>
  );
}
