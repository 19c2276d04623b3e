import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { Api, ApiError, capabilitiesOf, type Capabilities, type ServerInfo } from './api.ts';
import { loadConfig, type DashboardConfig } from './config.ts';
import { beginSignIn, completeSignIn, isCallback } from './oidc.ts';
import { href, parseRoute, type Route } from './route.ts';
import { clearSession, loadSession, saveSession, type Session } from './session.ts';
import { ErrorMessage, Loading, errorText } from './ui.tsx';
import { DiffView, PageView, RepoView, ReposView, SearchView } from './views.tsx';
import { TeamView, TokensView } from './team.tsx';
import { SettingsView } from './settings.tsx';
import { ActivityView, EvolutionView } from './activity.tsx';
import { AdminView, BillingView } from './hosted.tsx';
import { CliLoginView } from './cli-login.tsx';
import { forgetMetas } from './titles.ts';

type EditorViews = typeof import('./editor.tsx');
let editorViews: Promise<EditorViews> | undefined;

/** The editor's views, loaded on first use (with CodeMirror after them): reading never downloads them. */
function Lazy({ render }: { render: (m: EditorViews) => preact.ComponentChildren }) {
  const [views, setViews] = useState<EditorViews>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    editorViews ??= import('./editor.tsx');
    editorViews.then(
      (m) => live && setViews(m),
      (e: unknown) => {
        editorViews = undefined;
        if (live) setError(`The editor could not be loaded: ${errorText(e)} Reload the page to try again.`);
      },
    );
    return () => {
      live = false;
    };
  }, []);
  // The view's heading takes the focus once it is there, as with every other view (Routed).
  useLayoutEffect(() => {
    if (views) document.getElementById('app')?.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  }, [views]);
  if (error) return <ErrorMessage message={error} />;
  return views ? <>{render(views)}</> : <Loading what="the editor" />;
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', on);
    // The address may have changed between the first render and this subscription (e.g. right after sign-in).
    on();
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

export function App() {
  const [config, setConfig] = useState<DashboardConfig>();
  const [configError, setConfigError] = useState<string>();
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [notice, setNotice] = useState<string>();
  const [finishing, setFinishing] = useState(() => isCallback(location.hash));

  const api = useMemo(() => (config && session ? new Api(config.apiUrl, session.token) : null), [config, session]);

  useEffect(() => {
    loadConfig().then(setConfig, (e: unknown) => setConfigError(errorText(e)));
  }, []);

  // Back from the identity provider: check state and nonce, then trade the ID token for a session.
  useEffect(() => {
    if (!config || !finishing) return;
    const hash = location.hash;
    history.replaceState(null, '', `${location.pathname}${location.search}#/`);
    let returnTo = '#/';
    (async () => {
      const answer = completeSignIn(hash);
      returnTo = answer.returnTo;
      const { access_token, user } = await new Api(config.apiUrl, null).signIn(answer.idToken);
      const s: Session = { token: access_token, user, via: 'oidc' };
      saveSession(s);
      setSession(s);
    })()
      .catch((e: unknown) => setNotice(errorText(e)))
      .finally(() => {
        setFinishing(false);
        if (returnTo !== '#/') location.hash = returnTo;
      });
  }, [config, finishing]);

  if (configError) return <Shell>{<ErrorMessage message={configError} />}</Shell>;
  if (!config || finishing) return <Shell>{<Loading what={finishing ? 'your sign-in' : 'the dashboard'} />}</Shell>;

  const signOut = (why?: string) => {
    clearSession();
    forgetMetas();
    setSession(null);
    setNotice(why);
  };

  if (!session || !api) {
    return (
      <Shell>
        <SignIn
          config={config}
          notice={notice}
          onSignedIn={(s) => {
            saveSession(s);
            setNotice(undefined);
            setSession(s);
          }}
        />
      </Shell>
    );
  }
  return <SignedIn session={session} api={api} onSignOut={signOut} />;
}

/**
 * The signed-in dashboard. One GET /v1/me per token: a revoked or expired token goes back to sign-in with the
 * reason (instead of an error on every view), and its `server.hosted` and `admin` decide which views exist.
 */
function SignedIn({ session, api, onSignOut }: { session: Session; api: Api; onSignOut: (why?: string) => void }) {
  const [server, setServer] = useState<ServerInfo>({});
  useEffect(() => {
    let live = true;
    setServer({});
    api.me().then(
      (me) => live && setServer({ caps: capabilitiesOf(me) }),
      (e: unknown) => {
        if (!live) return;
        if (e instanceof ApiError && e.status === 401) onSignOut(`Your sign-in is no longer valid: ${errorText(e)}`);
        else setServer({ error: errorText(e) });
      },
    );
    return () => {
      live = false;
    };
  }, [api]);
  return (
    <Shell session={session} caps={server.caps} onSignOut={() => onSignOut()}>
      <Routed api={api} server={server} />
    </Shell>
  );
}

