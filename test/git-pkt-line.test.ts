/**
 * pkt-line framing and the parsing of upload-pack requests (lib/git/pkt-line.ts, lib/git/upload-request.ts):
 * every packet kind, every malformed length, side-band framing at its bounds, and each bound of a request.
 */
import { describe, expect, it } from 'vitest';
import { MAX_BAND_DATA, PktLineError, bandPacket, parsePktLines, pktLine, sideBand } from '../lib/git/pkt-line.ts';
import {
  MAX_HAVES,
  MAX_SHALLOWS,
  MAX_WANTS,
  UploadRequestError,
  advertisement,
  lsRefs,
  parseUploadRequest,
  protocolVersion,
  type FetchRequest,
} from '../lib/git/upload-request.ts';
import { VERSION } from '../client/version.ts';
import { AGENT } from '../lib/git/upload-request.ts';

const te = new TextEncoder();
const bytes = (s: string) => te.encode(s);
const pkt = (text: string) => `${(te.encode(text).byteLength + 4).toString(16).padStart(4, '0')}${text}`;
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

const fetchOf = (version: 0 | 2, body: string): FetchRequest => {
  const r = parseUploadRequest(version, bytes(body));
  if (r.command !== 'fetch') throw new Error(`not a fetch: ${r.command}`);
  return r.fetch;
};
const refusal = (version: 0 | 2, body: string | Uint8Array): [number, string] => {
  try {
    parseUploadRequest(version, typeof body === 'string' ? bytes(body) : body);
  } catch (e) {
    if (e instanceof UploadRequestError) return [e.status, e.message];
    throw e;
  }
  throw new Error('accepted');
};

describe('pkt-lines', () => {
  it('encodes lines and side-band packets with their lengths', () => {
    expect(new TextDecoder().decode(pktLine('done\n'))).toBe('0009done\n');
    expect(new TextDecoder().decode(bandPacket(2, bytes('hi')))).toBe('0007\u0002hi');
    expect(() => pktLine('x'.repeat(65517))).toThrow(RangeError);
    expect(pktLine('x'.repeat(65516)).byteLength).toBe(65520);
  });

  it('parses lines, flush, delim, response-end and empty packets; upper-case hex too', () => {
    expect(parsePktLines(bytes(`${pkt('a\n')}0000000100020004${pkt('b')}000Ac\ndefg`), 10)).toEqual([
      { kind: 'line', text: 'a' },
      { kind: 'flush' },
      { kind: 'delim' },
      { kind: 'end' },
      { kind: 'line', text: '' },
      { kind: 'line', text: 'b' },
      { kind: 'line', text: 'c\ndefg' },
    ]);
  });

  it('refuses every malformed length, a truncated packet, non-UTF-8 text and too many packets', () => {
    const err = (s: string | Uint8Array, max = 10) => {
      try {
        parsePktLines(typeof s === 'string' ? bytes(s) : s, max);
      } catch (e) {
        expect(e).toBeInstanceOf(PktLineError);
        return (e as Error).message;
      }
      return 'accepted';
    };
    expect(err('0003')).toBe('invalid pkt-line length 3 at byte 0');
    expect(err('00g0')).toBe('invalid pkt-line length at byte 0');
    expect(err('-001')).toBe('invalid pkt-line length at byte 0');
    expect(err('fff1xxxx')).toBe('pkt-line length 65521 over 65520 at byte 0');
    expect(err('ffff')).toBe('pkt-line length 65535 over 65520 at byte 0');
    expect(err('0009don')).toBe('truncated pkt-line at byte 0: length 9, 7 bytes left');
    expect(err(`${pkt('ok')}00`)).toBe('truncated pkt-line length at byte 6');
    expect(err(new Uint8Array([0x30, 0x30, 0x30, 0x36, 0xff, 0xfe]))).toBe('pkt-line at byte 0 is not UTF-8 text');
    expect(err('0000'.repeat(11))).toBe('too many pkt-lines (at most 10)');
  });

  it('frames a stream in side-band packets as full as allowed, across and within pieces, in frames of whole packets', async () => {
    async function* pieces(): AsyncGenerator<Uint8Array | Uint8Array[]> {
      yield new Uint8Array(10).fill(1);
      yield [new Uint8Array(MAX_BAND_DATA * 2).fill(2), new Uint8Array(3).fill(4)];
      yield new Uint8Array(5).fill(3);
    }
    const split = (frames: Uint8Array[]) => {
      const all = Buffer.concat(frames);
      const out: Array<{ length: number; band: number; data: Buffer }> = [];
      for (let at = 0; at < all.byteLength; ) {
        const length = parseInt(all.subarray(at, at + 4).toString('latin1'), 16);
        out.push({ length, band: all[at + 4]!, data: all.subarray(at + 5, at + length) });
        at += length;
      }
      return out;
    };
    const frames: Uint8Array[] = [];
    for await (const f of sideBand(pieces())) frames.push(f);
    // Two whole packets a frame (at least 64 KiB: the response stream passes it on as it is), then the rest.
    expect(frames.map((f) => f.byteLength)).toEqual([131040, 4 + 1 + 18]);
    const packets = split(frames);
    expect(packets.map((p) => [p.length, p.band])).toEqual([
      [65520, 1],
      [65520, 1],
      [23, 1],
    ]);
    const data = Buffer.concat(packets.map((p) => p.data));
    expect(data.byteLength).toBe(10 + 2 * MAX_BAND_DATA + 3 + 5);
    expect([data[9], data[10], data[data.length - 9], data[data.length - 8], data[data.length - 6], data[data.length - 5]]).toEqual([1, 2, 2, 4, 4, 3]);
    const small: Uint8Array[] = [];
    for await (const f of sideBand(pieces(), 2, 995)) small.push(f);
    const smallPackets = split(small);
    expect(Math.max(...smallPackets.map((p) => p.length))).toBe(1000);
    expect(smallPackets.every((p) => p.band === 2)).toBe(true);
    expect(Buffer.concat(smallPackets.map((p) => p.data)).equals(data)).toBe(true);
    // Nothing in, nothing out; exactly a frame's worth, one frame.
    async function* none(): AsyncGenerator<Uint8Array> {}
    const empty: Uint8Array[] = [];
    for await (const f of sideBand(none())) empty.push(f);
    expect(empty).toEqual([]);
    async function* exact(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(2 * MAX_BAND_DATA);
    }
    const one: Uint8Array[] = [];
    for await (const f of sideBand(exact())) one.push(f);
    expect(one.map((f) => f.byteLength)).toEqual([131040]);
  });
});

