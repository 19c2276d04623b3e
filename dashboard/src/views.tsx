import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { Commit } from '../../schema/wire/common.ts';
import type { SectionDiff, SectionEntry } from '../../schema/wire/diff.ts';
import type { LinksResponse } from '../../schema/wire/links.ts';
import { groupPages, pageName, renderSnippet, showTime, showValue, splitFrontmatter, stringList, type RenderContext } from './content.ts';
import { changesSince, nameList, useRepoEvents, type PushEventData } from './live.ts';
import { loadDraft } from './drafts.ts';
import { JoinRepo } from './team.tsx';
import { Markdown } from './markdown.tsx';
import { href } from './route.ts';
import { rememberMeta, usePageMeta, usePageMetas, type PageMeta } from './titles.ts';
import { ConfirmButton, Crumbs, Empty, ErrorMessage, LiveNote, Loading, errorText, problemOf, setFlash, shortSha, useFlash, useLoad, type Problem } from './ui.tsx';

function Change({ c }: { c: Commit }) {
  return (
    <span class="change">
      <time dateTime={c.time}>{showTime(c.time)}</time> by {c.author}
    </span>
  );
}

// ---------------------------------------------------------------- repositories

/** The breadcrumb trail of a view about one page: repositories, the repository, the page, then `here`. */
export function PageCrumbs({ repo, path, here, title }: { repo: string; path: string; here: string; title?: string }) {
  return (
    <Crumbs
      items={[
        { label: 'Repositories', to: '#/' },
        { label: repo, to: href({ name: 'repo', repo }) },
        { label: title ?? pageName(path), to: href({ name: 'page', repo, path }) },
        { label: here },
      ]}
    />
  );
}

/** The sections of one repository: its pages, its team, its activity, its settings. */
export function RepoTabs({ repo, current }: { repo: string; current: 'pages' | 'team' | 'activity' | 'settings' }) {
  const tabs = [
    { key: 'pages', label: 'Pages', to: href({ name: 'repo', repo }) },
    { key: 'team', label: 'Team', to: href({ name: 'team', repo }) },
    { key: 'activity', label: 'Activity', to: href({ name: 'activity', repo }) },
    { key: 'settings', label: 'Settings', to: href({ name: 'settings', repo }) },
  ] as const;
  return (
    <nav class="tabs" aria-label="Repository">
      {tabs.map((t) => (
        <a key={t.key} href={t.to} aria-current={t.key === current ? 'page' : undefined}>
          {t.label}
        </a>
      ))}
    </nav>
  );
}

/**
 * "Import a repository": a git bundle file (`git bundle create docs.bundle HEAD main`, or an export) becomes
 * the history of a new repository, or of one of the user's empty ones. The server checks the whole bundle
 * first; its refusal is shown as it words it.
 */
function ImportForm({ api, onImported }: { api: Api; onImported: () => void }) {
  const [id, setId] = useState('');
  const [file, setFile] = useState<File>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Problem>();
  const [done, setDone] = useState<{ id: string; commits: number; pages: number }>();

  const submit = async (ev: Event) => {
    ev.preventDefault();
    if (!file) return;
    setBusy(true);
    setError(undefined);
    setDone(undefined);
    try {
      const r = await api.importRepo(id.trim(), file);
      setDone(r);
      setId('');
      onImported();
    } catch (e) {
      setError(problemOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="card" onSubmit={submit} aria-labelledby="import-title">
      <h2 id="import-title">Import a repository</h2>
      <p class="hint">
        A git bundle brings a whole history in, commit for commit: make one with <code>git bundle create docs.bundle HEAD main</code>, or
        export a repository here or from another server.
      </p>
      <label for="import-id">Repository id</label>
      <input
        id="import-id"
        value={id}
        required
        maxLength={64}
        autoComplete="off"
        spellcheck={false}
        placeholder="docs"
        onInput={(e) => setId((e.target as HTMLInputElement).value)}
      />
      <label for="import-file">Bundle file</label>
      <input id="import-file" type="file" required accept=".bundle,application/x-git-bundle" onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0])} />
      <div class="row">
        <button type="submit" disabled={busy || !file}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </div>
      <ErrorMessage message={error?.text} upgradeUrl={error?.upgradeUrl} />
      {done && (
        <p class="ok" role="status">
          Imported <a href={href({ name: 'repo', repo: done.id })}>{done.id}</a>: {done.commits} {done.commits === 1 ? 'commit' : 'commits'},{' '}
          {done.pages} {done.pages === 1 ? 'page' : 'pages'}.
        </p>
      )}
    </form>
  );
}

