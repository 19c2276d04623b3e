/**
 * Hosted build only: the signed-in user's plan and usage, and the admin page for admins. Whether the server has
 * them comes from GET /v1/me (ServerInfo); a server without them is never asked, so it never answers 404 or 403.
 */
import { useState } from 'preact/hooks';
import { ApiError, type Api, type ServerInfo } from './api.ts';
import type { AdminRepo, AdminStats, AdminUser, BillingResponse } from '../../schema/wire/hosted.ts';
import { Crumbs, Empty, ErrorMessage, Loading, errorText, useLoad } from './ui.tsx';

function day(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().slice(0, 10);
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

// ---------------------------------------------------------------- billing

/** The billing answer; null on a server without billing (self-hosted), undefined while that is not known yet. */
async function loadBilling(api: Api, hosted: boolean | undefined): Promise<BillingResponse | null | undefined> {
  if (hosted === undefined) return undefined;
  return hosted ? api.billing() : null;
}

export function BillingView({ api, server }: { api: Api; server: ServerInfo }) {
  const hosted = server.caps?.hosted;
  const billing = useLoad(() => loadBilling(api, hosted), [api, hosted]);
  const [busy, setBusy] = useState(false);
  const [checkoutError, setCheckoutError] = useState<string>();

  const upgrade = async () => {
    if (busy) return;
    setBusy(true);
    setCheckoutError(undefined);
    try {
      const { url } = await api.checkout();
      if (!/^https?:\/\//i.test(url)) throw new Error(`The server gave an unusable payment address: ${url}`);
      location.assign(url);
    } catch (e) {
      setCheckoutError(`The payment page could not be opened. ${errorText(e)}`);
      setBusy(false);
    }
  };

  const b = billing.data;
  return (
    <section class="billing">
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Plan and billing' }]} />
      <h1 tabIndex={-1}>Plan and billing</h1>
      <ErrorMessage message={server.error ?? billing.error} />
      {!server.error && !billing.error && b === undefined && <Loading what="your plan" />}
      {b === null && (
        <p class="card" role="status">
          This server has no plans or billing: it is self-hosted, and nothing here is capped by a plan.
        </p>
      )}
      {b && (
        <>
          <div class="card plan">
            <h2>Your plan</h2>
            <dl class="facts">
              <div>
                <dt>Plan</dt>
                <dd class="plan-name">{b.plan === 'pro' ? 'Pro' : 'Free'}</dd>
              </div>
              <div>
                <dt>Subscription</dt>
                <dd>{b.subscribed ? 'Subscribed' : 'Not subscribed'}</dd>
              </div>
              <div>
                <dt>Members per repository</dt>
                <dd>{b.limits.members === null ? 'No limit' : `Up to ${b.limits.members}, owners included (when no owner is subscribed)`}</dd>
              </div>
            </dl>
          </div>
          <div class="card usage">
            <h2>Usage</h2>
            {b.limits.repos === null ? (
              <p id="repos-usage">
                You own {plural(b.usage.repos_owned, 'repository', 'repositories')}; your plan has no limit on repositories.
              </p>
            ) : (
              <>
                <label for="repos-meter" id="repos-usage">
                  {b.usage.repos_owned} of {plural(b.limits.repos, 'repository', 'repositories')} owned
                </label>
                <meter
                  id="repos-meter"
                  min={0}
                  max={b.limits.repos}
                  value={Math.min(b.usage.repos_owned, b.limits.repos)}
                  high={Math.max(0, b.limits.repos - 1)}
                  optimum={0}
                >
                  {b.usage.repos_owned} of {b.limits.repos}
                </meter>
                {b.usage.repos_owned >= b.limits.repos && (
                  <p class="note">You have reached your plan's limit: a new repository needs an upgrade.</p>
                )}
              </>
            )}
          </div>
          {!b.subscribed && (
            <div class="card">
              <h2>Upgrade</h2>
              <p>The Pro plan lifts both limits: any number of repositories, and any number of members in the ones you own.</p>
              <button type="button" class="primary" onClick={upgrade} aria-disabled={busy ? 'true' : undefined}>
                {busy ? 'Opening the payment page…' : 'Upgrade'}
              </button>
              <ErrorMessage message={checkoutError} />
            </div>
          )}
        </>
      )}
    </section>
  );
}

// ---------------------------------------------------------------- admin

type AdminData = { forbidden: string } | { stats: AdminStats; users: AdminUser[]; repos: AdminRepo[] };

const NOT_AN_ADMIN = "This page is for the service's administrators, and your account is not one of them.";
const NO_ADMIN_PAGE = 'This server has no admin page: it is self-hosted (use the server\u2019s admin command instead).';

/** The admin page's data, or why there is none; undefined while GET /v1/me has not said what the server has. */
async function loadAdmin(api: Api, caps: ServerInfo['caps']): Promise<AdminData | undefined> {
  if (!caps) return undefined;
  if (!caps.hosted) return { forbidden: NO_ADMIN_PAGE };
  if (!caps.admin) return { forbidden: NOT_AN_ADMIN };
  try {
    const [stats, { users }, { repos }] = await Promise.all([api.adminStats(), api.adminUsers(), api.adminRepos()]);
    return { stats, users, repos };
  } catch (e) {
    // The admin list changed since this tab asked GET /v1/me (the server restarted with another one).
    if (e instanceof ApiError && e.status === 403) return { forbidden: NOT_AN_ADMIN };
    throw e;
  }
}

export function AdminView({ api, server }: { api: Api; server: ServerInfo }) {
  const caps = server.caps;
  const admin = useLoad(() => loadAdmin(api, caps), [api, caps?.hosted, caps?.admin]);
  const [pending, setPending] = useState<string>();
  const [status, setStatus] = useState<string>();
  const [error, setError] = useState<string>();

  const toggle = async (u: AdminUser) => {
    if (pending !== undefined) return;
    setPending(u.id);
    setStatus(undefined);
    setError(undefined);
    try {
      await api.setSubscription(u.id, !u.subscribed);
      setStatus(`${u.email} is ${u.subscribed ? 'no longer subscribed' : 'now subscribed'}.`);
      admin.reload();
    } catch (e) {
      setError(`The subscription of ${u.email} could not be changed. ${errorText(e)}`);
    } finally {
      setPending(undefined);
    }
  };

  const d = admin.data;
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Admin' }]} />
      <h1 tabIndex={-1}>Admin</h1>
      <ErrorMessage message={server.error ?? admin.error} />
      {!server.error && !admin.error && !d && <Loading what="the service's numbers" />}
      {d && 'forbidden' in d && (
        <p class="card" role="status">
          {d.forbidden}
        </p>
      )}
      {d && 'stats' in d && (
        <>
          <ul class="stats" aria-label="Service totals">
            <li>
              <span class="stat-n">{d.stats.users}</span> <span class="stat-l">users</span>
            </li>
            <li>
              <span class="stat-n">{d.stats.subscribed_users}</span> <span class="stat-l">subscribed</span>
            </li>
            <li>
              <span class="stat-n">{d.stats.repos}</span> <span class="stat-l">repositories</span>
            </li>
            <li>
              <span class="stat-n">{d.stats.pages}</span> <span class="stat-l">pages</span>
            </li>
          </ul>

          <h2 id="users-h">Users</h2>
          {status && (
            <p class="ok" role="status">
              {status}
            </p>
          )}
          <ErrorMessage message={error} />
          {d.users.length === 0 ? (
            <Empty>No users yet: they appear after their first sign-in.</Empty>
          ) : (
            <div class="scroll" role="region" aria-labelledby="users-h" tabIndex={0}>
              <table class="data" id="users-table">
                <thead>
                  <tr>
                    <th scope="col">Email</th>
                    <th scope="col">Name</th>
                    <th scope="col">Subscribed</th>
                    <th scope="col">Repositories owned</th>
                    <th scope="col">Created</th>
                    <th scope="col">Subscription</th>
                  </tr>
                </thead>
                <tbody>
                  {d.users.map((u) => (
                    <tr key={u.id}>
                      <th scope="row">{u.email}</th>
                      <td>{u.name}</td>
                      <td>{u.subscribed ? 'yes' : 'no'}</td>
                      <td>{u.repos_owned}</td>
                      <td>
                        <time dateTime={day(u.created_at)}>{day(u.created_at)}</time>
                      </td>
                      <td>
                        <button
                          type="button"
                          aria-disabled={pending !== undefined ? 'true' : undefined}
                          aria-label={u.subscribed ? `End subscription of ${u.email}` : `Subscribe ${u.email}`}
                          onClick={() => toggle(u)}
                        >
                          {pending === u.id ? 'Saving…' : u.subscribed ? 'End subscription' : 'Subscribe'}
                        </button>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}

          <h2 id="repos-h">Repositories</h2>
          {d.repos.length === 0 ? (
            <Empty>No repositories yet.</Empty>
          ) : (
            <div class="scroll" role="region" aria-labelledby="repos-h" tabIndex={0}>
              <table class="data" id="repos-table">
                <thead>
                  <tr>
                    <th scope="col">Id</th>
                    <th scope="col">Owners</th>
                    <th scope="col">Members</th>
                    <th scope="col">Pages</th>
                  </tr>
                </thead>
                <tbody>
                  {d.repos.map((r) => (
                    <tr key={r.id}>
                      <th scope="row">{r.id}</th>
                      <td>{r.owners.length === 0 ? 'none' : r.owners.join(', ')}</td>
                      <td>{r.members}</td>
                      <td>{r.page_count}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}
