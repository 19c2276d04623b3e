/**
 * `kr webhooks`: the current repository's webhooks (docs/api.md "Webhooks"): add (owners; the secret is shown
 * once), list, test (a `ping` delivery), deliveries (the latest attempts, with the receiver's status or the
 * error), remove. Every subcommand has `--json`.
 */
import { connect, repoOf } from '../../client/config.ts';
import { usageError } from '../../client/errors.ts';
import { clean, out, paint, printJson, table, utc } from '../../client/output.ts';
import { findProject } from '../../client/project.ts';
import { intOption } from './inspect.ts';

interface Common {
  repo?: string;
  json?: boolean;
}

/** The kinds of events a webhook may receive (docs/api.md). */
const EVENT_KINDS = ['push', 'member'] as const;

/** `--events push,member`: a comma-separated list of the event kinds, at least one. */
export function parseEvents(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const names = [...new Set(raw.split(',').map((s) => s.trim()).filter(Boolean))];
  if (names.length === 0) throw usageError(`--events needs at least one of ${EVENT_KINDS.join(', ')}`);
  for (const n of names) if (!(EVENT_KINDS as readonly string[]).includes(n)) throw usageError(`unknown event ${JSON.stringify(n)} in --events (expected ${EVENT_KINDS.join(', ')})`);
  return names;
}

async function session(opts: Common) {
  const s = await connect();
  return { api: s.api, repo: repoOf(s, opts.repo, await findProject()) };
}

export async function add(url: string, opts: Common & { events?: string }): Promise<void> {
  const events = parseEvents(opts.events);
  const { api, repo } = await session(opts);
  const res = await api.createWebhook(repo, { url, ...(events ? { events } : {}) });
  if (opts.json) return printJson(res);
  const p = paint();
  out(`Added webhook ${clean(res.webhook.id)} to ${clean(repo)}: ${clean(res.webhook.url)} (${res.webhook.events.map(clean).join(', ')}).`);
  out('Secret (shown only this once; keep it with the receiver):');
  out(`  ${p.bold(clean(res.secret))}`);
  out('Each delivery carries X-KR-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the secret>;');
  out('the receiver recomputes it over the raw body and refuses a t more than 5 minutes from its clock ("kr webhooks test" sends a ping).');
}

export async function list(opts: Common): Promise<void> {
  const { api, repo } = await session(opts);
  const { webhooks } = await api.webhooks(repo);
  if (opts.json) return printJson({ webhooks });
  if (webhooks.length === 0) return out(`No webhooks on ${clean(repo)} ("kr webhooks add <url>" adds one).`);
  out(table(webhooks.map((w) => [clean(w.id), w.events.map(clean).join(','), utc(w.created_at), clean(w.url)]), ['ID', 'EVENTS', 'CREATED', 'URL']));
}

export async function test(id: string, opts: Common): Promise<void> {
  const { api, repo } = await session(opts);
  await api.testWebhook(repo, id);
  if (opts.json) return printJson({ webhook_id: id, queued: true });
  out(`Queued a ping to webhook ${clean(id)}; "kr webhooks deliveries ${clean(id)}" shows how it went.`);
}

export async function deliveries(id: string, opts: Common & { limit?: string }): Promise<void> {
  const limit = intOption('limit', opts.limit);
  const { api, repo } = await session(opts);
  const res = await api.deliveries(repo, id, limit);
  if (opts.json) return printJson(res);
  if (res.deliveries.length === 0) return out(`No deliveries to webhook ${clean(id)} yet.`);
  const p = paint();
  const colour = { delivered: p.green, pending: p.yellow, failed: p.red } as const;
  out(
    table(
      res.deliveries.map((d) => [
        utc(d.created_at),
        clean(d.event),
        colour[d.status](d.status),
        String(d.attempts),
        d.last_status === undefined ? '-' : String(d.last_status),
        [d.last_error ? clean(d.last_error) : '', d.next_attempt_at !== undefined && d.status === 'pending' ? `next try ${utc(d.next_attempt_at)}` : ''].filter(Boolean).join('; ') || '-',
      ]),
      ['CREATED', 'EVENT', 'STATUS', 'ATTEMPTS', 'HTTP', 'ERROR'],
    ),
  );
}

export async function remove(id: string, opts: Common): Promise<void> {
  const { api, repo } = await session(opts);
  await api.removeWebhook(repo, id);
  if (opts.json) return printJson({ removed: id });
  out(`Removed webhook ${clean(id)} from ${clean(repo)}.`);
}
