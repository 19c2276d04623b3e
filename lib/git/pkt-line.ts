/**
 * git's pkt-line framing (gitprotocol-common): each line is four hex digits giving its whole length (the four
 * digits included), then its bytes. `0000` is a flush packet, `0001` a delimiter (protocol v2), `0002` the end of
 * a response (v2); `0003` is never valid, and no packet is longer than 65520 bytes. Web-standard only.
 */

/** The longest packet, its four length digits included (LARGE_PACKET_MAX). */
export const MAX_PKT = 65520;
/** The most data one side-band packet carries: a packet, less its length and its band byte. */
export const MAX_BAND_DATA = MAX_PKT - 5;

export const FLUSH = new Uint8Array([0x30, 0x30, 0x30, 0x30]);
export const DELIM = new Uint8Array([0x30, 0x30, 0x30, 0x31]);

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const HEX = '0123456789abcdef';

/** A request that is not a well-formed sequence of pkt-lines, or says what the protocol does not allow. */
export class PktLineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PktLineError';
  }
}

/** Writes `n` as four lower-case hex digits into `out` at `at`. */
function putLength(out: Uint8Array, at: number, n: number): void {
  out[at] = HEX.charCodeAt((n >> 12) & 15);
  out[at + 1] = HEX.charCodeAt((n >> 8) & 15);
  out[at + 2] = HEX.charCodeAt((n >> 4) & 15);
  out[at + 3] = HEX.charCodeAt(n & 15);
}

/** One packet holding `text` (a line: callers end it with `\n`). */
export function pktLine(text: string): Uint8Array {
  const data = encoder.encode(text);
  if (data.byteLength + 4 > MAX_PKT) throw new RangeError('pkt-line too long');
  const out = new Uint8Array(data.byteLength + 4);
  putLength(out, 0, out.byteLength);
  out.set(data, 4);
  return out;
}

/** One side-band packet: `band` (1 pack data, 2 progress, 3 error) then `data` (at most MAX_BAND_DATA bytes). */
export function bandPacket(band: number, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(data.byteLength + 5);
  putLength(out, 0, out.byteLength);
  out[4] = band;
  out.set(data, 5);
  return out;
}

/** A parsed packet: a line's text (its one trailing newline removed), or one of the special packets. */
export type Pkt = { kind: 'line'; text: string } | { kind: 'flush' } | { kind: 'delim' } | { kind: 'end' };

/** Every packet of `body`, in order. PktLineError for anything malformed; `maxPackets` bounds their number. */
export function parsePktLines(body: Uint8Array, maxPackets: number): Pkt[] {
  const out: Pkt[] = [];
  let at = 0;
  while (at < body.byteLength) {
    if (out.length >= maxPackets) throw new PktLineError(`too many pkt-lines (at most ${maxPackets})`);
    if (body.byteLength - at < 4) throw new PktLineError(`truncated pkt-line length at byte ${at}`);
    let n = 0;
    for (let k = 0; k < 4; k++) {
      const c = body[at + k]!;
      const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
      if (d < 0) throw new PktLineError(`invalid pkt-line length at byte ${at}`);
      n = n * 16 + d;
    }
    if (n === 0) out.push({ kind: 'flush' });
    else if (n === 1) out.push({ kind: 'delim' });
    else if (n === 2) out.push({ kind: 'end' });
    else if (n === 3) throw new PktLineError(`invalid pkt-line length 3 at byte ${at}`);
    else if (n > MAX_PKT) throw new PktLineError(`pkt-line length ${n} over ${MAX_PKT} at byte ${at}`);
    else if (at + n > body.byteLength) throw new PktLineError(`truncated pkt-line at byte ${at}: length ${n}, ${body.byteLength - at} bytes left`);
    else {
      let text: string;
      try {
        text = decoder.decode(body.subarray(at + 4, at + n));
      } catch {
        throw new PktLineError(`pkt-line at byte ${at} is not UTF-8 text`);
      }
      out.push({ kind: 'line', text: text.endsWith('\n') ? text.slice(0, -1) : text });
    }
    at += n < 4 ? 4 : n;
  }
  return out;
}

/** Bytes a frame of side-band packets holds at least: what lib/framework/http/stream.ts hands on without gathering. */
const FRAME_BYTES = 64 * 1024;

/**
 * Frames a stream of bytes as side-band packets of `band`, each as full as `max` allows. The bytes are copied
 * once, into frames of whole packets of at least FRAME_BYTES (so the response stream passes them on as they
 * are), each handed out when full, and what is left at the end. A piece may be a group of byte arrays.
 */
export async function* sideBand(
  pieces: AsyncIterable<Uint8Array | Uint8Array[]>,
  band = 1,
  max = MAX_BAND_DATA,
): AsyncGenerator<Uint8Array, void, void> {
  const packet = max + 5;
  const frameBytes = Math.ceil(FRAME_BYTES / packet) * packet;
  let frame = new Uint8Array(frameBytes);
  /** Where the current packet starts, and where its next byte goes. */
  let head = 0;
  let fill = 5;
  const close = () => {
    putLength(frame, head, fill - head);
    frame[head + 4] = band;
  };
  const add = function* (piece: Uint8Array): Generator<Uint8Array, void, void> {
    let at = 0;
    while (at < piece.byteLength) {
      const n = Math.min(piece.byteLength - at, head + packet - fill);
      frame.set(piece.subarray(at, at + n), fill);
      fill += n;
      at += n;
      if (fill === head + packet) {
        close();
        head += packet;
        fill = head + 5;
        if (head === frameBytes) {
          yield frame;
          frame = new Uint8Array(frameBytes);
          head = 0;
          fill = 5;
        }
      }
    }
  };
  for await (const piece of pieces) {
    if (Array.isArray(piece)) for (const p of piece) yield* add(p);
    else yield* add(piece);
  }
  if (fill > head + 5) {
    close();
    yield frame.subarray(0, fill);
  } else if (head > 0) yield frame.subarray(0, head);
}
