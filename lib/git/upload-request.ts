/**
 * The requests of git's upload-pack service over smart HTTP (gitprotocol-http, gitprotocol-pack,
 * gitprotocol-v2), parsed and bounded: what a client may ask, and what it is told first (the reference
 * advertisement, the v2 capabilities, `ls-refs`). Negotiation and the pack itself are lib/git/upload-pack.ts.
 * Web-standard only: the Worker parses a request before its repository's Durable Object answers it.
 */
import { FLUSH, PktLineError, parsePktLines, pktLine, type Pkt } from './pkt-line.ts';
import { concatBytes } from '../util/bytes.ts';
import { HttpError } from '../core/errors.ts';
import { R } from '../core/refusals.ts';

/** What `agent=` names (the server's version). */
export const AGENT = 'kr/0.1.0';
/** The branch every repository has, and what HEAD points at. */
export const MAIN_REF = 'refs/heads/main';

/** `want` lines a request may hold (a repository has one branch: a client asks for it, a few times at most). */
export const MAX_WANTS = 256;
/** `have` lines a request may hold (git's client sends rounds that double from 16, each with what was common). */
export const MAX_HAVES = 32_768;
/** `shallow` lines a request may hold (a shallow clone's boundary: one commit per branch it fetched). */
export const MAX_SHALLOWS = 1_024;
/** `deepen-not` lines and `ref-prefix` lines, each. */
export const MAX_REF_ARGS = 64;
/** The largest request body, as sent and once inflated (a round of MAX_HAVES haves is 1.6 MB). */
export const MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** `deepen 2147483647` is git's "infinite" (`--unshallow`); anything larger is not a depth. */
export const INFINITE_DEPTH = 0x7fffffff;

/** Protocol version a request speaks: v1 answers as v0 after saying `version 1`. */
export type ProtocolVersion = 0 | 1 | 2;

/** A `fetch` (v2) or the v0/v1 want/have exchange, with its capabilities. Plain data (it crosses to the Durable Object as JSON). */
export interface FetchRequest {
  version: ProtocolVersion;
  wants: string[];
  haves: string[];
  /** The client's shallow boundary (`shallow` lines). */
  shallows: string[];
  /** `deepen N` (0: none; INFINITE_DEPTH: unshallow everything). */
  depth: number;
  deepenRelative: boolean;
  /** `deepen-since` (Unix seconds), or null. */
  deepenSince: number | null;
  /** `deepen-not` references. */
  deepenNot: string[];
  /** The client said `done`. */
  done: boolean;
  /**
   * v0: the request held a have section (packets after the wants' flush). Without one, a deepening client only
   * asks for the shallow list: git's upload-pack answers it and nothing else.
   */
  negotiates: boolean;
  /** v0 capabilities: side-band (1) or side-band-64k (2), none (0). v2 always uses side-band-64k. */
  sideBand: 0 | 1 | 2;
  /** v0: multi_ack (1) or multi_ack_detailed (2), none (0). */
  multiAck: 0 | 1 | 2;
  noDone: boolean;
  noProgress: boolean;
}

/** A v2 `ls-refs`. */
export interface LsRefsRequest {
  symrefs: boolean;
  peel: boolean;
  unborn: boolean;
  prefixes: string[];
}

export type UploadRequest = { command: 'fetch'; fetch: FetchRequest } | { command: 'ls-refs'; lsRefs: LsRefsRequest } | { command: 'none' };

/**
 * A request the protocol refuses, with the HTTP status it gets: 400 malformed (`invalid_git_request`), 413
 * over a bound (`git_request_too_large`).
 */
export class UploadRequestError extends HttpError {
  constructor(status: 400 | 413, message: string) {
    const r = status === 413 ? R.git_request_too_large : R.invalid_git_request;
    super(r.status, r.code, message);
  }
}

/** The protocol version a `Git-Protocol` header asks for (`version=2`; colon-separated key=value pairs). */
export function protocolVersion(header: string | null | undefined): ProtocolVersion {
  let v: ProtocolVersion = 0;
  for (const part of (header ?? '').split(':')) {
    const m = /^version=(\d+)$/.exec(part.trim());
    if (m) {
      const n = Number(m[1]);
      if (n === 1 || n === 2) v = Math.max(v, n) as ProtocolVersion;
    }
  }
  return v;
}

