import { type CorkableSocket, RequestDeadlines, RequestTimeoutError, TurnCork } from '@fencelock/core/adapter';
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

// ioredis arms a timer for every command of a client with `commandTimeout`, through the command's own
// `setTimeout`: the commands sent here have theirs replaced by this no-op (an own property, not a
// subclass: a subclass whose name a transpiler sets, as tsx does, takes V8 off its fast path for
// constructing it, which doubles the client's CPU per cycle).
function boundElsewhere(): void {
  // Bounded by the provider's RequestDeadlines.
}

/**
 * Script commands on an ioredis client the provider opened (so built by the same ioredis as the
 * client), each bounded by `requestTimeoutMs` from when it is sent — queued while reconnecting
 * included, as ioredis' `commandTimeout` bounds them — through one shared timer (core's
 * `RequestDeadlines`) instead of one per command. Sent with `sendCommand`, without the argument
 * handling of the client's command methods.
 */
export class IoredisTimedCommands {
  readonly #send: (command: IoredisCommand) => Promise<unknown>;
  readonly #Command: IoredisCommandClass;
  readonly #deadlines: RequestDeadlines<IoredisCommand>;
  readonly #socket: () => CorkableSocket | null | undefined;
  readonly #cork = new TurnCork();

  constructor(send: (command: IoredisCommand) => Promise<unknown>, Command: IoredisCommandClass, timeoutMs: number, socket: () => CorkableSocket | null | undefined) {
    this.#send = send;
    this.#socket = socket;
    this.#Command = Command;
    this.#deadlines = new RequestDeadlines<IoredisCommand>(timeoutMs, {
      // ioredis marks a command resolved, not one that failed (an error reply, a lost connection):
      // such a command stays until its deadline, with the settled ones sent after it (a timeout's
      // worth of requests at most), and failing it again then is harmless.
      settled: (command) => command.isResolved,
      expire: (command) => command.reject(new RequestTimeoutError(`running ${command.name}`, timeoutMs)),
    });
  }

  /** Sends `name` (`evalsha` or `eval`) with `args` (the SHA or script, then its arguments); resolves the reply as text. */
  send(name: string, args: [string, readonly ScriptArgument[]]): Promise<unknown> {
    // Command flattens nested arrays (copying `args` once, as it always does).
    const command = new this.#Command(name, args as unknown as ScriptArgument[], REPLY_AS_TEXT);
    command.setTimeout = boundElsewhere;
    // Watched before it is sent: a client closed for good rejects it at once, and that is fine.
    this.#deadlines.add(command);
    // ioredis writes each command as it is sent: after the first of a turn, the rest leave together.
    this.#cork.cork(this.#socket());
    return this.#send(command);
  }

  /** Stops watching (the provider is closing). */
  clear(): void {
    this.#deadlines.clear();
  }
}
