/**
 * A repository's settings (#/repo/<id>/settings): its webhooks (dashboard/src/webhooks.tsx), its export (a git
 * bundle of the whole history) and, for owners, its deletion (docs/api.md "Repositories", the delete route): export offered first, then the repository's id typed
 * to confirm, then `DELETE /v1/repos/:id?confirm=<id>`. There is no undo.
 */
import { useRef, useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { href } from './route.ts';
import { Crumbs, ErrorMessage, Loading, errorText, setFlash, useLoad } from './ui.tsx';
import { RepoTabs } from './views.tsx';
import { WebhooksPanel } from './webhooks.tsx';

export function SettingsView({ api, repo }: { api: Api; repo: string }) {
  return <Settings key={repo} api={api} repo={repo} />;
}

function Settings({ api, repo }: { api: Api; repo: string }) {
  // The role comes with the repository list: a non-owner is never offered what the server would refuse.
  const role = useLoad(async () => (await api.repos()).repos.find((r) => r.id === repo)?.role ?? null, [api, repo]);
  const [exportState, setExportState] = useState<{ busy?: boolean; done?: string; error?: string }>({});
  const [typed, setTyped] = useState('');
  const [deleting, setDeleting] = useState(false);
  const [deleteError, setDeleteError] = useState<string>();
  const confirmField = useRef<HTMLInputElement>(null);
  const owner = role.data === 'owner';
  const matches = typed.trim() === repo;

  const download = async () => {
    setExportState({ busy: true });
    try {
      const blob = new Blob([await api.exportRepo(repo)], { type: 'application/x-git-bundle' });
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `${repo}.bundle`;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      setExportState({ done: `Downloaded ${repo}.bundle (${Math.max(1, Math.round(blob.size / 1024))} KiB): git clone ${repo}.bundle restores every page and the whole history.` });
    } catch (e) {
      setExportState({ error: `The export could not be made: ${errorText(e)}` });
    }
  };

  const remove = async (ev: Event) => {
    ev.preventDefault();
    if (!matches) {
      setDeleteError(`Type ${repo} exactly to confirm.`);
      confirmField.current?.focus();
      return;
    }
    setDeleting(true);
    setDeleteError(undefined);
    try {
      await api.deleteRepo(repo, typed.trim());
      setFlash(`Deleted the repository ${repo}, its pages and their history.`);
      location.hash = href({ name: 'repos' });
    } catch (e) {
      setDeleteError(`Not deleted: ${errorText(e)}`);
      setDeleting(false);
    }
  };

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'Settings' }]} />
      <h1 tabIndex={-1}>Settings of {repo}</h1>
      <RepoTabs repo={repo} current="settings" />
      <ErrorMessage message={role.error} />
      {role.loading && role.data === undefined && <Loading what="your role" />}
      {role.data !== undefined && !owner && (
        <p class="hint">
          {role.data === 'member' ? 'You are a member of this repository. ' : ''}Only an owner can export or delete it.
        </p>
      )}
      {role.data !== undefined && role.data !== null && <WebhooksPanel api={api} repo={repo} owner={owner} />}
      {owner && (
        <>
          <section class="card" aria-labelledby="export-h">
            <h2 id="export-h" class="flush">
              Export
            </h2>
            <p>A git bundle of the repository: every page and its whole history, to keep or to move elsewhere.</p>
            <button type="button" onClick={download} disabled={exportState.busy}>
              {exportState.busy ? 'Preparing the export…' : 'Download the export'}
            </button>
            {exportState.done && (
              <p class="ok" role="status">
                {exportState.done}
              </p>
            )}
            <ErrorMessage message={exportState.error} />
          </section>
          <section class="card danger" aria-labelledby="delete-repo-h">
            <h2 id="delete-repo-h" class="flush">
              Delete this repository
            </h2>
            <p>
              Deleting removes every page, the whole history, the members, the invite keys and the activity of <strong>{repo}</strong>,
              at once and for good: there is no undo. Download the export above first if you may want any of it back.
            </p>
            <form onSubmit={remove}>
              <label for="confirm-delete">Type {repo} to confirm</label>
              <div class="row">
                <input
                  id="confirm-delete"
                  ref={confirmField}
                  class="mono"
                  value={typed}
                  autoComplete="off"
                  spellcheck={false}
                  aria-describedby="confirm-delete-hint"
                  onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
                />
                <button type="submit" class="danger-button" disabled={deleting} aria-disabled={!matches ? 'true' : undefined}>
                  {deleting ? 'Deleting…' : 'Delete repository'}
                </button>
              </div>
              <p class="hint" id="confirm-delete-hint">
                The button works once the field says exactly <code>{repo}</code>.
              </p>
              <ErrorMessage message={deleteError} />
            </form>
          </section>
        </>
      )}
    </section>
  );
}