const V0_CAPS = [
  'multi_ack',
  'thin-pack',
  'side-band',
  'side-band-64k',
  'ofs-delta',
  'shallow',
  'deepen-since',
  'deepen-not',
  'deepen-relative',
  'no-progress',
  'include-tag',
  'multi_ack_detailed',
  'no-done',
  'allow-reachable-sha1-in-want',
  `symref=HEAD:${MAIN_REF}`,
  'object-format=sha1',
  `agent=${AGENT}`,
].join(' ');

/**
 * `GET info/refs?service=git-upload-pack`: v0/v1, the service line and the references (HEAD and the branch,
 * with the capabilities after the first); v2, the capability advertisement (git's http-backend sends v2's
 * without the service line).
 */
export function advertisement(version: ProtocolVersion, head: string | null): Uint8Array {
  if (version === 2) {
    return concatBytes([
      pktLine('version 2\n'),
      pktLine(`agent=${AGENT}\n`),
      pktLine('ls-refs=unborn\n'),
      pktLine('fetch=shallow\n'),
      pktLine('server-option\n'),
      pktLine('object-format=sha1\n'),
      FLUSH,
    ]);
  }
  const parts = [pktLine('# service=git-upload-pack\n'), FLUSH];
  if (version === 1) parts.push(pktLine('version 1\n'));
  // An empty repository advertises nothing (as git's upload-pack does): the client clones it empty.
  if (head) parts.push(pktLine(`${head} HEAD\0${V0_CAPS}\n`), pktLine(`${head} ${MAIN_REF}\n`));
  parts.push(FLUSH);
  return concatBytes(parts);
}

/** v2 `ls-refs`: HEAD (a symref to the branch) and the branch, those the prefixes name; an empty repository's HEAD as `unborn` when asked. */
export function lsRefs(req: LsRefsRequest, head: string | null): Uint8Array {
  const wanted = (name: string) => req.prefixes.length === 0 || req.prefixes.some((p) => name.startsWith(p));
  const parts: Uint8Array[] = [];
  const target = req.symrefs ? ` symref-target:${MAIN_REF}` : '';
  if (wanted('HEAD')) {
    if (head) parts.push(pktLine(`${head} HEAD${target}\n`));
    else if (req.unborn) parts.push(pktLine(`unborn HEAD${target}\n`));
  }
  if (head && wanted(MAIN_REF)) parts.push(pktLine(`${head} ${MAIN_REF}\n`));
  parts.push(FLUSH);
  return concatBytes(parts);
}

const OID = /^[0-9a-f]{40}$/;

function oidArg(line: string, prefix: string): string {
  const oid = line.slice(prefix.length);
  if (!OID.test(oid)) throw new UploadRequestError(400, `invalid object id in "${clip(line)}"`);
  return oid;
}

/** A line as it goes into an error message: at most 80 characters, controls shown as `?`. */
const clip = (line: string) => {
  const s = line.replace(/[\u0000-\u001f\u007f]/g, '?');
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
};

function depthArg(line: string): number {
  const v = line.slice('deepen '.length);
  if (!/^[0-9]{1,10}$/.test(v) || Number(v) < 1 || Number(v) > INFINITE_DEPTH) {
    throw new UploadRequestError(400, `invalid deepen: ${clip(v)} (a depth is 1 to ${INFINITE_DEPTH})`);
  }
  return Number(v);
}

function sinceArg(line: string): number {
  const v = line.slice('deepen-since '.length);
  if (!/^[0-9]{1,12}$/.test(v)) throw new UploadRequestError(400, `invalid deepen-since: ${clip(v)}`);
  return Number(v);
}

/** Counts one more line of a kind against its bound. */
function bound(list: unknown[], max: number, what: string): void {
  if (list.length >= max) throw new UploadRequestError(413, `too many ${what} lines (at most ${max})`);
}

function emptyFetch(version: ProtocolVersion): FetchRequest {
  return {
    version,
    wants: [],
    haves: [],
    shallows: [],
    depth: 0,
    deepenRelative: false,
    deepenSince: null,
    deepenNot: [],
    done: false,
    negotiates: true,
    sideBand: version === 2 ? 2 : 0,
    multiAck: 0,
    noDone: false,
    noProgress: false,
  };
}

