import type { ScriptArgument } from '../scripts/script-runner.js';

const CR = 13;
const LF = 10;
const DOLLAR = 36;
const ASTERISK = 42;
const ZERO = 48;
// Copied byte by byte in JavaScript up to this length (an ASCII text): a native call costs more.
const COPY_IN_SCRIPT_MAX = 64;
// Requests are cut from chunks of this size (a larger request gets memory of its own): a view on a
// chunk costs less than `Buffer.allocUnsafe`'s own pooling, and a chunk lives as long as a request
// cut from it is referenced (until it is written and its command settled).
const CHUNK_BYTES = 16 * 1024;
// Script bodies whose last request is remembered, per encoder: a client runs a handful of scripts.
const REMEMBERED_BODIES = 32;

let chunk = Buffer.allocUnsafeSlow(CHUNK_BYTES);
let chunkUsed = 0;

// `size` bytes for one request, nobody else's.
function take(size: number): Buffer {
  if (size > CHUNK_BYTES / 2) return Buffer.allocUnsafeSlow(size);
  if (size > CHUNK_BYTES - chunkUsed) {
    chunk = Buffer.allocUnsafeSlow(CHUNK_BYTES);
    chunkUsed = 0;
  }
  const taken = chunk.subarray(chunkUsed, chunkUsed + size);
  // Each request starts on an 8-byte boundary, as Node's own pool aligns them.
  chunkUsed = Math.min(CHUNK_BYTES, (chunkUsed + size + 7) & ~7);
  return taken;
}

// Bytes [start, end) of `from` to `wire` at `offset`. Requests cut from the current chunk are copied
// within it (`copyWithin` allocates nothing; `Buffer#copy` of a part of a buffer makes a view of it).
function copyBytes(from: Buffer, start: number, end: number, wire: Buffer, offset: number): void {
  const base = chunk.byteOffset;
  if (from.buffer === chunk.buffer && wire.buffer === chunk.buffer) {
    chunk.copyWithin(wire.byteOffset - base + offset, from.byteOffset - base + start, from.byteOffset - base + end);
    return;
  }
  for (let i = start; i < end; i += 1) wire[offset + i - start] = from[i] as number;
}

function decimalDigits(value: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits += 1;
  return digits;
}

// The decimal digits of `value` (a safe integer ≥ 0) ending just before `end`.
function writeDigits(wire: Buffer, end: number, value: number): void {
  let at = end;
  let rest = value;
  do {
    at -= 1;
    wire[at] = ZERO + (rest % 10);
    rest = Math.floor(rest / 10);
  } while (rest > 0);
}

// A length prefix (`*<count>\r\n` or `$<bytes>\r\n`) at `offset`; returns the offset after it.
function writePrefix(wire: Buffer, offset: number, marker: number, value: number): number {
  wire[offset] = marker;
  const end = offset + 1 + decimalDigits(value);
  writeDigits(wire, end, value);
  wire[end] = CR;
  wire[end + 1] = LF;
  return end + 2;
}

// A part of a request as it is encoded: a whole number ≥ 0 (written as digits, with no string made
// for them), or a string.
type Part = string | number;

function partOf(given: ScriptArgument): Part {
  // ioredis' own conversion of any other number: its decimal string.
  return typeof given === 'number' && !(Number.isSafeInteger(given) && given >= 0) ? String(given) : given;
}

function contentBytes(part: Part): number {
  return typeof part === 'number' ? decimalDigits(part) : Buffer.byteLength(part, 'utf8');
}

// A whole bulk string (`$<bytes>\r\n<content>\r\n`) at `offset`; returns the offset after it.
function writeBulk(wire: Buffer, offset: number, part: Part, bytes: number): number {
  const at = writePrefix(wire, offset, DOLLAR, bytes);
  if (typeof part === 'number') {
    writeDigits(wire, at + bytes, part);
  } else if (bytes === part.length && bytes <= COPY_IN_SCRIPT_MAX) {
    // As many bytes as UTF-16 units: every unit is ASCII, one byte each.
    for (let i = 0; i < bytes; i += 1) wire[at + i] = part.charCodeAt(i);
  } else if (bytes > 0) {
    wire.write(part, at, bytes, 'utf8');
  }
  wire[at + bytes] = CR;
  wire[at + bytes + 1] = LF;
  return at + bytes + 2;
}

