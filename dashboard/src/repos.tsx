/** The list of the user's repositories, with joining one by invite key and importing one from a git bundle. */
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { JoinRepo } from './team.tsx';
import { href } from './route.ts';
import { Change, Empty, ErrorMessage, Loading, problemOf, useFlash, useLoad, type Problem } from './ui.tsx';

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
