/** `kr links <page>`: what a page links to, and the pages that link to it, as the server resolves them now. */
import type { LinksResponse } from '../../schema/wire/links.ts';
import { out, paint, printJson, table } from '../../client/output.ts';
import { pageTarget } from './inspect.ts';

interface LinksOptions {
  repo?: string;
  type?: string;
  json?: boolean;
}

/** How each outgoing link resolves, in words. */
function resolution(l: LinksResponse['outgoing'][number]): string {
  if (l.path !== undefined) return `→ ${l.path}`;
  if (l.ambiguous) return 'ambiguous: a page of that slug under several types ([[type/slug]] picks one)';
  return 'unresolved: no such page';
}

export async function links(arg: string, opts: LinksOptions): Promise<void> {
  const { path, session, repo } = await pageTarget(arg, opts);
  const res = await session.api.links(repo, path);
  if (opts.json) return printJson(res);
  const p = paint();
  out(`${p.bold(path)} in ${repo}`);
  out();
  if (res.outgoing.length === 0) out('Links to: none');
  else {
    out(`Links to (${res.outgoing.length}, in the order they appear):`);
    out(table(res.outgoing.map((l) => [`  ${l.target}`, resolution(l)])));
  }
  out();
  const more = res.incoming_more ? ` of ${res.incoming.length + res.incoming_more}` : '';
  if (res.incoming.length === 0) out('Linked from: no page');
  else {
    out(`Linked from (${res.incoming.length}${more}):`);
    out(table(res.incoming.map((l) => [`  ${l.path}`, l.title ?? ''])));
  }
  if (res.incoming_more) out(p.dim(`(${res.incoming_more} more pages link to it; the server lists the first ${res.incoming.length} by path)`));
}
