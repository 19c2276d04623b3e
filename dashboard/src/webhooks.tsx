/**
 * The Webhooks panel of a repository's settings (docs/api.md "Webhooks"): the webhooks (members see them; no
 * secrets), and for owners (whose routes the rest are): add one (its signing secret shown once, with how a receiver checks it), send a
 * test ping, see the recent deliveries with their status, the receiver's HTTP status and the error, remove.
 */
import { useState } from 'preact/hooks';
import type { Api } from './api.ts';
import type { Delivery, Webhook } from '../../schema/wire/webhooks.ts';
import { ConfirmButton, Empty, ErrorMessage, Loading, errorText, useLoad } from './ui.tsx';
import { OnceSecret, When } from './team.tsx';

const EVENT_KINDS = [
  { value: 'push', label: 'Pushes' },
  { value: 'member', label: 'Member changes' },
] as const;

export function WebhooksPanel({ api, repo, owner }: { api: Api; repo: string; owner: boolean }) {
  const hooks = useLoad(async () => (await api.webhooks(repo)).webhooks, [api, repo]);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['push', 'member']);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [created, setCreated] = useState<{ webhook: Webhook; secret: string }>();
  const [open, setOpen] = useState<string>();

  const add = async (ev: Event) => {
    ev.preventDefault();
    if (events.length === 0) return setError('Choose at least one kind of event.');
    setBusy(true);
    setError(undefined);
    setStatus(undefined);
    try {
      const res = await api.createWebhook(repo, { url: url.trim(), events });
      setCreated(res);
      setUrl('');
      hooks.reload();
    } catch (e) {
      setError(`Not added: ${errorText(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const remove = async (w: Webhook): Promise<boolean> => {
    try {
      await api.removeWebhook(repo, w.id);
      setStatus(`Removed the webhook to ${w.url}.`);
      if (open === w.id) setOpen(undefined);
      hooks.reload();
      return true;
    } catch (e) {
      setError(`Not removed: ${errorText(e)}`);
      return false;
    }
  };

  const list = hooks.data;
  return (
    <section class="card" aria-labelledby="webhooks-h">
      <h2 id="webhooks-h" class="flush">
        Webhooks {list && <span class="count">({list.length})</span>}
      </h2>
      <p>
        On each push or member change, the server sends a signed <code>POST</code> to each webhook's URL, retried for a few hours while the
        receiver fails. The receiver checks the <code>X-KR-Signature</code> header, <code>t=&lt;unix seconds&gt;,v1=&lt;hex&gt;</code>: the
        HMAC-SHA256 of <code>&lt;t&gt;.&lt;raw body&gt;</code> keyed with the webhook's secret, compared in constant time, and refuses a{' '}
        <code>t</code> more than 5 minutes from its own clock.
      </p>
      <ErrorMessage message={hooks.error} />
      {hooks.loading && !list && <Loading what="webhooks" />}
      {!owner && list && <p class="hint">Only an owner of {repo} adds, tests and removes webhooks and sees their deliveries.</p>}
      {owner && (
        <form onSubmit={add} aria-labelledby="add-webhook-h">
          <h3 id="add-webhook-h" class="flush">
            Add a webhook
          </h3>
          <label for="webhook-url">Receiver URL</label>
          <div class="row">
            <input
              id="webhook-url"
              class="mono"
              type="url"
              required
              value={url}
              autoComplete="off"
              spellcheck={false}
              placeholder="https://ci.example.com/kr-hook"
              aria-describedby="webhook-url-hint"
              onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
            />
            <button type="submit" disabled={busy}>
              {busy ? 'Adding…' : 'Add webhook'}
            </button>
          </div>
          <p class="hint" id="webhook-url-hint">
            An <code>https://</code> address on the public internet (the server refuses private and loopback ones unless it was configured to
            allow them).
          </p>
          <fieldset class="row">
            <legend>Events</legend>
            {EVENT_KINDS.map((k) => (
              <label key={k.value}>
                <input
                  type="checkbox"
                  checked={events.includes(k.value)}
                  onChange={(e) =>
                    setEvents((now) => ((e.target as HTMLInputElement).checked ? [...new Set([...now, k.value])] : now.filter((x) => x !== k.value)))
                  }
                />{' '}
                {k.label}
              </label>
            ))}
          </fieldset>
        </form>
      )}
      <ErrorMessage message={error} />
      {created && (
        <OnceSecret id="new-webhook-secret" label="Signing secret" value={created.secret} onDone={() => setCreated(undefined)}>
          <p class="hint">
            Added the webhook to <code>{created.webhook.url}</code>. Give this secret to the receiver: it is the key of the signature of every
            delivery, and the server never shows it again (remove the webhook and add it again to get a new one).
          </p>
        </OnceSecret>
      )}
      {status && (
        <p class="ok" role="status">
          {status}
        </p>
      )}
      {list && list.length === 0 && <Empty>No webhooks.{owner ? ' Add one above.' : ''}</Empty>}
      {list && list.length > 0 && (
        <div class="scroll">
          <table class="data wide" aria-label={`Webhooks of ${repo}`}>
            <thead>
              <tr>
                <th scope="col">URL</th>
                <th scope="col">Events</th>
                <th scope="col">Added</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((w) => (
                <tr key={w.id}>
                  <td class="wrap mono">{w.url}</td>
                  <td>{w.events.join(', ')}</td>
                  <td>
                    <When s={w.created_at} />
                  </td>
                  <td>
                    {owner ? (
                      <div class="row">
                        <button type="button" aria-expanded={open === w.id} onClick={() => setOpen(open === w.id ? undefined : w.id)}>
                          {open === w.id ? 'Hide deliveries' : 'Deliveries'}
                          <span class="sr-only"> of the webhook to {w.url}</span>
                        </button>
                        <ConfirmButton
                          label="Remove"
                          what={`webhook to ${w.url}`}
                          question="Remove this webhook? Nothing more is sent to it."
                          confirmLabel="Yes, remove"
                          onConfirm={() => remove(w)}
                        />
                      </div>
                    ) : (
                      <span class="hint">owners only</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {owner && list && open && list.some((w) => w.id === open) && <Deliveries key={open} api={api} repo={repo} hook={list.find((w) => w.id === open)!} />}
    </section>
  );
}

const STATUS_CLASS: Record<Delivery['status'], string> = { delivered: 'added', pending: 'modified', failed: 'removed' };

/** A webhook's recent deliveries (owners: the route is theirs) and its test ping. */
function Deliveries({ api, repo, hook }: { api: Api; repo: string; hook: Webhook }) {
  const deliveries = useLoad(async () => (await api.deliveries(repo, hook.id, 20)).deliveries, [api, repo, hook.id]);
  const [testing, setTesting] = useState(false);
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<string>();
  const test = async () => {
    setTesting(true);
    setError(undefined);
    setNote(undefined);
    try {
      await api.testWebhook(repo, hook.id);
      setNote('Sent a ping: it appears below once tried (Refresh).');
      deliveries.reload();
    } catch (e) {
      setError(`No ping sent: ${errorText(e)}`);
    } finally {
      setTesting(false);
    }
  };
  const rows = deliveries.data;
  return (
    <section aria-labelledby="deliveries-h">
      <h3 id="deliveries-h">Recent deliveries to {hook.url}</h3>
      <div class="row">
        <button type="button" onClick={test} disabled={testing}>
          {testing ? 'Sending…' : 'Send a test ping'}
        </button>
        <button type="button" onClick={deliveries.reload} disabled={deliveries.loading}>
          Refresh<span class="sr-only"> the deliveries</span>
        </button>
      </div>
      {note && (
        <p class="ok" role="status">
          {note}
        </p>
      )}
      <ErrorMessage message={error ?? deliveries.error} />
      {deliveries.loading && !rows && <Loading what="deliveries" />}
      {rows && rows.length === 0 && <Empty>No deliveries yet.</Empty>}
      {rows && rows.length > 0 && (
        <div class="scroll">
          <table class="data wide" aria-label={`Deliveries to ${hook.url}`}>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">HTTP</th>
                <th scope="col">Error</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr key={d.id}>
                  <td>{d.event}</td>
                  <td>
                    <span class={`status ${STATUS_CLASS[d.status]}`}>{d.status}</span>
                  </td>
                  <td>{d.attempts}</td>
                  <td>{d.last_status ?? '–'}</td>
                  <td class="wrap">
                    {d.last_error ?? ''}
                    {d.status === 'pending' && d.next_attempt_at !== undefined && (
                      <span class="hint">
                        {d.last_error ? ' · ' : ''}next try <When s={d.next_attempt_at} />
                      </span>
                    )}
                  </td>
                  <td>
                    <When s={d.created_at} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