export function ReposView({ api }: { api: Api }) {
  const repos = useLoad(async () => (await api.repos()).repos, [api]);
  const [id, setId] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Problem>();
  const [created, setCreated] = useState<string>();
  const flash = useFlash();

  const create = async (ev: Event) => {
    ev.preventDefault();
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const r = await api.createRepo(id.trim());
      setCreated(r.id);
      setId('');
      repos.reload();
    } catch (e) {
      setError(problemOf(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section>
      <h1 tabIndex={-1}>Repositories</h1>
      {flash && (
        <p class="ok" role="status">
          {flash}
        </p>
      )}
      <form class="card inline" onSubmit={create}>
        <label for="new-repo">New repository id</label>
        <div class="row">
          <input
            id="new-repo"
            value={id}
            required
            maxLength={64}
            autoComplete="off"
            spellcheck={false}
            placeholder="acme"
            onInput={(e) => setId((e.target as HTMLInputElement).value)}
          />
          <button type="submit" disabled={busy}>
            Create repository
          </button>
        </div>
        <p class="hint">Letters, digits, "-" and "_", starting with a letter or digit; at most 64.</p>
        <ErrorMessage message={error?.text} upgradeUrl={error?.upgradeUrl} />
        {created && (
          <p class="ok" role="status">
            Created <a href={href({ name: 'repo', repo: created })}>{created}</a>.
          </p>
        )}
      </form>
      <ErrorMessage message={repos.error} />
      {repos.loading && !repos.data && <Loading what="repositories" />}
      {repos.data && repos.data.length === 0 && (
        <Empty>You have no repositories yet. Create one above, or join one with an invite key or import a git bundle below.</Empty>
      )}
      {repos.data && repos.data.length > 0 && (
        <ul class="list" aria-label="Repositories">
          {repos.data.map((r) => (
            <li key={r.id}>
              <a class="title" href={href({ name: 'repo', repo: r.id })}>
                {r.id}
              </a>
              {r.role && <span class="badge">{r.role}</span>}
              <div class="meta">
                <span>
                  {r.page_count} {r.page_count === 1 ? 'page' : 'pages'}
                </span>
                {r.last_commit ? (
                  <span>
                    last change <Change c={r.last_commit} />: {r.last_commit.message}
                  </span>
                ) : (
                  <span>no changes yet</span>
                )}
              </div>
            </li>
          ))}
        </ul>
      )}
      {/* After the list: the repositories come first, in the keyboard order too. */}
      <JoinRepo api={api} onJoined={repos.reload} />
      <ImportForm api={api} onImported={() => repos.reload()} />
    </section>
  );
}

// ---------------------------------------------------------------- one repository

export function RepoView({ api, repo, initialQuery }: { api: Api; repo: string; initialQuery?: string }) {
  const pages = useLoad(async () => (await api.pages(repo)).pages, [api, repo]);
  const [q, setQ] = useState(initialQuery ?? '');
  useEffect(() => setQ(initialQuery ?? ''), [initialQuery]);
  const search = useLoad(
    () => (initialQuery ? api.search({ q: initialQuery, repo, limit: 50 }) : Promise.resolve(null)),
    [api, repo, initialQuery],
  );
  const groups = useMemo(() => groupPages(pages.data ?? []), [pages.data]);
  const metas = usePageMetas(api, repo, pages.data);
  // The snippets' links resolve against the pages at head, as in the page view; until they are known, against none.
  const pageSet = useMemo(() => (pages.data || pages.error ? new Set((pages.data ?? []).map((p) => p.path)) : null), [pages.data, pages.error]);
  const flash = useFlash();

  const submit = (ev: Event) => {
    ev.preventDefault();
    location.hash = href({ name: 'repo', repo, q: q.trim() || undefined });
  };

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo }]} />
      <h1 tabIndex={-1}>{repo}</h1>
      <RepoTabs repo={repo} current="pages" />
      {flash && (
        <p class="ok" role="status">
          {flash}
        </p>
      )}
      <p class="toolbar">
        <a class="button" href={href({ name: 'new', repo })}>
          New page
        </a>
      </p>
      <form class="card inline" role="search" onSubmit={submit}>
        <label for="search">Search pages</label>
        <div class="row">
          <input
            id="search"
            type="search"
            value={q}
            placeholder='words, "a phrase", prefix*, -not'
            onInput={(e) => setQ((e.target as HTMLInputElement).value)}
          />
          <button type="submit">Search</button>
        </div>
      </form>

      {initialQuery && (
        <section class="results" aria-labelledby="results-h">
          <h2 id="results-h">Search results</h2>
          <ErrorMessage message={search.error} />
          {search.loading && <Loading what="results" />}
          {search.data && (
            <>
              <p role="status">
                {search.data.total} {search.data.total === 1 ? 'page matches' : 'pages match'} “{initialQuery}”.{' '}
                <a href={href({ name: 'repo', repo })}>Clear the search</a>
              </p>
              {search.data.results.length === 0 ? (
                <Empty>No page matches. Try fewer words, or a prefix such as stor*.</Empty>
              ) : (
                <ul class="list" aria-label="Search results">
                  {search.data.results.map((r) => (
                    <li key={r.path}>
                      <a class="title" href={href({ name: 'page', repo, path: r.path })}>
                        {r.title || pageName(r.path)}
                      </a>
                      {r.type && <span class="badge">{r.type}</span>}
                      <div class="meta">
                        <code>{r.path}</code>
                      </div>
                      <Snippet snippet={r.snippet} ctx={pageSet ? { repo, path: r.path, pages: pageSet } : undefined} />
                    </li>
                  ))}
                </ul>
              )}
            </>
          )}
        </section>
      )}

      <ErrorMessage message={pages.error} />
      {pages.loading && !pages.data && <Loading what="pages" />}
      {pages.data && pages.data.length === 0 && (
        <div class="empty">
          <p class="flush">This repository has no pages yet. To start it from a project folder, run there:</p>
          <pre class="command">
            <code>kr init --repo {repo}</code>
          </pre>
          <p>
            then write pages and <code>kr push</code> them, or <a href={href({ name: 'new', repo })}>write the first page here</a>.
          </p>
        </div>
      )}
      {groups.map((g) => (
        <section class="group" key={g.type} aria-labelledby={`group-${g.type}`}>
          <h2 id={`group-${g.type}`}>
            {g.label} <span class="count">({g.pages.length})</span>
          </h2>
          <ul class="list">
            {g.pages.map((p) => (
              <li key={p.path}>
                <a class="title" href={href({ name: 'page', repo, path: p.path })}>
                  {metas.get(p.path)?.title ?? pageName(p.path)}
                </a>
                {metas.get(p.path)?.summary && <p class="summary">{metas.get(p.path)!.summary}</p>}
                <div class="meta">
                  <code>{p.path}</code>
                  <span>
                    <Change c={p} />
                  </span>
                </div>
              </li>
            ))}
          </ul>
        </section>
      ))}
    </section>
  );
}