function Shell({ children, session, caps, onSignOut }: { children: preact.ComponentChildren; session?: Session; caps?: Capabilities; onSignOut?: () => void }) {
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">
          kr
        </a>
        {session && (
          <nav class="site" aria-label="Site">
            <a href="#/">Repositories</a>
            <a href="#/tokens">Access tokens</a>
            {caps?.hosted && <a href="#/billing">Plan and billing</a>}
            {caps?.admin && <a href="#/admin">Admin</a>}
          </nav>
        )}
        {session && <SiteSearch />}
        {session && (
          <div class="who">
            <span class="user" title={session.user.email}>
              {session.user.name || session.user.email}
            </span>
            <button type="button" onClick={onSignOut}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main>{children}</main>
    </>
  );
}

/** The header's search box: every repository the user belongs to (the results view is #/search?q=). */
function SiteSearch() {
  const route = useRoute();
  const [q, setQ] = useState(route.name === 'search' ? route.q : '');
  useEffect(() => {
    if (route.name === 'search') setQ(route.q);
  }, [route]);
  return (
    <form
      class="site-search"
      role="search"
      aria-label="Every repository"
      onSubmit={(ev) => {
        ev.preventDefault();
        if (q.trim()) location.hash = href({ name: 'search', q: q.trim() });
      }}
    >
      <label for="site-search" class="sr-only">
        Search every repository
      </label>
      <input id="site-search" type="search" value={q} placeholder="Search every repository" onInput={(e) => setQ((e.target as HTMLInputElement).value)} />
    </form>
  );
}

function Routed({ api, server }: { api: Api; server: ServerInfo }) {
  const route = useRoute();
  // In the same task as the new view appears, so a key pressed at once lands on the view, not the old focus.
  useLayoutEffect(() => {
    document.getElementById('app')?.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  }, [route]);
  switch (route.name) {
    case 'repos':
      return <ReposView api={api} />;
    case 'search':
      return <SearchView api={api} q={route.q} />;
    // Keyed: nothing another repository or page loaded (its pages, its history) is ever asked of this one.
    case 'repo':
      return <RepoView key={route.repo} api={api} repo={route.repo} initialQuery={route.q} />;
    case 'page':
      return <PageView api={api} repo={route.repo} path={route.path} />;
    case 'edit':
      return <Lazy render={(m) => <m.EditView api={api} repo={route.repo} path={route.path} title={route.title} />} />;
    case 'new':
      return <Lazy render={(m) => <m.NewPageView api={api} repo={route.repo} type={route.type} slug={route.slug} />} />;
    case 'settings':
      return <SettingsView api={api} repo={route.repo} />;
    case 'diff':
      return <DiffView key={`${route.repo}\n${route.path}`} api={api} repo={route.repo} path={route.path} from={route.from} to={route.to} />;
    case 'evolution':
      return <EvolutionView key={`${route.repo}\n${route.path}`} api={api} repo={route.repo} path={route.path} />;
    case 'team':
      return <TeamView api={api} repo={route.repo} server={server} />;
    case 'activity':
      return <ActivityView api={api} repo={route.repo} />;
    case 'tokens':
      return <TokensView api={api} />;
    case 'billing':
      return <BillingView api={api} server={server} />;
    case 'admin':
      return <AdminView api={api} server={server} />;
    case 'cliLogin':
      return <CliLoginView api={api} port={route.port} state={route.state} hostname={route.hostname} />;
    case 'notFound':
      return (
        <section>
          <h1 tabIndex={-1}>Not found</h1>
          <p>
            Nothing lives at this address. <a href="#/">Back to your repositories</a>.
          </p>
        </section>
      );
  }
}

function SignIn({ config, notice, onSignedIn }: { config: DashboardConfig; notice?: string; onSignedIn: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const oidc = config.oidcIssuer && config.oidcClientId ? { issuer: config.oidcIssuer, clientId: config.oidcClientId } : null;

  const withToken = async (ev: Event) => {
    ev.preventDefault();
    const t = token.trim();
    if (!t) {
      setError('Paste an access token first.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const user = await new Api(config.apiUrl, t).me();
      onSignedIn({ token: t, user, via: 'token' });
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  const withProvider = async () => {
    if (!oidc) return;
    setBusy(true);
    setError(undefined);
    try {
      const here = location.hash && !isCallback(location.hash) ? location.hash : '#/';
      location.assign(await beginSignIn(oidc.issuer, oidc.clientId, here));
    } catch (e) {
      setError(errorText(e));
      setBusy(false);
    }
  };

  return (
    <section class="signin">
      <h1 tabIndex={-1}>Sign in</h1>
      <ErrorMessage message={notice} />
      <ErrorMessage message={error} />
      {oidc && (
        <div class="card">
          <p>Sign in with your organisation's account.</p>
          <button type="button" class="primary" onClick={withProvider} disabled={busy}>
            Sign in with OpenID Connect
          </button>
          <p class="hint">Provider: {oidc.issuer}</p>
        </div>
      )}
      <form class="card" onSubmit={withToken}>
        <label for="token">Access token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={token}
          onInput={(e) => setToken((e.target as HTMLInputElement).value)}
          placeholder="krp_…"
        />
        <p class="hint">
          A personal access token (<code>kr pats create</code>, or <code>npm run admin -- token &lt;email&gt;</code> on the
          server). It is kept for this tab only.
        </p>
        <button type="submit" disabled={busy}>
          Sign in with a token
        </button>
      </form>
      <p class="hint">Server: {config.apiUrl}</p>
    </section>
  );
}
