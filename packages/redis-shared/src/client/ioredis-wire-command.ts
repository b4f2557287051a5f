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

// What a command built here carries besides ioredis' own members.
interface WireCommand {
  args: ScriptArgument[];
  wire: string;
  toWritable: (this: WireCommand) => string;
}

const REPLY_AS_TEXT = { replyEncoding: 'utf8' } as const;
const NO_ARGUMENTS: ScriptArgument[] = [];

// Shared by every command built here: ioredis calls it each time it writes the command (a resend to
// another cluster node included), and the request is the same each time.
function writtenAsBuilt(this: WireCommand): string {
  return this.wire;
}

/**
 * An ioredis `Command` for `name` (`evalsha` or `eval`) with `body` (the SHA or the script), then
 * `args`, its request written here in the protocol (RESP) once.
 *
 * ioredis' own path handles the arguments twice on the client's CPU, which bounds a Redlock round
 * and a client with many keys in flight: its constructor flattens them and converts each one, and its
 * `toWritable` measures and concatenates them again at write time (`docs/BENCHMARKS.md`, 4b, shows
 * the client CPU per cycle). Here the command is constructed without arguments (nothing to flatten or convert),
 * `args` is set afterwards for what ioredis reads of it (the key positions of a cluster's slot, error
 * replies, debug logging), and `toWritable` is replaced by an own property that returns the request
 * built here. Own properties, not a subclass: a subclass whose name a transpiler sets, as tsx does,
 * takes V8 off its fast path for constructing it.
 */
export function wireCommand(Command: IoredisCommandClass, name: string, body: string, args: readonly ScriptArgument[]): IoredisCommand {
  const command = new Command(name, NO_ARGUMENTS, REPLY_AS_TEXT) as IoredisCommand & WireCommand;
  const all: ScriptArgument[] = [body];
  let wire = `*${args.length + 2}\r\n$${name.length}\r\n${name}\r\n$${Buffer.byteLength(body)}\r\n${body}\r\n`;
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i] as ScriptArgument;
    const text = typeof arg === 'string' ? arg : String(arg);
    all.push(text);
    wire += `$${Buffer.byteLength(text)}\r\n${text}\r\n`;
  }
  command.args = all;
  command.wire = wire;
  command.toWritable = writtenAsBuilt;
  return command;
}
