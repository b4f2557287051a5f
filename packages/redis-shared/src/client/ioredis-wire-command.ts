import type { ScriptArgument } from '../scripts/script-runner.js';
import { RespRequestEncoder } from './resp-request-encoder.js';

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

// A part's text as Redis receives it (ioredis' own conversion of a number: its decimal string).
function textOf(part: ScriptArgument): string {
  return typeof part === 'string' ? part : String(part);
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
  /**
   * The encoder to share with other clients' builders (a Redlock provider's masters: a round's
   * request is then encoded once for all of them). Default: one of this builder's own.
   */
  readonly encoder?: RespRequestEncoder;
}

type CommandBase = new (name: string, args: ScriptArgument[], options: { replyEncoding: 'utf8' }) => IoredisCommand & { args: readonly ScriptArgument[] };

type WireCommandClass = new (name: string, wire: Buffer, args: readonly ScriptArgument[]) => IoredisCommand;

// The classes made for each `Command` class: [commands that arm ioredis' timer, commands bounded by the caller].
const madeFor = new WeakMap<IoredisCommandClass, [WireCommandClass, WireCommandClass]>();

/**
 * The subclass of `Command` that writes its `wire` bytes, one per `Command` class and timer choice
 * for the process, not one per client: ioredis' code reads the same properties of every command it
 * sends (in its constructor, its queues, its reply handling), and a Redlock round's five clients
 * would otherwise give it five shapes to read, which V8 handles megamorphically (by a slow lookup).
 */
function wireCommandClass(Command: IoredisCommandClass, boundElsewhere: boolean): WireCommandClass {
  let made = madeFor.get(Command);
  if (made === undefined) {
    made = [subclassOf(Command, false), subclassOf(Command, true)];
    madeFor.set(Command, made);
  }
  return made[boundElsewhere ? 1 : 0];
}

function subclassOf(Command: IoredisCommandClass, boundElsewhere: boolean): WireCommandClass {
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
  return WireCommand;
}

/**
 * Script commands for clients of ioredis' `Command` class (so of the same ioredis copy), each with
 * its request encoded here in the protocol (RESP) once, into a `Buffer` (see `RespRequestEncoder`).
 *
 * ioredis' own path handles the arguments several times over on the client's CPU, which bounds a
 * Redlock round and a client with many keys in flight: its constructor flattens them into a new
 * array and converts each one, its `toWritable` measures and concatenates them into a string of
 * many pieces, and the socket then flattens that string and encodes it. Here the command is
 * constructed without arguments (nothing to flatten or convert), its `toWritable` returns the bytes
 * encoded here (each time ioredis writes it: a resend to another cluster node, a command queued
 * while connecting), and the socket writes them as they are. A subclass shared by every client of
 * that `Command` class, not own properties set on each command: those would give each command a
 * second block of properties. Each builder has an encoder of its own (a client's requests repeat
 * their own keys), unless it is given one to share (see `WireCommandOptions.encoder`).
 */
export function wireCommands(Command: IoredisCommandClass, options: WireCommandOptions): WireCommandBuilder {
  const { forCluster, boundElsewhere } = options;
  const WireCommand = wireCommandClass(Command, boundElsewhere);
  const encoder = options.encoder ?? new RespRequestEncoder();
  return (name, body, args) => new WireCommand(name, encoder.encode(name, body, args), forCluster ? [body, ...args.map(textOf)] : args);
}

function boundByCaller(): void {
  // The caller bounds the command (see WireCommandOptions.boundElsewhere).
}
