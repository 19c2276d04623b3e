/**
 * `kr login --browser`: the CLI listens on 127.0.0.1:<port> and opens
 * `/cli-login?port=&state=&hostname=`. The signed-in user sees who they are, which computer asks, and what
 * token will be made; Allow mints a personal access token labelled with the hostname and hands it to
 * `http://127.0.0.1:<port>/callback` in the body of a form POST (`state`, `token`), so the token is never in
 * an address: not in the browser's history, not in a log of URLs; Cancel posts `error=denied` there, so the
 * CLI stops waiting. Bad parameters are refused before anything is minted; the tab only ever goes to the
 * literal loopback address.
 */
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import { Crumbs, ErrorMessage, Loading, errorText, useLoad } from './ui.tsx';

/** The expiries offered, in days (the API takes 1 to 366). */
export const EXPIRY_CHOICES = [30, 90, 180, 366] as const;
export const DEFAULT_EXPIRY_DAYS = 90;
/** Characters of the hostname kept (the PAT label is `kr CLI on <hostname>`, at most 200 characters). */
export const HOSTNAME_MAX = 100;

const STATE = /^[A-Za-z0-9_-]{16,128}$/;
// Control characters, and the bidirectional overrides that could make a name read as another.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export interface CliLoginParams {
  port: number;
  state: string;
  hostname: string;
  label: string;
}

/** The link's parameters checked: the values to use, or the reasons to refuse. */
export function checkParams(raw: { port: string; state: string; hostname: string }): { ok: CliLoginParams } | { problems: string[] } {
  const problems: string[] = [];
  const port = /^[0-9]{1,5}$/.test(raw.port) ? Number(raw.port) : NaN;
  if (!(port >= 1024 && port <= 65535)) {
    problems.push(raw.port === '' ? 'It names no port.' : 'Its port is not a whole number from 1024 to 65535.');
  }
  if (!STATE.test(raw.state)) {
    problems.push(raw.state === '' ? 'It carries no state.' : 'Its state is not 16 to 128 letters, digits, "_" or "-".');
  }
  let hostname = raw.hostname.replace(UNSAFE, '?').trim();
  if (hostname === '') problems.push('It names no computer (hostname).');
  if ([...hostname].length > HOSTNAME_MAX) hostname = `${[...hostname].slice(0, HOSTNAME_MAX - 1).join('')}…`;
  if (problems.length > 0) return { problems };
  return { ok: { port, state: raw.state, hostname, label: `kr CLI on ${hostname}` } };
}

/** Where the answer is posted: the literal loopback address, never another host. */
export function callbackUrl(p: { port: number }): string {
  return `http://127.0.0.1:${p.port}/callback`;
}

/** Posts the answer to the waiting CLI: a form built here (no query string), submitted as the tab's navigation. */
function handOver(p: { port: number; state: string }, answer: { token: string } | { error: 'denied' }): void {
  const form = document.createElement('form');
  form.method = 'post';
  form.action = callbackUrl(p);
  form.hidden = true;
  for (const [name, value] of Object.entries({ state: p.state, ...answer })) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  form.submit();
}

const framed = (): boolean => {
  try {
    return window.top !== window.self;
  } catch {
    return true;
  }
};

export function CliLoginView({ api, port, state, hostname }: { api: Api; port: string; state: string; hostname: string }) {
  const checked = checkParams({ port, state, hostname });
  const crumbs = <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Command-line sign-in' }]} />;
  if ('problems' in checked || framed()) {
    const problems = 'problems' in checked ? checked.problems : ['It was opened inside another page.'];
    return (
      <section>
        {crumbs}
        <h1 tabIndex={-1}>This command-line sign-in link is not valid</h1>
        <div class="error" role="alert">
          <p>The link that opened this page cannot be used, so no access token was created:</p>
          <ul>
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        </div>
        <p>
          Run <code>kr login --browser</code> again and use the page it opens. <a href="#/">Back to your repositories</a>.
        </p>
      </section>
    );
  }
  return <Confirm api={api} params={checked.ok} crumbs={crumbs} />;
}

function Confirm({ api, params, crumbs }: { api: Api; params: CliLoginParams; crumbs: preact.JSX.Element }) {
  const me = useLoad(() => api.me(), [api]);
  const [days, setDays] = useState<number>(DEFAULT_EXPIRY_DAYS);
  const [phase, setPhase] = useState<'ask' | 'minting' | 'sent' | 'cancelled'>('ask');
  const [error, setError] = useState<string>();

  const allow = async () => {
    setPhase('minting');
    setError(undefined);
    try {
      const { token } = await api.createPat({ label: params.label, expires_in_days: days });
      setPhase('sent');
      handOver(params, { token });
    } catch (e) {
      setError(`No token was created: ${errorText(e)}`);
      setPhase('ask');
    }
  };
  const cancel = () => {
    setPhase('cancelled');
    handOver(params, { error: 'denied' });
  };

  const who = me.data ? (me.data.name ? `${me.data.name} (${me.data.email})` : me.data.email) : undefined;
  const busy = phase !== 'ask';
  return (
    <section class="cli-login">
      {crumbs}
      <h1 tabIndex={-1}>Sign in the command line on {params.hostname}</h1>
      <div class="card">
        <p>
          The <code>kr</code> command line on the computer <strong>{params.hostname}</strong> asks to work as you on{' '}
          <code>{api.baseUrl}</code>.
        </p>
        {me.loading && !me.data ? <Loading what="your account" /> : null}
        <ErrorMessage message={me.error} />
        {who && (
          <p>
            Signed in as <strong>{who}</strong>.
          </p>
        )}
        <p>
          Allowing creates a personal access token labelled <strong>{params.label}</strong> and hands it to the command
          waiting on this computer (<code>127.0.0.1:{params.port}</code>). It can do anything you can, until it expires or
          you revoke it under <a href="#/tokens">Access tokens</a>.
        </p>
        <label for="cli-login-expiry">Token expires in</label>
        <select id="cli-login-expiry" value={String(days)} disabled={busy} onChange={(e) => setDays(Number((e.target as HTMLSelectElement).value))}>
          {EXPIRY_CHOICES.map((d) => (
            <option key={d} value={String(d)}>
              {d} days{d === DEFAULT_EXPIRY_DAYS ? ' (recommended)' : ''}
            </option>
          ))}
        </select>
        <p class="hint">
          Signed in with an access token? The new one never outlives it. Only allow this if you just ran{' '}
          <code>kr login --browser</code> yourself.
        </p>
        <ErrorMessage message={error} />
        <div class="row">
          <button type="button" class="primary" onClick={allow} disabled={busy || !me.data}>
            Allow
          </button>
          <button type="button" onClick={cancel} disabled={busy}>
            Cancel
          </button>
        </div>
        <p aria-live="polite" class="hint">
          {phase === 'minting'
            ? 'Creating the token…'
            : phase === 'sent'
              ? 'Token created: handing it to the command line…'
              : phase === 'cancelled'
                ? 'Cancelled: telling the command line…'
                : ''}
        </p>
      </div>
    </section>
  );
}
