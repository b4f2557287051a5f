import { type CorkableSocket, RequestDeadlines, RequestTimeoutError, TurnCork } from '@fencelock/core/adapter';
import type { ScriptArgument } from '../scripts/script-runner.js';
import { wireCommand, type IoredisCommand, type IoredisCommandClass } from './ioredis-wire-command.js';

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
 * handling of the client's command methods, and written as `wireCommand` builds them.
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
    const command = wireCommand(this.#Command, name, args[0], args[1]);
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