/** The lines that set the shallow boundary, shared by v0's want section and v2's fetch arguments. */
function shallowArg(req: FetchRequest, line: string): boolean {
  if (line.startsWith('shallow ')) {
    bound(req.shallows, MAX_SHALLOWS, 'shallow');
    req.shallows.push(oidArg(line, 'shallow '));
  } else if (line.startsWith('deepen ')) req.depth = depthArg(line);
  else if (line === 'deepen-relative') req.deepenRelative = true;
  else if (line.startsWith('deepen-since ')) req.deepenSince = sinceArg(line);
  else if (line.startsWith('deepen-not ')) {
    bound(req.deepenNot, MAX_REF_ARGS, 'deepen-not');
    req.deepenNot.push(line.slice('deepen-not '.length));
  } else return false;
  return true;
}

function checkDeepen(req: FetchRequest): void {
  if (req.depth > 0 && (req.deepenSince !== null || req.deepenNot.length > 0)) {
    throw new UploadRequestError(400, 'deepen and deepen-since (or deepen-not) cannot be used together');
  }
}

/**
 * The body of `POST git-upload-pack`, already inflated, as the request it is. `maxPackets` bounds the number
 * of packets read (what the line bounds allow, and a few more).
 */
export function parseUploadRequest(version: ProtocolVersion, body: Uint8Array): UploadRequest {
  let pkts: Pkt[];
  try {
    pkts = parsePktLines(body, MAX_WANTS + MAX_HAVES + MAX_SHALLOWS + 2 * MAX_REF_ARGS + 64);
  } catch (e) {
    if (e instanceof PktLineError) throw new UploadRequestError(e.message.startsWith('too many') ? 413 : 400, e.message);
    throw e;
  }
  return version === 2 ? parseV2(pkts) : parseV0(version, pkts);
}

/** v0/v1: want lines (the first with capabilities), shallow and deepen lines, a flush; then have lines, ending with a flush (a round) or `done`. */
function parseV0(version: ProtocolVersion, pkts: Pkt[]): UploadRequest {
  const req = emptyFetch(version);
  let i = 0;
  for (; i < pkts.length; i++) {
    const p = pkts[i]!;
    if (p.kind === 'flush') break;
    if (p.kind !== 'line') throw new UploadRequestError(400, 'unexpected special packet in the want section');
    const line = p.text;
    if (line.startsWith('want ')) {
      bound(req.wants, MAX_WANTS, 'want');
      const [oid, ...caps] = line.slice(5).split(' ');
      req.wants.push(oidArg(`want ${oid}`, 'want '));
      if (req.wants.length === 1) {
        const has = new Set(caps);
        req.sideBand = has.has('side-band-64k') ? 2 : has.has('side-band') ? 1 : 0;
        req.multiAck = has.has('multi_ack_detailed') ? 2 : has.has('multi_ack') ? 1 : 0;
        req.noDone = has.has('no-done');
        req.noProgress = has.has('no-progress');
        req.deepenRelative = has.has('deepen-relative');
        for (const c of caps) if (c.startsWith('object-format=') && c !== 'object-format=sha1') throw new UploadRequestError(400, `unsupported ${c}`);
      }
    } else if (!shallowArg(req, line)) {
      throw new UploadRequestError(400, `unexpected line in the want section: "${clip(line)}"`);
    }
  }
  if (i >= pkts.length) {
    if (req.wants.length === 0 && pkts.length === 0) return { command: 'none' };
    throw new UploadRequestError(400, 'the want section does not end with a flush packet');
  }
  const rest = pkts.slice(i + 1);
  // No want at all: the client wants nothing (git's upload-pack then answers nothing).
  if (req.wants.length === 0) {
    if (rest.length === 0) return { command: 'none' };
    throw new UploadRequestError(400, 'have lines without a want line');
  }
  checkDeepen(req);
  req.negotiates = rest.length > 0;
  for (let k = 0; k < rest.length; k++) {
    const p = rest[k]!;
    if (p.kind === 'line' && p.text.startsWith('have ')) {
      bound(req.haves, MAX_HAVES, 'have');
      req.haves.push(oidArg(p.text, 'have '));
    } else if (p.kind === 'line' && p.text === 'done') {
      req.done = true;
      if (k !== rest.length - 1) throw new UploadRequestError(400, 'lines after "done"');
    } else if (p.kind === 'flush') {
      // The end of a round: a stateless request ends there.
      if (k !== rest.length - 1) throw new UploadRequestError(400, 'lines after the end of a round');
    } else {
      throw new UploadRequestError(400, `unexpected ${p.kind === 'line' ? `line "${clip(p.text)}"` : 'special packet'} in the have section`);
    }
  }
  if (req.negotiates && !req.done && rest[rest.length - 1]!.kind !== 'flush') {
    throw new UploadRequestError(400, 'the have section ends with neither "done" nor a flush packet');
  }
  return { command: 'fetch', fetch: req };
}