describe('upload-pack requests', () => {
  it('reads the protocol version git asks for', () => {
    expect([protocolVersion(undefined), protocolVersion('version=2'), protocolVersion('x=1:version=1'), protocolVersion('version=3')]).toEqual([0, 2, 1, 0]);
  });

  it('advertises v0/v1 refs with capabilities, v2 capabilities, and answers ls-refs', () => {
    const v0 = new TextDecoder().decode(advertisement(0, A));
    expect(v0).toBe(
      `001e# service=git-upload-pack\n0000${pkt(`${A} HEAD\0multi_ack thin-pack side-band side-band-64k ofs-delta shallow deepen-since deepen-not deepen-relative no-progress include-tag multi_ack_detailed no-done allow-reachable-sha1-in-want symref=HEAD:refs/heads/main object-format=sha1 agent=${AGENT}\n`)}${pkt(`${A} refs/heads/main\n`)}0000`,
    );
    expect(new TextDecoder().decode(advertisement(1, null))).toBe('001e# service=git-upload-pack\n0000000eversion 1\n0000');
    expect(new TextDecoder().decode(advertisement(2, A))).toBe(
      `000eversion 2\n${pkt(`agent=${AGENT}\n`)}0013ls-refs=unborn\n0012fetch=shallow\n0012server-option\n0017object-format=sha1\n0000`,
    );
    expect(AGENT).toBe(`kr/${VERSION}`);
    const ls = (req: Parameters<typeof lsRefs>[0], head: string | null) => new TextDecoder().decode(lsRefs(req, head));
    expect(ls({ symrefs: true, peel: true, unborn: true, prefixes: ['HEAD', 'refs/heads/'] }, A)).toBe(
      `${pkt(`${A} HEAD symref-target:refs/heads/main\n`)}${pkt(`${A} refs/heads/main\n`)}0000`,
    );
    expect(ls({ symrefs: true, peel: false, unborn: true, prefixes: [] }, null)).toBe(`${pkt('unborn HEAD symref-target:refs/heads/main\n')}0000`);
    expect(ls({ symrefs: false, peel: false, unborn: false, prefixes: ['refs/tags/'] }, A)).toBe('0000');
  });

  it('parses a v0 request: capabilities of the first want, shallow and deepen lines, a round or done', () => {
    const r = fetchOf(0, `${pkt(`want ${A} multi_ack_detailed no-done side-band-64k deepen-relative agent=git/2.39\n`)}${pkt(`want ${B}\n`)}${pkt(`shallow ${B}\n`)}${pkt('deepen 3\n')}0000${pkt(`have ${B}\n`)}${pkt('done\n')}`);
    expect(r).toMatchObject({ version: 0, wants: [A, B], shallows: [B], depth: 3, deepenRelative: true, haves: [B], done: true, negotiates: true, sideBand: 2, multiAck: 2, noDone: true });
    expect(fetchOf(0, `${pkt(`want ${A} side-band\n`)}${pkt('deepen-since 1700000000\n')}${pkt('deepen-not refs/heads/main\n')}0000`)).toMatchObject({
      negotiates: false,
      sideBand: 1,
      multiAck: 0,
      deepenSince: 1700000000,
      deepenNot: ['refs/heads/main'],
    });
    expect(parseUploadRequest(0, bytes(''))).toEqual({ command: 'none' });
    expect(parseUploadRequest(0, bytes('0000'))).toEqual({ command: 'none' });
  });

  it('parses v2 ls-refs and fetch', () => {
    expect(parseUploadRequest(2, bytes(`${pkt('command=ls-refs\n')}${pkt('agent=git/2\n')}0001${pkt('symrefs\n')}${pkt('ref-prefix HEAD\n')}0000`))).toEqual({
      command: 'ls-refs',
      lsRefs: { symrefs: true, peel: false, unborn: false, prefixes: ['HEAD'] },
    });
    const f = fetchOf(2, `${pkt('command=fetch\n')}${pkt('object-format=sha1\n')}0001${pkt('thin-pack\n')}${pkt('no-progress\n')}${pkt(`want ${A}\n`)}${pkt(`have ${B}\n`)}${pkt('deepen 1\n')}0000`);
    expect(f).toMatchObject({ version: 2, wants: [A], haves: [B], depth: 1, done: false, noProgress: true, sideBand: 2 });
  });

  it('refuses what the protocol does not allow, and past every bound', () => {
    const fetch = (...args: string[]) => `${pkt('command=fetch\n')}0001${args.map((a) => pkt(`${a}\n`)).join('')}0000`;
    expect(refusal(2, fetch(`want ${A}`, 'deepen 2147483648'))).toEqual([400, 'invalid deepen: 2147483648 (a depth is 1 to 2147483647)']);
    expect(refusal(2, fetch(`want ${A}`, 'deepen 99999999999'))).toEqual([400, 'invalid deepen: 99999999999 (a depth is 1 to 2147483647)']);
    expect(refusal(2, fetch(`want ${A}`, 'deepen -1'))).toEqual([400, 'invalid deepen: -1 (a depth is 1 to 2147483647)']);
    expect(fetchOf(2, fetch(`want ${A}`, 'deepen 2147483647')).depth).toBe(2147483647);
    expect(refusal(2, fetch(`want ${A}`, 'deepen 1', 'deepen-since 5'))).toEqual([400, 'deepen and deepen-since (or deepen-not) cannot be used together']);
    expect(refusal(2, fetch(`want ${A}`, 'filter blob:none'))).toEqual([400, 'unexpected fetch argument "filter blob:none"']);
    expect(refusal(2, fetch(`want ${A.toUpperCase()}`))).toEqual([400, `invalid object id in "want ${A.toUpperCase()}"`]);
    expect(refusal(2, `${pkt('command=fetch\n')}${pkt('object-format=sha256\n')}0000`)).toEqual([400, 'unsupported object-format=sha256']);
    expect(refusal(2, `${pkt('command=fetch\n')}0001${pkt(`want ${A}\n`)}`)).toEqual([400, 'the request does not end with a flush packet']);
    expect(refusal(2, `${pkt(`want ${A}\n`)}0000`)).toEqual([400, 'a v2 request starts with "command=<name>"']);
    expect(refusal(0, `${pkt(`want ${A}\n`)}0000${pkt('done\n')}${pkt(`have ${A}\n`)}`)).toEqual([400, 'lines after "done"']);
    expect(refusal(0, `${pkt(`want ${A}\n`)}0000${pkt(`have ${A}\n`)}`)).toEqual([400, 'the have section ends with neither "done" nor a flush packet']);
    expect(refusal(0, `0000${pkt(`have ${A}\n`)}0000`)).toEqual([400, 'have lines without a want line']);
    expect(refusal(0, `${pkt(`want ${A}\n`)}0001`)).toEqual([400, 'unexpected special packet in the want section']);
    // The bounds.
    expect(refusal(2, fetch(...Array.from({ length: MAX_WANTS + 1 }, () => `want ${A}`)))).toEqual([413, `too many want lines (at most ${MAX_WANTS})`]);
    expect(refusal(2, fetch(`want ${A}`, ...Array.from({ length: MAX_HAVES + 1 }, () => `have ${B}`)))).toEqual([413, `too many have lines (at most ${MAX_HAVES})`]);
    expect(fetchOf(2, fetch(`want ${A}`, ...Array.from({ length: MAX_HAVES }, () => `have ${B}`))).haves).toHaveLength(MAX_HAVES);
    expect(refusal(0, `${pkt(`want ${A}\n`)}${Array.from({ length: MAX_SHALLOWS + 1 }, () => pkt(`shallow ${B}\n`)).join('')}0000`)).toEqual([
      413,
      `too many shallow lines (at most ${MAX_SHALLOWS})`,
    ]);
    const [status, message] = refusal(2, fetch(`want ${A}`, ...Array.from({ length: 100_000 }, () => `have ${B}`)));
    expect(status).toBe(413);
    expect(message).toMatch(/^too many pkt-lines \(at most \d+\)$/);
  });
});
