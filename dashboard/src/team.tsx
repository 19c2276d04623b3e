/** A repository's team (members, invite keys) and the signed-in user's personal access tokens. */
import { Fragment, type ComponentChildren } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { ApiError, type Api, type ServerInfo } from './api.ts';
import type { PatListItem } from '../../schema/wire/auth.ts';
import type { InviteKey, Member } from '../../schema/wire/members.ts';
import { ConfirmButton, Crumbs, Empty, ErrorMessage, Loading, errorText, useLoad, type Loaded } from './ui.tsx';
import { RepoTabs } from './repo-nav.tsx';
import { href } from './route.ts';
import { clearSession, loadSession } from './session.ts';

// ---------------------------------------------------------------- small pieces

// Inline styles on top of style.css's classes (scroll, data, status, compare, card, hint).

/** Unix seconds → "2026-11-23 02:46 UTC", inside a <time>. */
export function When({ s }: { s: number }) {
  const d = new Date(s * 1000);
  if (Number.isNaN(d.getTime())) return <span>{String(s)}</span>;
  const iso = d.toISOString();
  // Two unbreakable halves: a narrow column wraps between the date and the time, never inside them.
  return (
    <time dateTime={iso}>
      <span class="nowrap">{iso.slice(0, 10)}</span> <span class="nowrap">{iso.slice(11, 16)} UTC</span>
    </time>
  );
}

const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/**
 * An email that a narrow column breaks at sensible points: after the `@` and after each dot (a `<wbr>`
 * there), never in the middle of a name unless a single part is wider than the column (`.wrap` then breaks
 * anywhere).
 */
function Email({ email }: { email: string }) {
  const parts = email.split(/(?<=[@.])/);
  return (
    <span class="email">
      {parts.map((p, i) => (
        <Fragment key={i}>
          {p}
          {i < parts.length - 1 && <wbr />}
        </Fragment>
      ))}
    </span>
  );
}

