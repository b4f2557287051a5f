import { type CorkableSocket, TurnCork, monotonicNow, waitFor, withRequestTimeout } from '@fencelock/core/adapter';
import { redisRefusal } from '../refusals.js';
import type { ScriptArgument } from '../scripts/script-runner.js';
import { repairReadyOnClosedSocket } from './ioredis-dead-ready.js';
import { listenToOwnedConnection } from './ioredis-owned-errors.js';
import { IoredisTimedCommands } from './ioredis-timed-commands.js';
import { wireCommands, type IoredisCommand, type IoredisCommandClass, type WireCommandBuilder } from './ioredis-wire-command.js';
import type { RespRequestEncoder } from './resp-request-encoder.js';
import type {
  ClientEndpoint,
  ClientStatus,
  LockClient,
  ServerLink,
  SubscriberConnection,
  SubscriberHandlers,
  Subscriptions,
} from './lock-client.js';

/** What the seam calls on an ioredis `Redis` or `Cluster` (ioredis 5 and 6 and iovalkey alike). */
export interface IoredisInternals {
  readonly status: string;
  readonly isCluster: boolean;
  readonly stream?: CorkableSocket | null;
  readonly options: {
    readonly host?: string;
    readonly port?: number;
    readonly path?: string | null;
    readonly commandTimeout?: number;
    readonly redisOptions?: { readonly commandTimeout?: number };
  };
  // Called with their arguments as one array (their typings list them one by one).
  eval: (...args: never[]) => unknown;
  evalsha: (...args: never[]) => unknown;
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  sendCommand(command: IoredisCommand): unknown;
  duplicate(...args: unknown[]): IoredisInternals;
  nodes?(role: 'master'): IoredisInternals[];
  subscribe(...channels: string[]): Promise<unknown>;
  psubscribe(...patterns: string[]): Promise<unknown>;
  connect(): Promise<void>;
  quit(): Promise<unknown>;
  disconnect(): void;
  // Event arguments are strings (pub/sub messages) or nothing the seam reads.
  on(event: string, listener: (...args: string[]) => void): unknown;
  off(event: string, listener: (...args: string[]) => void): unknown;
  once(event: string, listener: (...args: string[]) => void): unknown;
}

/** How the seam may use an ioredis client: see {@link IoredisLockClient}'s constructor. */
export interface IoredisLockClientOptions {
  /**
   * The `Command` class of the ioredis copy that made the client — known only for a client the
   * provider opened itself. With it, script commands are built and written by `wireCommands`; with
   * `requestTimeoutMs` too, they also carry the request bound themselves, through one shared timer.
   */
  readonly Command?: IoredisCommandClass;
  /** The provider's per-request timeout, in ms. */
  readonly requestTimeoutMs?: number;
  /**
   * With `Command`: the request encoder to share with the provider's other clients (a Redlock
   * provider's masters, so that a round's request is encoded once for all of them; see
   * `RespRequestEncoder`). Default: the client's own.
   */
  readonly requestEncoder?: RespRequestEncoder;
  /**
   * Scripts sent without `Command` (so without the timed commands, which coalesce their own): after
   * the first of a turn, the rest of the turn's writes leave in one, as the timed commands' do. Only
   * for a client the provider opened: a user's client keeps writing as its owner set it up.
   */
  readonly coalesceWrites?: boolean;
}

// After a hard disconnect, how long to wait for the socket's 'end' before moving on.
const END_AFTER_DISCONNECT_MS = 100;

/**
 * The seam over an ioredis 5 or 6 `Redis` or `Cluster`, or an iovalkey one (the same code paths: its
 * API is ioredis'). RESP2 and RESP3 need no difference here: ioredis 6 decodes RESP3 replies to the
 * RESP2 shapes by default (`replyMapping: 'legacy'`), and delivers pub/sub pushes as the same
 * `message` / `pmessage` events.
 */
export class IoredisLockClient implements LockClient {
  readonly family = 'ioredis';
  readonly isCluster: boolean;
  readonly boundsScripts: boolean;
  readonly boundsCommands: boolean;
  readonly #client: IoredisInternals;
  readonly #timed: IoredisTimedCommands | undefined;
  // Without the timed commands: how script commands are built, when the client's Command class is known.
  readonly #build: WireCommandBuilder | undefined;
  readonly #cork: TurnCork | undefined;
  #refusal: string | undefined;