/** v2: `command=<name>`, capability lines, a delimiter, the command's arguments, a flush. */
function parseV2(pkts: Pkt[]): UploadRequest {
  if (pkts.length === 0 || (pkts.length === 1 && pkts[0]!.kind === 'flush')) return { command: 'none' };
  const first = pkts[0]!;
  if (first.kind !== 'line' || !first.text.startsWith('command=')) throw new UploadRequestError(400, 'a v2 request starts with "command=<name>"');
  const command = first.text.slice('command='.length);
  if (command !== 'fetch' && command !== 'ls-refs') throw new UploadRequestError(400, `unknown command "${clip(command)}"`);
  let i = 1;
  for (; i < pkts.length; i++) {
    const p = pkts[i]!;
    if (p.kind === 'delim' || p.kind === 'flush') break;
    if (p.kind !== 'line') throw new UploadRequestError(400, 'unexpected special packet among the capabilities');
    const cap = p.text;
    if (cap.startsWith('object-format=') && cap !== 'object-format=sha1') throw new UploadRequestError(400, `unsupported ${cap}`);
    if (!/^(agent|object-format|server-option|session-id)(=|$)/.test(cap)) throw new UploadRequestError(400, `unknown capability "${clip(cap)}"`);
  }
  const end = pkts.findIndex((p, k) => k >= i && p.kind === 'flush');
  if (end < 0) throw new UploadRequestError(400, 'the request does not end with a flush packet');
  if (end !== pkts.length - 1) throw new UploadRequestError(400, 'packets after the request\'s flush');
  const args: string[] = [];
  for (let k = pkts[i]!.kind === 'delim' ? i + 1 : i; k < end; k++) {
    const p = pkts[k]!;
    if (p.kind !== 'line') throw new UploadRequestError(400, 'unexpected special packet among the arguments');
    args.push(p.text);
  }
  if (command === 'ls-refs') {
    const req: LsRefsRequest = { symrefs: false, peel: false, unborn: false, prefixes: [] };
    for (const a of args) {
      if (a === 'symrefs') req.symrefs = true;
      else if (a === 'peel') req.peel = true;
      else if (a === 'unborn') req.unborn = true;
      else if (a.startsWith('ref-prefix ')) {
        // git's own client sends a few; past the bound, every reference is listed (as git does).
        if (req.prefixes.length < MAX_REF_ARGS) req.prefixes.push(a.slice('ref-prefix '.length));
        else req.prefixes = [];
      } else throw new UploadRequestError(400, `unexpected ls-refs argument "${clip(a)}"`);
    }
    return { command: 'ls-refs', lsRefs: req };
  }
  const req = emptyFetch(2);
  for (const a of args) {
    if (a.startsWith('want ')) {
      bound(req.wants, MAX_WANTS, 'want');
      req.wants.push(oidArg(a, 'want '));
    } else if (a.startsWith('have ')) {
      bound(req.haves, MAX_HAVES, 'have');
      req.haves.push(oidArg(a, 'have '));
    } else if (a === 'done') req.done = true;
    else if (a === 'no-progress') req.noProgress = true;
    else if (a === 'thin-pack' || a === 'ofs-delta' || a === 'include-tag') {
      // Whole objects are sent, and there are no tags: nothing to do.
    } else if (!shallowArg(req, a)) throw new UploadRequestError(400, `unexpected fetch argument "${clip(a)}"`);
  }
  checkDeepen(req);
  return { command: 'fetch', fetch: req };
}