// The last request sent with one script body: its parts and where each part's bulk string starts.
interface LastRequest {
  readonly parts: Part[];
  wire: Buffer;
  // starts[i]: where part i begins in `wire`; starts[parts.length]: the end. Two arrays in turn.
  starts: Int32Array;
  spare: Int32Array;
}

// Per part of the request being encoded: its content's byte length, or −1 when it is copied from the
// last request (reused: nothing is allocated for them).
let contentLengths = new Int32Array(32);
const partsOfRequest: Part[] = [];

/**
 * Encodes script requests (`EVALSHA <sha> …` / `EVAL <script> …`) in the protocol (RESP) as ioredis
 * writes them: an array of bulk strings, each argument as its UTF-8 bytes, a number as its decimal
 * string. Its cache only saves work: any requests may share one encoder.
 *
 * Calls of one script repeat most of their arguments (the keys of the same lock, the TTL, the
 * constants): each part equal to the same part of the last request with the same body is copied
 * from that request's bytes, runs of them in one copy, instead of being measured and encoded again.
 * A request equal to that one in every part (a Redlock round sends one to each master) gets the same
 * bytes back.
 */
export class RespRequestEncoder {
  readonly #last = new Map<string, LastRequest>();

  /**
   * The bytes of `name body ...args`: a `Buffer` nobody writes to once returned (the same one as
   * the last call's, when this request is equal to it in every part).
   */
  encode(name: string, body: string, args: readonly ScriptArgument[]): Buffer {
    const count = args.length + 2;
    if (contentLengths.length < count) contentLengths = new Int32Array(count * 2);
    const last = this.#last.get(body);
    const comparable = last !== undefined && last.parts.length === count ? last : undefined;
    let size = decimalDigits(count) + 3;
    let same = comparable !== undefined;
    for (let i = 0; i < count; i += 1) {
      const part = i === 0 ? name : i === 1 ? body : partOf(args[i - 2] as ScriptArgument);
      partsOfRequest[i] = part;
      if (comparable !== undefined && comparable.parts[i] === part) {
        contentLengths[i] = -1;
        size += (comparable.starts[i + 1] as number) - (comparable.starts[i] as number);
      } else {
        same = false;
        const bytes = contentBytes(part);
        contentLengths[i] = bytes;
        size += decimalDigits(bytes) + bytes + 5;
      }
    }
    if (same && comparable !== undefined) {
      // The very request just encoded (Redlock sends one to every master): its bytes again, as
      // nobody writes to them.
      for (let k = 0; k < count; k += 1) partsOfRequest[k] = 0;
      return comparable.wire;
    }
    const wire = take(size);
    const entry = comparable ?? this.#remember(body, count);
    const starts = entry.spare;
    let offset = writePrefix(wire, 0, ASTERISK, count);
    let i = 0;
    while (i < count) {
      if (contentLengths[i] === -1 && comparable !== undefined) {
        // A run of parts equal to the last request's: one copy.
        let end = i + 1;
        while (end < count && contentLengths[end] === -1) end += 1;
        const from = comparable.starts[i] as number;
        for (let k = i; k < end; k += 1) starts[k] = offset + ((comparable.starts[k] as number) - from);
        const until = comparable.starts[end] as number;
        copyBytes(comparable.wire, from, until, wire, offset);
        offset += until - from;
        i = end;
      } else {
        starts[i] = offset;
        offset = writeBulk(wire, offset, partsOfRequest[i] as Part, contentLengths[i] as number);
        i += 1;
      }
    }
    starts[count] = offset;
    for (let k = 0; k < count; k += 1) {
      entry.parts[k] = partsOfRequest[k] as Part;
      partsOfRequest[k] = 0;
    }
    entry.spare = entry.starts;
    entry.starts = starts;
    entry.wire = wire;
    return wire;
  }

  #remember(body: string, count: number): LastRequest {
    if (this.#last.size >= REMEMBERED_BODIES) this.#last.clear();
    const entry: LastRequest = {
      parts: new Array<Part>(count).fill(0),
      wire: Buffer.alloc(0),
      starts: new Int32Array(count + 1),
      spare: new Int32Array(count + 1),
    };
    this.#last.set(body, entry);
    return entry;
  }
}