  constructor(client: IoredisInternals, options: IoredisLockClientOptions = {}) {
    this.#client = client;
    this.isCluster = client.isCluster;
    const { Command, requestTimeoutMs } = options;
    this.#timed =
      Command === undefined || requestTimeoutMs === undefined
        ? undefined
        : new IoredisTimedCommands((command) => client.sendCommand(command) as Promise<unknown>, Command, requestTimeoutMs, () => client.stream, client.isCluster, options.requestEncoder);
    this.#build =
      this.#timed === undefined && Command !== undefined
        ? wireCommands(Command, { forCluster: client.isCluster, boundElsewhere: false, encoder: options.requestEncoder })
        : undefined;
    this.boundsScripts = this.#timed !== undefined;
    this.#cork = this.#timed === undefined && options.coalesceWrites === true ? new TurnCork() : undefined;
    // A Cluster's own queue is not bounded by commandTimeout (commands wait there for the slot map).
    this.boundsCommands = requestTimeoutMs !== undefined && !client.isCluster && client.options.commandTimeout === requestTimeoutMs;
    if (!client.isCluster) repairReadyOnClosedSocket(client);
    // ioredis retries a refused connection forever and queues the requests meanwhile: the reason is
    // only in its 'error' events. Listening also keeps its "Unhandled error event" lines quiet.
    // ioredis may still emit 'ready' on a connection whose AUTH was refused: only a connection that
    // was refused nothing clears the reason.
    let refusedSinceConnect = false;
    client.on('connect', () => {
      refusedSinceConnect = false;
    });
    client.on('error', (error: unknown) => {
      const refusal = redisRefusal(error);
      if (refusal === undefined) return;
      this.#refusal = refusal;
      refusedSinceConnect = true;
    });
    client.on('ready', () => {
      if (!refusedSinceConnect) this.#refusal = undefined;
    });
  }

  connectionRefusal(): string | undefined {
    return this.#refusal;
  }

  get status(): ClientStatus {
    switch (this.#client.status) {
      case 'ready':
        return 'ready';
      case 'wait':
        return 'idle';
      case 'connecting':
      case 'connect':
        return 'connecting';
      case 'end':
        return 'closed';
      default:
        return 'down';
    }
  }

  get endpoint(): ClientEndpoint | undefined {
    if (this.isCluster) return undefined;
    const { host, port, path } = this.#client.options;
    return { host, port, path: path ?? undefined };
  }