// ---------------------------------------------------------------- one page

export function PageView({ api, repo, path }: { api: Api; repo: string; path: string }) {
  // A fresh view per page: the loaded media and the raw toggle of another page do not carry over.
  return <Page key={`${repo}\n${path}`} api={api} repo={repo} path={path} />;
}

/** Whether a push event names `path` (or may, among the paths it left out), and what it did to it. */
function touches(d: PushEventData, path: string): PushEventData['paths'][number]['status'] | 'maybe' | null {
  return d.paths.find((p) => p.path === path)?.status ?? (d.more ? 'maybe' : null);
}

/**
 * A page, live: it is read once the repository's event stream is open, and a push that changes it meanwhile
 * is announced (ChangedOnServer) with a link to the diff from the version shown to the new one.
 */
function Page({ api, repo, path }: { api: Api; repo: string; path: string }) {
  // The pushes that changed this page since the view opened, oldest first.
  const [changes, setChanges] = useState<PushEventData[]>([]);
  const deleting = useRef(false);
  const live = useRepoEvents(api, repo, {
    push: (d) => {
      if (deleting.current) return; // this view's own deletion: it leaves the page
      const status = touches(d, path);
      if (status === 'maybe') {
        // The push listed 200 paths and counted the rest: whether this page is among them, its history says.
        api.history(repo, path, 1).then(
          ({ commits: h }) => h[0]?.sha === d.sha && setChanges((c) => [...c, d]),
          () => undefined,
        );
      } else if (status) setChanges((c) => [...c, d]);
    },
  });
  const page = useLoad(() => api.readPage(repo, path), [api, repo, path, live.epoch], live.ready);
  const pages = useLoad(async () => (await api.pages(repo)).pages, [api, repo, live.epoch]);
  const history = useLoad(async () => (await api.history(repo, path, 200)).commits, [api, repo, path, live.epoch], live.ready);
  const merges = useMergedCommits(api, repo, path, history.data, changes);
  const [raw, setRaw] = useState(false);
  const [copied, setCopied] = useState<string>();
  const [deleteError, setDeleteError] = useState<string>();
  const flash = useFlash();
  const parsed = useMemo(() => (page.data ? splitFrontmatter(page.data.content) : null), [page.data]);
  const meta = useMemo<PageMeta>(
    () => (page.data ? rememberMeta(api.baseUrl, repo, path, page.data.sha, page.data.content) : {}),
    [api, repo, path, page.data],
  );
  // Links resolve against the pages at head; until they are known (or if they cannot be), against none.
  const pageSet = useMemo(() => (pages.data || pages.error ? new Set((pages.data ?? []).map((p) => p.path)) : null), [pages.data, pages.error]);
  const ctx = useMemo(() => (pageSet ? { repo, path, pages: pageSet } : undefined), [repo, path, pageSet]);
  const draft = useMemo(() => loadDraft(api.baseUrl, repo, path), [api, repo, path]);

  const copy = async () => {
    const link = location.href;
    try {
      await navigator.clipboard.writeText(link);
      setCopied('Link copied.');
    } catch {
      setCopied(`Copy this link: ${link}`);
    }
  };

  const remove = async (): Promise<boolean> => {
    if (!page.data) return false;
    setDeleteError(undefined);
    deleting.current = true;
    try {
      const answer = await api.push(repo, { message: `Delete ${meta.title ?? pageName(path)}`, merge: 'sections', files: [{ path, delete: true, parent_sha: page.data.sha }] });
      if (!answer.ok) {
        const c = answer.data.conflicts[0];
        setDeleteError(
          `Not deleted: the page changed since you opened it${c ? ` (it is now at ${shortSha(c.current_sha)})` : ''}. Reload it, read the change, and delete it then if you still want to.`,
        );
        deleting.current = false;
        return false;
      }
      setFlash(`Deleted ${path}.`);
      location.hash = href({ name: 'repo', repo });
      return true;
    } catch (e) {
      deleting.current = false;
      setDeleteError(`Not deleted: ${errorText(e)}`);
      return false;
    }
  };

  // What changed on the server since the version shown (everything, when the page was not there).
  const settled = page.data !== undefined || page.error !== undefined;
  const pending = settled ? changesSince(changes, page.data?.sha ?? null) : [];
  const showNew = () => {
    page.reload();
    history.reload();
  };

  const commits = history.data ?? [];
  const title = meta.title ?? pageName(path);
  return (
    <section>
      <Crumbs
        items={[
          { label: 'Repositories', to: '#/' },
          { label: repo, to: href({ name: 'repo', repo }) },
          { label: title },
        ]}
      />
      <h1 tabIndex={-1}>{page.data || page.error ? title : pageName(path)}</h1>
      {meta.summary && <p class="summary lead">{meta.summary}</p>}
      <p class="meta">
        <code>{path}</code>
      </p>
      {flash && (
        <p class="ok" role="status">
          {flash}
        </p>
      )}
      <LiveNote live={live} />
      {pending.length > 0 && <ChangedOnServer repo={repo} path={path} shown={page.data?.sha ?? null} pending={pending} onShow={showNew} />}
      {draft && (
        <p class="note">
          You have unsaved changes to this page in this browser (from {showTime(new Date(draft.savedAt).toISOString())}).{' '}
          <a href={href({ name: 'edit', repo, path })}>Continue editing</a>
        </p>
      )}
      <div class="toolbar" role="group" aria-label="Page view">
        <button type="button" aria-pressed={!raw} onClick={() => setRaw(false)}>
          Rendered
        </button>
        <button type="button" aria-pressed={raw} onClick={() => setRaw(true)}>
          Raw
        </button>
        <button type="button" onClick={copy}>
          Copy link
        </button>
        {page.data && (
          <a class="button" href={href({ name: 'edit', repo, path })}>
            Edit
          </a>
        )}
        {commits.length > 1 && <a href={href({ name: 'diff', repo, path })}>Last change</a>}
        {commits.length > 0 && <a href={href({ name: 'evolution', repo, path })}>Evolution</a>}
      </div>
      {copied && (
        <p class="ok" role="status">
          {copied}
        </p>
      )}
      <ErrorMessage message={page.error} />
      {page.loading && !page.data && <Loading what="the page" />}
      {page.data && parsed && (
        <>
          {parsed.frontmatterError && <p class="error">The frontmatter could not be read: {parsed.frontmatterError}</p>}
          {parsed.frontmatter && Object.keys(parsed.frontmatter).length > 0 && (
            <div class="scroll">
              <table class="frontmatter">
                <caption>Frontmatter</caption>
                <tbody>
                  {Object.entries(parsed.frontmatter).map(([k, v]) => (
                    <tr key={k}>
                      <th scope="row">{k}</th>
                      <td>{showValue(v)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          {raw ? (
            <pre class="raw" aria-label="Raw page text">
              <code>{page.data.content}</code>
            </pre>
          ) : parsed.body.trim() === '' ? (
            <Empty>This page has no text besides its frontmatter.</Empty>
          ) : !ctx ? (
            <Loading what="the page's links" />
          ) : (
            <Markdown text={parsed.body} ctx={ctx} />
          )}
        </>
      )}

      <LinkedFrom api={api} repo={repo} path={path} sha={page.data?.sha} />

      <section aria-labelledby="history-h">
        <h2 id="history-h">History</h2>
        <ErrorMessage message={history.error} />
        {history.loading && !history.data && <Loading what="history" />}
        {history.data && commits.length === 0 && <Empty>No commit has touched this page.</Empty>}
        {commits.length > 0 && (
          <ol class="list history">
            {commits.map((c, i) => {
              const prev = commits[i + 1];
              return (
                <li key={c.sha}>
                  <a class="title" href={href({ name: 'diff', repo, path, from: prev?.sha, to: c.sha })}>
                    {c.message}
                  </a>
                  <div class="meta">
                    <code title={c.sha}>{shortSha(c.sha)}</code>
                    <Change c={c} />
                    {prev ? <span>changed the page</span> : <span>created the page</span>}
                    {merges.has(c.sha) && (
                      <span class="badge merged" title="Written on top of changes made meanwhile, merged section by section">
                        merged
                      </span>
                    )}
                  </div>
                </li>
              );
            })}
          </ol>
        )}
        {commits.some((c) => merges.has(c.sha)) && (
          <p class="hint">Merged: the change was saved on top of changes made meanwhile, and merged with them section by section.</p>
        )}
      </section>

      {page.data && (
        <section aria-labelledby="delete-h" class="danger">
          <h2 id="delete-h">Delete this page</h2>
          <p class="hint">Deleting is a commit like any other: the page stays in the history, and can be written again.</p>
          <ErrorMessage message={deleteError} />
          <ConfirmButton
            label="Delete page"
            what={path}
            question={`Delete ${path}? It disappears from the repository at once (its history stays).`}
            confirmLabel="Yes, delete"
            onConfirm={remove}
          />
        </section>
      )}
    </section>
  );
}

/**
 * A push changed the page shown: who, and a link to the diff from the version shown to the new one (a page
 * that was missing, or is now deleted, has no such diff), and a button to show the new version.
 */
function ChangedOnServer(props: { repo: string; path: string; shown: string | null; pending: PushEventData[]; onShow: () => void }) {
  const { repo, path, shown, pending } = props;
  const last = pending[pending.length - 1]!;
  const deleted = last.paths.find((p) => p.path === path)?.status === 'deleted';
  const by = nameList(pending.map((c) => c.author || c.email));
  const merged = pending.some((c) => c.merged?.includes(path));
  const what = deleted ? 'This page was deleted on the server' : shown === null ? 'This page is now on the server' : 'This page changed on the server';
  return (
    <div class="note changed" role="status">
      <p class="flush">
        {what} (by {by}){merged ? ', merged section by section with changes made meanwhile' : ''}.
      </p>
      {!deleted && (
        <div class="row">
          {shown !== null && <a href={href({ name: 'diff', repo, path, from: shown, to: last.sha })}>See what changed</a>}
          <button type="button" class="inline-action" onClick={props.onShow}>
            Show the new version
          </button>
        </div>
      )}
    </div>
  );
}

/** Activity events read, newest first, looking for a page's merges: the feed keeps its newest 1,000. */
const MERGE_SCAN = [100, 400, 500];
/** Seconds an activity event may be recorded before its commit's time (clocks of one server; a margin). */
const CLOCK_SLACK_S = 60;

/**
 * The commits of a page's history that a section merge wrote, by their `sha` in the activity feed (a push's
 * `detail.merged` names the pages it merged), plus those announced live. The feed is read back only as far as
 * the oldest commit shown; merges older than the feed's retention, or pushed with the legacy key, are not known.
 */
function useMergedCommits(api: Api, repo: string, path: string, commits: Commit[] | undefined, live: PushEventData[]): Set<string> {
  const found = useLoad(async () => {
    const shas = new Set<string>();
    if (!commits || commits.length === 0) return shas;
    const oldest = Date.parse(commits[commits.length - 1]!.time) / 1000 - CLOCK_SLACK_S;
    let offset = 0;
    for (const limit of MERGE_SCAN) {
      const { events, total } = await api.activity(repo, { limit, offset });
      for (const e of events) if (e.action === 'push' && e.sha && stringList(e.detail?.merged).includes(path)) shas.add(e.sha);
      offset += events.length;
      const last = events[events.length - 1];
      if (!last || offset >= total || last.created_at < oldest) break;
    }
    return shas;
  }, [api, repo, path, commits]);
  return useMemo(() => {
    const all = new Set(found.data);
    for (const d of live) if (d.merged?.includes(path)) all.add(d.sha);
    return all;
  }, [found.data, live, path]);
}

/** The pages that link here, from the links route (API.md "Links between pages"); `sha`: the version shown. */
function LinkedFrom({ api, repo, path, sha }: { api: Api; repo: string; path: string; sha: string | undefined }) {
  const links = useLoad<LinksResponse | null>(async () => (sha === undefined ? null : api.links(repo, path)), [api, repo, path, sha]);
  const data = links.data;
  if (sha === undefined) return null;
  const more = data?.incoming_more ?? 0;
  return (
    <section aria-labelledby="linked-h" class="linked">
      <h2 id="linked-h">Linked from</h2>
      <ErrorMessage message={links.error} />
      {links.loading && !data && <Loading what="the pages that link here" />}
      {data && data.incoming.length === 0 && <Empty>No page links here.</Empty>}
      {data && data.incoming.length > 0 && (
        <ul class="list" aria-label="Pages that link here">
          {data.incoming.map((l) => (
            <li key={l.path}>
              <a class="title" href={href({ name: 'page', repo, path: l.path })}>
                {l.title || pageName(l.path)}
              </a>
              <div class="meta">
                <code>{l.path}</code>
              </div>
            </li>
          ))}
        </ul>
      )}
      {more > 0 && (
        <p class="hint">
          And {more} more {more === 1 ? 'page links' : 'pages link'} here: the first {data!.incoming.length} by path are listed.
        </p>
      )}
    </section>
  );
}

// ---------------------------------------------------------------- diff

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

/** A search result's snippet: matches marked, links as in the page view (content.ts renderSnippet). */
function Snippet({ snippet, ctx }: { snippet: string; ctx?: RenderContext }) {
  const html = useMemo(() => renderSnippet(snippet, ctx), [snippet, ctx?.repo, ctx?.path, ctx?.pages]);
  return <p class="snippet" dangerouslySetInnerHTML={{ __html: html }} />;
}

// ---------------------------------------------------------------- search across repositories

/** Results of the header's search box: every repository the user belongs to (GET /v1/search). */
export function SearchView({ api, q }: { api: Api; q: string }) {
  const query = q.trim();
  const results = useLoad(() => (query ? api.search({ q: query, limit: 50 }) : Promise.resolve(null)), [api, query]);
  // Each repository's pages at head, for the links in its snippets (a repository whose pages cannot be read: none).
  const repoIds = [...new Set((results.data?.results ?? []).map((r) => r.repo_id))].sort();
  const sets = useLoad(
    async () =>
      new Map(
        await Promise.all(
          repoIds.map(async (id) => [id, new Set((await api.pages(id).then((r) => r.pages).catch(() => [])).map((p) => p.path))] as const),
        ),
      ),
    [api, repoIds.join('\n')],
  );
  const pageSets: Map<string, ReadonlySet<string>> | undefined = sets.data;
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Search' }]} />
      <h1 tabIndex={-1}>{query ? `Search: ${query}` : 'Search'}</h1>
      {!query && <Empty>Type words in the search box at the top to search the pages of every repository you belong to.</Empty>}
      <ErrorMessage message={results.error} />
      {results.loading && query && <Loading what="results" />}
      {results.data && (
        <>
          <p role="status">
            {results.data.total} {results.data.total === 1 ? 'page matches' : 'pages match'} “{query}” across your repositories.
          </p>
          {results.data.results.length === 0 ? (
            <Empty>No page matches. Try fewer words, or a prefix such as stor*.</Empty>
          ) : (
            <ul class="list" aria-label="Search results">
              {results.data.results.map((r) => (
                <li key={`${r.repo_id}\n${r.path}`}>
                  <a class="title" href={href({ name: 'page', repo: r.repo_id, path: r.path })}>
                    {r.title || pageName(r.path)}
                  </a>
                  <span class="badge">{r.repo_id}</span>
                  {r.type && <span class="badge">{r.type}</span>}
                  <div class="meta">
                    <code>{r.path}</code>
                  </div>
                  <Snippet snippet={r.snippet} ctx={pageSets?.has(r.repo_id) ? { repo: r.repo_id, path: r.path, pages: pageSets.get(r.repo_id)! } : undefined} />
                </li>
              ))}
            </ul>
          )}
        </>
      )}
    </section>
  );
}
