import type { ScriptArgument } from '../scripts/script-runner.js';

/** The members of an ioredis `Command` used here (ioredis 5 and 6, iovalkey). */
export interface IoredisCommand {
  readonly name: string;
  readonly isResolved: boolean;
  reject(error: Error): void;
  setTimeout: (timeout: number) => void;
}

/** ioredis' `Command` class, from the same copy of the package as the client it is sent on. */
export type IoredisCommandClass = new (name: string, args: ScriptArgument[], options: { replyEncoding: 'utf8' }) => IoredisCommand;

const REPLY_AS_TEXT = { replyEncoding: 'utf8' } as const;
const NO_ARGUMENTS: ScriptArgument[] = [];
const CR = 13;
const LF = 10;
const DOLLAR = 36;
const ASTERISK = 42;
const ZERO = 48;
// Copied byte by byte in JavaScript up to this length (an ASCII text): a native call costs more.
const COPY_IN_SCRIPT_MAX = 64;

// Each part of the request being encoded, and its byte length (reused: nothing is allocated for them).
const partsToWrite: (string | number)[] = [];
let partBytes = new Int32Array(32);

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

// A bulk string's bytes and its closing CRLF at `offset` (`bytes` long); returns the offset after it.
function writePart(wire: Buffer, offset: number, part: string | number, bytes: number): number {
  if (typeof part === 'number') {
    // A whole number ≥ 0 (see encodeRequest): its digits, with no string made for them.
    writeDigits(wire, offset + bytes, part);
  } else if (bytes === part.length && bytes <= COPY_IN_SCRIPT_MAX) {
    // As many bytes as UTF-16 units: every unit is ASCII, one byte each.
    for (let i = 0; i < bytes; i += 1) wire[offset + i] = part.charCodeAt(i);
  } else if (bytes > 0) {
    wire.write(part, offset, bytes, 'utf8');
  }
  wire[offset + bytes] = CR;
  wire[offset + bytes + 1] = LF;
  return offset + bytes + 2;
}

function prefixBytes(value: number): number {
  return decimalDigits(value) + 3;
}

// A part's text as Redis receives it (ioredis' own conversion of a number: its decimal string).
function textOf(part: ScriptArgument): string {
  return typeof part === 'string' ? part : String(part);
}

/**
 * The request `name body ...args` in the protocol (RESP), as ioredis writes it: an array of bulk
 * strings, each argument as its UTF-8 bytes (a number as its decimal string).
 */
function encodeRequest(name: string, body: string, args: readonly ScriptArgument[]): Buffer {
  const parts = args.length + 2;
  if (partBytes.length < parts) partBytes = new Int32Array(parts * 2);
  let size = prefixBytes(parts);
  for (let i = 0; i < parts; i += 1) {
    const given = i === 0 ? name : i === 1 ? body : (args[i - 2] as ScriptArgument);
    // Whole numbers ≥ 0 (key counts, TTLs) are written as digits; any other number as its string.
    const part = typeof given === 'number' && !(Number.isSafeInteger(given) && given >= 0) ? String(given) : given;
    const bytes = typeof part === 'number' ? decimalDigits(part) : Buffer.byteLength(part, 'utf8');
    partsToWrite[i] = part;
    partBytes[i] = bytes;
    size += prefixBytes(bytes) + bytes + 2;
  }
  // A slice of Node's shared pool for a request of under 4 KiB: one small object per request.
  const wire = Buffer.allocUnsafe(size);
  let offset = writePrefix(wire, 0, ASTERISK, parts);
  for (let i = 0; i < parts; i += 1) {
    const bytes = partBytes[i] as number;
    offset = writePart(wire, writePrefix(wire, offset, DOLLAR, bytes), partsToWrite[i] as string | number, bytes);
    partsToWrite[i] = 0;
  }
  return wire;
}

/** Builds the commands of {@link wireCommands}: `name` (`evalsha` or `eval`), `body` (the SHA or the script), then `args`. */
export type WireCommandBuilder = (name: string, body: string, args: readonly ScriptArgument[]) => IoredisCommand;

/** Options of {@link wireCommands}. */
export interface WireCommandOptions {
  /**
   * The client is a Cluster: each command's `args` is then the whole argument list as ioredis builds
   * it (`body` first, numbers as decimal strings), for the key positions that give its slot.
   * Otherwise `args` is the list as given, without a copy (ioredis reads it in error replies and
   * debug logging only).
   */
  readonly forCluster: boolean;
  /**
   * The commands ignore ioredis' `commandTimeout` (their `setTimeout` does nothing): the caller
   * bounds them itself (see `IoredisTimedCommands`), so that no timer is armed per command.
   */
  readonly boundElsewhere: boolean;
}

type CommandBase = new (name: string, args: ScriptArgument[], options: { replyEncoding: 'utf8' }) => IoredisCommand & { args: readonly ScriptArgument[] };

/**
 * Script commands for clients of ioredis' `Command` class (so of the same ioredis copy), each with
 * its request encoded here in the protocol (RESP) once, into a `Buffer`.
 *
 * ioredis' own path handles the arguments several times over on the client's CPU, which bounds a
 * Redlock round and a client with many keys in flight: its constructor flattens them into a new
 * array and converts each one, its `toWritable` measures and concatenates them into a string of
 * many pieces, and the socket then flattens that string and encodes it. Here the command is
 * constructed without arguments (nothing to flatten or convert), its `toWritable` returns the bytes
 * encoded here (each time ioredis writes it: a resend to another cluster node, a command queued
 * while connecting), and the socket writes them as they are. A subclass made here at run time, not
 * own properties set on each command: those would give each command a second block of properties.
 */
export function wireCommands(Command: IoredisCommandClass, options: WireCommandOptions): WireCommandBuilder {
  const { forCluster, boundElsewhere } = options;
  const Base = Command as unknown as CommandBase;
  class WireCommand extends Base {
    readonly wire: Buffer;

    constructor(name: string, wire: Buffer, args: readonly ScriptArgument[]) {
      super(name, NO_ARGUMENTS, REPLY_AS_TEXT);
      this.wire = wire;
      this.args = args;
    }

    toWritable(): Buffer {
      return this.wire;
    }
  }
  if (boundElsewhere) {
    Object.defineProperty(WireCommand.prototype, 'setTimeout', { value: boundByCaller, writable: true, configurable: true });
  }
  return (name, body, args) => new WireCommand(name, encodeRequest(name, body, args), forCluster ? [body, ...args.map(textOf)] : args);
}

function boundByCaller(): void {
  // The caller bounds the command (see WireCommandOptions.boundElsewhere).
}
