import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { Api } from './api.ts';
import { loadConfig, type DashboardConfig } from './config.ts';
import { beginSignIn, completeSignIn, isCallback } from './oidc.ts';
import { parseRoute, type Route } from './route.ts';
import { clearSession, loadSession, saveSession, type Session } from './session.ts';
import { ErrorMessage, Loading, errorText, useLoad } from './ui.tsx';
import { DiffView, PageView, RepoView, ReposView } from './views.tsx';
import { TeamView, TokensView } from './team.tsx';
import { ActivityView, EvolutionView } from './activity.tsx';
import { AdminView, BillingView } from './hosted.tsx';
import { CliLoginView } from './cli-login.tsx';

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
      const { access_token, user } = await new Api(config.apiUrl, null).exchangeIdToken(answer.idToken);
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
  return (
    <Shell session={session} api={api} onSignOut={() => signOut()}>
      <Routed api={api} onUnauthorized={signOut} />
    </Shell>
  );
}

/** What this server offers the signed-in user: billing on the hosted build (404 elsewhere), the admin page for admins. */
function useCapabilities(api: Api | undefined): { hosted: boolean; admin: boolean } {
  const caps = useLoad(
    async () => {
      if (!api) return { hosted: false, admin: false };
      const ok = (p: Promise<unknown>) => p.then(() => true, () => false);
      const [hosted, admin] = await Promise.all([ok(api.billing()), ok(api.adminStats())]);
      return { hosted, admin };
    },
    [api],
  );
  return caps.data ?? { hosted: false, admin: false };
}

function Shell({ children, session, api, onSignOut }: { children: preact.ComponentChildren; session?: Session; api?: Api; onSignOut?: () => void }) {
  const caps = useCapabilities(api);
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
            {caps.hosted && <a href="#/billing">Plan and billing</a>}
            {caps.admin && <a href="#/admin">Admin</a>}
          </nav>
        )}
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

function Routed({ api, onUnauthorized }: { api: Api; onUnauthorized: (why: string) => void }) {
  const route = useRoute();
  // A revoked or expired token: back to sign-in with the reason, instead of an error on every view.
  useEffect(() => {
    api.me().catch((e: unknown) => {
      if ((e as { status?: number }).status === 401) onUnauthorized(`Your sign-in is no longer valid: ${errorText(e)}`);
    });
  }, [api]);
  // In the same task as the new view appears, so a key pressed at once lands on the view, not the old focus.
  useLayoutEffect(() => {
    document.getElementById('app')?.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
  }, [route]);
  switch (route.name) {
    case 'repos':
      return <ReposView api={api} />;
    case 'repo':
      return <RepoView api={api} repo={route.repo} initialQuery={route.q} />;
    case 'page':
      return <PageView api={api} repo={route.repo} path={route.path} />;
    case 'diff':
      return <DiffView api={api} repo={route.repo} path={route.path} from={route.from} to={route.to} />;
    case 'evolution':
      return <EvolutionView api={api} repo={route.repo} path={route.path} />;
    case 'team':
      return <TeamView api={api} repo={route.repo} />;
    case 'activity':
      return <ActivityView api={api} repo={route.repo} />;
    case 'tokens':
      return <TokensView api={api} />;
    case 'billing':
      return <BillingView api={api} />;
    case 'admin':
      return <AdminView api={api} />;
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