  // The arguments travel as one array after the SHA (or script): ioredis flattens it once, into the
  // command, where spreading them would copy them once more on the way.
  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown> {
    if (this.#timed !== undefined) return this.#timed.send(command, [body, args]);
    const client = this.#client;
    this.#cork?.cork(client.stream);
    if (this.#build !== undefined) return client.sendCommand(this.#build(command, body, args)) as Promise<unknown>;
    return ((command === 'evalsha' ? client.evalsha : client.eval) as unknown as ArrayCommand).call(client, body, args);
  }

  // The socket of a `Redis` (a reconnect may reach a restarted server), the `Cluster` as a whole (a
  // node without the script answers NOSCRIPT, handled by the caller).
  scriptScope(): object | undefined {
    if (this.isCluster) return this.#client;
    return this.#client.stream ?? undefined;
  }

  command(args: readonly string[], _key: string): Promise<unknown> {
    // `call` finds the key itself (ioredis knows each command's key positions) and routes by it.
    return this.#client.call(args[0] ?? '', ...args.slice(1));
  }

  async time(): Promise<bigint> {
    return timeReplyMicros(await this.#client.call('TIME'));
  }

  masters(): readonly ServerLink[] {
    const servers = this.isCluster ? (this.#client.nodes?.('master') ?? []) : [this.#client];
    return servers.map((server) => ({
      name: `${server.options.host ?? 'localhost'}:${server.options.port ?? 6379}`,
      command: (args) => server.call(args[0] ?? '', ...args.slice(1)),
    }));
  }

  onStatus(listener: (status: ClientStatus) => void): () => void {
    const ready = (): void => listener('ready');
    const down = (): void => listener('down');
    const closed = (): void => listener('closed');
    this.#client.on('ready', ready);
    this.#client.on('close', down);
    this.#client.on('end', closed);
    return () => {
      this.#client.off('ready', ready);
      this.#client.off('close', down);
      this.#client.off('end', closed);
    };
  }

  subscriber(to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
    return this.isCluster ? clusterSubscriber(this.#client, to, handlers) : serverSubscriber(this.#client, to, handlers);
  }

  connect(): void {
    if (this.#client.status === 'wait') this.#client.connect().catch(() => undefined);
  }

  async close(timeoutMs: number): Promise<void> {
    const client = this.#client;
    if (client.status === 'end') return;
    // Resolves once the socket is really closed (QUIT answered and the server hung up, or disconnect()).
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    try {
      await withRequestTimeout(
        client.quit().then(() => ended),
        timeoutMs,
        'closing the connection',
      );
    } catch {
      // No answer in time (or the QUIT failed): disconnect below.
    } finally {
      if (client.status !== 'end') {
        client.disconnect();
        await waitFor({
          deadline: monotonicNow() + END_AFTER_DISCONNECT_MS,
          until: (wake) => {
            void ended.then(wake);
            return () => undefined;
          },
        });
      }
      this.#timed?.clear();
    }
  }

  disconnect(): void {
    this.#client.disconnect();
  }
}

// A script command method called with its arguments as one array.
type ArrayCommand = (first: string, args: readonly ScriptArgument[]) => Promise<unknown>;

/** `TIME`'s reply (`[seconds, microseconds]`, as text or numbers) in microseconds. */
export function timeReplyMicros(reply: unknown): bigint {
  if (!Array.isArray(reply) || reply.length < 2) throw new Error(`unexpected reply to TIME: ${String(reply)}`);
  return BigInt(String(reply[0])) * 1_000_000n + BigInt(String(reply[1]));
}

// A standalone subscriber subscribes on every `ready` itself: ioredis's own re-subscription after a
// reconnect leaves a rejected promise unhandled when the connection closes again.
function serverSubscriber(client: IoredisInternals, to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
  const connection = client.duplicate({ autoResubscribe: false, lazyConnect: false });
  repairReadyOnClosedSocket(connection);
  let closed = false;
  listen(connection, handlers);
  connection.on('ready', () => {
    subscribeAll(connection, to).then(
      () => {
        if (!closed) handlers.confirmed();
      },
      () => undefined,
    );
  });
  connection.on('close', () => handlers.lost());
  return {
    close: () => {
      closed = true;
      connection.disconnect();
    },
  };
}

// A Cluster's subscriber is one of its nodes, chosen and re-subscribed by ioredis itself after a
// failover or a reconnect.
function clusterSubscriber(client: IoredisInternals, to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
  const connection = client.duplicate();
  let closed = false;
  let subscribed = false;
  listen(connection, handlers);
  connection.on('close', () => handlers.lost());
  connection.on('ready', () => {
    if (subscribed && !closed) handlers.confirmed();
  });
  subscribeAll(connection, to).then(
    () => {
      subscribed = true;
      if (!closed) handlers.confirmed();
    },
    () => undefined,
  );
  return {
    close: () => {
      closed = true;
      connection.disconnect();
    },
  };
}

function listen(connection: IoredisInternals, handlers: SubscriberHandlers): void {
  // The subscriber is a connection the adapter opened, even beside a user's client.
  listenToOwnedConnection(connection);
  connection.on('message', (channel: string, message: string) => handlers.message(channel, message, undefined));
  connection.on('pmessage', (pattern: string, channel: string, message: string) => handlers.message(channel, message, pattern));
}

async function subscribeAll(connection: IoredisInternals, to: Subscriptions): Promise<void> {
  if (to.channels.length > 0) await connection.subscribe(...to.channels);
  if (to.patterns !== undefined && to.patterns.length > 0) await connection.psubscribe(...to.patterns);
}