/** "a", "a or b", "a, b or c". */
function orList(items: string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/**
 * A refused join, said to the person joining. At the member cap (402 `quota_members`) the cap is the owners'
 * plan: the upgrade link is of no use to the joiner, so they are told to ask an owner, named when the server
 * says who they are. Anything else is the server's own sentence.
 */
export function joinRefusal(e: unknown): string {
  if (e instanceof ApiError && e.status === 402 && e.body?.code === 'quota_members') {
    const limit = typeof e.body?.limit === 'number' ? ` (${e.body?.limit})` : '';
    const owners = Array.isArray(e.body?.owners) ? e.body?.owners.filter((o): o is string => typeof o === 'string' && o !== '') : [];
    const whom =
      owners.length === 0
        ? 'an owner'
        : owners.length <= 5
          ? `an owner (${orList(owners)})`
          : `an owner (${owners.slice(0, 5).join(', ')} or one of ${owners.length - 5} others)`;
    return `This repository is at its plan's member limit${limit}; ask ${whom} to upgrade.`;
  }
  return errorText(e);
}

/** Redeems an invite key from the Repositories view; `onJoined` refreshes the list. */
export function JoinRepo({ api, onJoined }: { api: Api; onJoined: () => void }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [joined, setJoined] = useState<{ repo: string; role: string }>();
  const join = async (ev: Event) => {
    ev.preventDefault();
    const token = key.trim();
    setError(undefined);
    setJoined(undefined);
    if (!token.startsWith('kri_')) {
      setError('That is not an invite key: invite keys start with kri_.');
      return;
    }
    setBusy(true);
    try {
      const r = await api.join(token);
      setJoined({ repo: r.repo_id, role: r.role });
      setKey('');
      onJoined();
    } catch (e) {
      setError(joinRefusal(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="card inline" onSubmit={join}>
      <label for="join-key">Invite key</label>
      <div class="row">
        <input
          id="join-key"
          class="mono"
          value={key}
          autoComplete="off"
          spellcheck={false}
          placeholder="kri_…"
          aria-describedby="join-key-hint"
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={busy}>
          Join repository
        </button>
      </div>
      <p class="hint" id="join-key-hint">
        An owner mints invite keys on a repository's Team page (or with <code>kr invite create</code>).
      </p>
      <ErrorMessage message={error} />
      {joined && (
        <p class="ok" role="status">
          Joined <a href={href({ name: 'repo', repo: joined.repo })}>{joined.repo}</a> as {joined.role}.
        </p>
      )}
    </form>
  );
}

/** A readable sentence for a failed action, with a next step for the answers the team routes give. */
function actionError(e: unknown): string {
  const text = errorText(e);
  if (e instanceof ApiError && e.refusal === 'last_owner') {
    return `${text} A repository keeps at least one owner; the server's admin command (repo owner <repo> <user>) makes another one first.`;
  }
  return text;
}

/**
 * The state of a view's actions: `run(act)` clears the last message, marks the view busy while `act` runs,
 * shows a refusal readably, and tells whether it went through. `act` may set a status message on success.
 */
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const [status, setStatus] = useState<string>();
  const run = async (act: () => Promise<void>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    setStatus(undefined);
    try {
      await act();
      return true;
    } catch (e) {
      setError(actionError(e));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, status, setStatus, run };
}

/** A secret shown once: a read-only field, a Copy button, and what to do with it. */
export function OnceSecret(props: { id: string; label: string; value: string; onDone: () => void; children: ComponentChildren }) {
  const [copied, setCopied] = useState<{ ok: boolean; text: string }>();
  const field = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied({ ok: true, text: 'Copied to the clipboard.' });
    } catch {
      field.current?.select();
      setCopied({ ok: false, text: 'The clipboard is not available here: the field is selected, copy it with Ctrl+C (⌘C).' });
    }
  };
  return (
    <div class="card secret">
      <p class="note" role="status">
        <strong>Copy it now: it will not be shown again.</strong>
      </p>
      <label for={props.id}>{props.label}</label>
      <div class="row">
        <input
          id={props.id}
          ref={field}
          class="mono"
          readOnly
          value={props.value}
          spellcheck={false}
          autoComplete="off"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <button type="button" class="primary" onClick={copy}>
          Copy<span class="sr-only"> the {props.label.toLowerCase()}</span>
        </button>
      </div>
      {copied && (
        <p class={copied.ok ? 'ok' : 'hint'} role="status">
          {copied.text}
        </p>
      )}
      {props.children}
      <button type="button" onClick={props.onDone}>
        Done, hide it
      </button>
    </div>
  );
}

function useHeadingFocus() {
  const ref = useRef<HTMLHeadingElement>(null);
  return { ref, focus: () => ref.current?.focus({ preventScroll: true }) };
}

// ---------------------------------------------------------------- team

export function TeamView({ api, repo, server }: { api: Api; repo: string; server?: ServerInfo }) {
  // A fresh view per repository: no member list, key or just-minted token of the last one lingers.
  return <Team key={repo} api={api} repo={repo} hosted={server?.caps?.hosted === true} />;
}

function Team({ api, repo, hosted }: { api: Api; repo: string; hosted: boolean }) {
  const team = useLoad(async () => {
    const [{ members }, me] = await Promise.all([api.members(repo), api.me().catch(() => undefined)]);
    return { members, me };
  }, [api, repo]);
  const myRole = team.data?.me ? team.data.members.find((m) => m.user_id === team.data!.me!.id)?.role : undefined;
  const isOwner = myRole === 'owner';
  // On the hosted build an owner's plan says whether this repository is at its member cap (then the owner,
  // who alone can lift it, is shown the upgrade link; a joiner is only told to ask an owner).
  const billing = useLoad(() => (hosted && isOwner ? api.billing().catch(() => null) : Promise.resolve(null)), [api, hosted, isOwner]);

  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: repo, to: href({ name: 'repo', repo }) }, { label: 'Team' }]} />
      <h1 tabIndex={-1}>Team of {repo}</h1>
      <RepoTabs repo={repo} current="team" />
      {team.data && billing.data && <MemberCap members={team.data.members} limit={billing.data.limits.members} />}
      <Members api={api} repo={repo} team={team} isOwner={isOwner} myId={team.data?.me?.id} myRole={myRole} />
      {team.data && <InviteKeys api={api} repo={repo} isOwner={isOwner} roleKnown={myRole !== undefined} />}
    </section>
  );
}

