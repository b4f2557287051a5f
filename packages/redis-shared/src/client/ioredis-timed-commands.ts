import { type CorkableSocket, RequestDeadlines, RequestTimeoutError, TurnCork } from '@fencelock/core/adapter';
import type { ScriptArgument } from '../scripts/script-runner.js';
import { wireCommands, type IoredisCommand, type IoredisCommandClass, type WireCommandBuilder } from './ioredis-wire-command.js';
import type { RespRequestEncoder } from './resp-request-encoder.js';

/**
 * The most script requests one write of a provider-opened connection carries after a turn's first
 * (see `TurnCork`'s `batchLimit`). Sixty-four concurrent acquires on one Redis ran 6–9 % faster with
 * 12–16 than with the whole turn in one write, and slower again with 24–32, on a 2-core machine where
 * the server's commands are the bottleneck: Redis starts on the first part while the client writes
 * the rest.
 */
export const REDIS_WRITE_BATCH_LIMIT = 16;

/**
 * Script commands on an ioredis client the provider opened (so built by the same ioredis as the
 * client), each bounded by `requestTimeoutMs` from when it is sent — queued while reconnecting
 * included, as ioredis' `commandTimeout` bounds them — through one shared timer (core's
 * `RequestDeadlines`) instead of the timer ioredis arms per command. Sent with `sendCommand`, as
 * `wireCommands` builds them, without the argument handling of the client's command methods.
 */
export class IoredisTimedCommands {
  readonly #send: (command: IoredisCommand) => Promise<unknown>;
  readonly #build: WireCommandBuilder;
  readonly #deadlines: RequestDeadlines<IoredisCommand>;
  readonly #socket: () => CorkableSocket | null | undefined;
  readonly #cork = new TurnCork({ batchLimit: REDIS_WRITE_BATCH_LIMIT });

  /** `forCluster`: the client is a Cluster (see `wireCommands`). */
  constructor(
    send: (command: IoredisCommand) => Promise<unknown>,
    Command: IoredisCommandClass,
    timeoutMs: number,
    socket: () => CorkableSocket | null | undefined,
    forCluster: boolean,
    encoder?: RespRequestEncoder,
  ) {
    this.#send = send;
    this.#socket = socket;
    this.#build = wireCommands(Command, { forCluster, boundElsewhere: true, encoder });
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
    const command = this.#build(name, args[0], args[1]);
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