/**
 * The hosted build's member cap, shown to an owner who is not subscribed once the repository has as many
 * members as the plan allows (owners included): nobody new can join, and the owner can lift it. Another
 * owner's subscription would lift it too, which this owner's plan cannot tell: said when there is one.
 */
function MemberCap({ members, limit }: { members: Member[]; limit: number | null }) {
  if (limit === null || members.length < limit) return null;
  const otherOwners = members.filter((m) => m.role === 'owner').length > 1;
  return (
    <p class="note member-cap" id="member-cap">
      This repository is at its plan's member limit ({limit}, owners included): an invite key lets nobody new join
      {otherOwners ? ' unless another owner has a subscription' : ''}. <a href="#/billing">Upgrade your plan</a> to lift the
      limit.
    </p>
  );
}

function Members(props: {
  api: Api;
  repo: string;
  team: Loaded<{ members: Member[]; me: { id: string } | undefined }>;
  isOwner: boolean;
  myId: string | undefined;
  myRole: string | undefined;
}) {
  const { api, repo, team, isOwner, myId } = props;
  const { error, status, setStatus, run } = useAction();
  const heading = useHeadingFocus();
  const members = team.data?.members;

  const remove = (m: Member) =>
    run(async () => {
      await api.removeMember(repo, m.user_id);
      if (m.user_id === myId) {
        location.hash = '#/';
        return;
      }
      setStatus(`Removed ${m.email} from ${repo}.`);
      team.reload();
      heading.focus();
    });

  const owners = members?.filter((m) => m.role === 'owner').length ?? 0;
  const changeRole = (m: Member, role: 'owner' | 'member') =>
    run(async () => {
      await api.setRole(repo, m.user_id, role);
      setStatus(m.user_id === myId ? `You are now ${role === 'owner' ? 'an owner' : 'a member'} of ${repo}.` : `${m.email} is now ${role === 'owner' ? 'an owner' : 'a member'}.`);
      team.reload();
      heading.focus();
    });

  return (
    <section aria-labelledby="members-h">
      <h2 id="members-h" ref={heading.ref} tabIndex={-1}>
        Members {members && <span class="count">({members.length})</span>}
      </h2>
      {members && !isOwner && (
        <p class="hint">
          {props.myRole === 'member' ? 'You are a member of this repository. ' : ''}Only an owner can remove members or invite
          new ones.
        </p>
      )}
      <ErrorMessage message={team.error} />
      <ErrorMessage message={error} />
      {status && (
        <p class="ok" role="status">
          {status}
        </p>
      )}
      {team.loading && !team.data && <Loading what="members" />}
      {members && members.length === 0 && <Empty>This repository has no members yet.</Empty>}
      {members && members.length > 0 && (
        <div class="scroll">
          <table class="data wide cards" aria-label={`Members of ${repo}`}>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Added</th>
                {isOwner && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {members.map((m) => {
                const self = m.user_id === myId;
                return (
                  <tr key={m.user_id}>
                    <td class="wrap" data-label="Email">
                      <Email email={m.email} />
                      {self && <> <span class="badge">you</span></>}
                    </td>
                    <td data-label="Role">
                      <span class="nowrap">{m.role}</span>
                      {isOwner && m.role === 'member' && (
                        <button type="button" class="inline-action" onClick={() => void changeRole(m, 'owner')}>
                          Make owner<span class="sr-only"> {m.email}</span>
                        </button>
                      )}
                      {isOwner && m.role === 'owner' && owners > 1 && (
                        <ConfirmButton
                          label="Make member"
                          what={self ? '(yourself)' : m.email}
                          question={
                            self
                              ? 'Step down to member? You can no longer manage the team, invite keys or the repository; another owner can make you owner again.'
                              : `Make ${m.email} a member? They can no longer manage the team, invite keys or the repository.`
                          }
                          confirmLabel="Yes, make member"
                          onConfirm={() => changeRole(m, 'member')}
                        />
                      )}
                    </td>
                    <td data-label="Added">
                      <When s={m.added_at} />
                    </td>
                    {isOwner && (
                      <td class="actions">
                        <ConfirmButton
                          label={self ? 'Leave' : 'Remove'}
                          what={self ? `${repo} (remove yourself)` : `member ${m.email}`}
                          question={
                            self
                              ? `Leave ${repo}? You lose access at once; only an owner can let you back in.`
                              : `Remove ${m.email}? They lose access at once, and invite keys minted before now will not readmit them.`
                          }
                          confirmLabel={self ? 'Yes, leave' : 'Yes, remove'}
                          onConfirm={() => remove(m)}
                        />
                      </td>
                    )}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

type KeysAnswer = { keys: InviteKey[] } | { forbidden: string };

function InviteKeys({ api, repo, isOwner, roleKnown }: { api: Api; repo: string; isOwner: boolean; roleKnown: boolean }) {
  // A known non-owner is not asked for the keys at all; otherwise the server's 403 becomes a hint.
  const keys = useLoad<KeysAnswer>(async () => {
    if (roleKnown && !isOwner) return { forbidden: 'only an owner can manage invite keys' };
    try {
      return { keys: (await api.listInvites(repo)).keys };
    } catch (e) {
      if (e instanceof ApiError && e.status === 403) return { forbidden: e.message };
      throw e;
    }
  }, [api, repo, isOwner, roleKnown]);
  const [label, setLabel] = useState('');
  const { busy, error, status, setStatus, run } = useAction();
  const [minted, setMinted] = useState<{ token: string; key: InviteKey }>();
  const heading = useHeadingFocus();

  const mint = (ev: Event) => {
    ev.preventDefault();
    void run(async () => {
      const r = await api.createInvite(repo, label.trim() || undefined);
      setMinted({ token: r.token, key: r.key });
      setLabel('');
      keys.reload();
    });
  };

  const revoke = (k: InviteKey) =>
    run(async () => {
      await api.revokeInvite(repo, k.id);
      if (minted?.key.id === k.id) setMinted(undefined);
      setStatus(`Revoked the invite key ${keyName(k)}. It can no longer be redeemed.`);
      keys.reload();
      heading.focus();
    });

  const data = keys.data;
  const now = nowSeconds();
  const list = data && 'keys' in data ? data.keys : undefined;
  const sorted = list ? [...list.filter((k) => k.expires_at > now), ...list.filter((k) => k.expires_at <= now)] : undefined;
  return (
    <section aria-labelledby="keys-h">
      <h2 id="keys-h" ref={heading.ref} tabIndex={-1}>
        Invite keys {list && <span class="count">({list.filter((k) => k.expires_at > now).length} active)</span>}
      </h2>
      <ErrorMessage message={keys.error} />
      {keys.loading && !data && <Loading what="invite keys" />}
      {data && 'forbidden' in data && (
        <p class="hint">Only an owner of {repo} mints and revokes invite keys. To bring in a teammate, ask an owner to mint one.</p>
      )}
      {list && (
        <>
          <form class="card" onSubmit={mint} aria-labelledby="mint-h">
            <h3 id="mint-h" class="flush">
              Mint an invite key
            </h3>
            <label for="invite-label">Label (optional)</label>
            <div class="row">
              <input
                id="invite-label"
                value={label}
                autoComplete="off"
                placeholder="who it is for"
                aria-describedby="invite-label-hint"
                onInput={(e) => setLabel((e.target as HTMLInputElement).value)}
              />
              <button type="submit" disabled={busy}>
                Mint invite key
              </button>
            </div>
            <p class="hint" id="invite-label-hint">
              Who or what it is for, at most 200 characters. A key lets anyone who has it join as a member for 7 days, as often
              as they like, until you revoke it.
            </p>
            <ErrorMessage message={error} />
          </form>
          {minted && (
            <OnceSecret id="new-invite-key" label="New invite key" value={minted.token} onDone={() => setMinted(undefined)}>
              <p class="hint">
                Send it to your teammate privately. Signed in to this server (<code>kr login --server {api.baseUrl}</code>), they
                run <code>kr join {minted.token}</code>. It expires <When s={minted.key.expires_at} />.
              </p>
            </OnceSecret>
          )}
          {status && (
            <p class="ok" role="status">
              {status}
            </p>
          )}
          {sorted && sorted.length === 0 && <Empty>No invite keys. Mint one above to invite a teammate.</Empty>}
          {sorted && sorted.length > 0 && (
            <div class="scroll">
              <table class="data wide cards" aria-label={`Invite keys of ${repo}`}>
                <thead>
                  <tr>
                    <th scope="col">Label</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                    <th scope="col">Expires</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {sorted.map((k) => {
                    const expired = k.expires_at <= now;
                    return (
                      <tr key={k.id}>
                        <td class="wrap" data-label="Label">
                          {k.label ? k.label : <span class="hint">no label · {k.id.slice(0, 8)}</span>}
                        </td>
                        <td data-label="Status">
                          <span class={`status ${expired ? 'removed' : 'added'}`}>{expired ? 'Expired' : 'Active'}</span>
                        </td>
                        <td data-label="Created">
                          <When s={k.created_at} />
                        </td>
                        <td data-label="Expires">
                          <When s={k.expires_at} />
                        </td>
                        <td class="actions">
                          <ConfirmButton
                            label="Revoke"
                            what={`invite key ${keyName(k)}`}
                            question={
                              expired
                                ? 'Revoke this expired key? It only removes it from the list.'
                                : 'Revoke this key? Nobody can join with it any more; members who already joined stay.'
                            }
                            confirmLabel="Yes, revoke"
                            onConfirm={() => revoke(k)}
                          />
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function keyName(k: InviteKey): string {
  return k.label || k.id;
}

// ---------------------------------------------------------------- personal access tokens

const EXPIRY_CHOICES: { value: string; label: string }[] = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: '366', label: '366 days (the longest)' },
  { value: 'never', label: 'No expiry' },
];

function patName(p: PatListItem): string {
  return p.label || p.id;
}

export function TokensView({ api }: { api: Api }) {
  const pats = useLoad(async () => (await api.listPats()).pats, [api]);
  const [label, setLabel] = useState('');
  const [expiry, setExpiry] = useState('30');
  const { busy, error, status, setStatus, run } = useAction();
  const [lostSignIn, setLostSignIn] = useState(false);
  const [created, setCreated] = useState<{ token: string; pat: PatListItem }>();
  const heading = useHeadingFocus();
  const session = loadSession();
  const tabUsesPat = session?.via === 'token' && session.token.startsWith('krp_');

  const create = (ev: Event) => {
    ev.preventDefault();
    void run(async () => {
      const opts: { label?: string; expires_in_days?: number } = {};
      if (label.trim()) opts.label = label.trim();
      if (expiry !== 'never') opts.expires_in_days = Number(expiry);
      const r = await api.createPat(opts);
      setCreated({ token: r.token, pat: r.pat });
      setLabel('');
      pats.reload();
    });
  };

  const revoke = async (p: PatListItem) => {
    const revoked = await run(async () => {
      await api.revokePat(p.id);
      if (created?.pat.id === p.id) setCreated(undefined);
      setStatus(`Revoked the token ${patName(p)}. Anything using it has stopped working.`);
    });
    if (!revoked) return false;
    // The token this tab signed in with? Then the next request is refused.
    try {
      await api.me();
      pats.reload();
      heading.focus();
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) setLostSignIn(true);
      else pats.reload();
    }
    return true;
  };

  const now = nowSeconds();
  const chosen = EXPIRY_CHOICES.find((c) => c.value === expiry);
  return (
    <section>
      <Crumbs items={[{ label: 'Repositories', to: '#/' }, { label: 'Access tokens' }]} />
      <h1 tabIndex={-1}>Personal access tokens</h1>
      <p class="hint">
        A personal access token lets the kr command line, a script or this dashboard act as you, in every repository you are a
        member of. It works until it expires or you revoke it.
      </p>
      {lostSignIn && (
        <div class="error" role="alert">
          <p>That was the token this tab signed in with, so this tab is no longer signed in.</p>
          <button
            type="button"
            onClick={() => {
              clearSession();
              location.hash = '#/';
              location.reload();
            }}
          >
            Sign in again
          </button>
        </div>
      )}
      <form class="card" onSubmit={create} aria-labelledby="new-pat-h">
        <h2 id="new-pat-h" class="flush">
          Create a token
        </h2>
        <div class="compare">
          <div class="field">
            <label for="pat-label">Label (optional)</label>
            <input
              id="pat-label"
              class="wide"
              value={label}
              autoComplete="off"
              placeholder="laptop CLI"
              aria-describedby="pat-label-hint"
              onInput={(e) => setLabel((e.target as HTMLInputElement).value)}
            />
          </div>
          <div class="field">
            <label for="pat-expiry">Expires after</label>
            <select id="pat-expiry" value={expiry} onChange={(e) => setExpiry((e.target as HTMLSelectElement).value)}>
              {EXPIRY_CHOICES.map((c) => (
                <option key={c.value} value={c.value}>
                  {c.label}
                </option>
              ))}
            </select>
          </div>
          <button type="submit" disabled={busy}>
            Create token
          </button>
        </div>
        <p class="hint" id="pat-label-hint">
          The label (at most 200 characters) tells your tokens apart.{' '}
          {tabUsesPat
            ? 'This tab signed in with a token: a new one never outlives it, so its expiry may come sooner than chosen.'
            : chosen?.value === 'never'
              ? 'A token without expiry works until you revoke it.'
              : ''}
        </p>
        <ErrorMessage message={error} />
      </form>
      {created && (
        <OnceSecret id="new-pat" label="New access token" value={created.token} onDone={() => setCreated(undefined)}>
          <p class="hint">
            For the command line: run <code>kr login --server {api.baseUrl}</code> and paste it when asked (in a script, pipe it
            into <code>kr login --server {api.baseUrl} --token -</code>). It{' '}
            {created.pat.expires_at !== undefined ? (
              <>
                expires <When s={created.pat.expires_at} />
              </>
            ) : (
              'never expires'
            )}
            .
          </p>
        </OnceSecret>
      )}

      <section aria-labelledby="pats-h">
        <h2 id="pats-h" ref={heading.ref} tabIndex={-1}>
          Your tokens {pats.data && <span class="count">({pats.data.length})</span>}
        </h2>
        {status && (
          <p class="ok" role="status">
            {status}
          </p>
        )}
        {!lostSignIn && <ErrorMessage message={pats.error} />}
        {pats.loading && !pats.data && <Loading what="tokens" />}
        {pats.data && pats.data.length === 0 && <Empty>You have no personal access tokens. Create one above.</Empty>}
        {pats.data && pats.data.length > 0 && !pats.data.some((p) => p.current) && (
          <p class="hint">This tab signed in {session?.via === 'oidc' ? 'through your organisation’s account' : 'with a session'}: none of these tokens is the one it uses.</p>
        )}
        {pats.data && pats.data.length > 0 && (
          <div class="scroll">
            <table class="data wide cards" aria-label="Your personal access tokens">
              <thead>
                <tr>
                  <th scope="col">Label</th>
                  <th scope="col">Created</th>
                  <th scope="col">Expires</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {pats.data.map((p) => {
                  const expired = p.expires_at !== undefined && p.expires_at <= now;
                  return (
                    <tr key={p.id}>
                      <td class="wrap" data-label="Label">
                        {p.label ? p.label : <span class="hint">no label · {p.id.slice(0, 8)}</span>}
                        {p.current && (
                          <>
                            {' '}
                            <span class="badge current">in use by this tab</span>
                          </>
                        )}
                      </td>
                      <td data-label="Created">
                        <When s={p.created_at} />
                      </td>
                      <td data-label="Expires">
                        {p.expires_at === undefined ? 'never' : <When s={p.expires_at} />}
                        {expired && <span class="status removed">Expired</span>}
                      </td>
                      <td data-label="Last used">{p.last_used_at === undefined ? 'never' : <When s={p.last_used_at} />}</td>
                      <td class="actions">
                        <ConfirmButton
                          label="Revoke"
                          what={`token ${patName(p)}`}
                          question={
                            <>
                              Revoke {patName(p)}?{' '}
                              {p.current
                                ? 'It is the token this tab signed in with: this tab is signed out at once, and anything else using it stops working.'
                                : 'Anything using it (the command line, scripts) stops working at once.'}
                            </>
                          }
                          confirmLabel="Yes, revoke"
                          onConfirm={() => revoke(p)}
                        />
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </section>
  );
}
