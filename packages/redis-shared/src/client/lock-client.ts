import type { ScriptArgument } from '../scripts/script-runner.js';

/** The client families the seam has an implementation for. */
export type ClientFamily = 'ioredis' | 'node-redis' | 'glide';

/**
 * Where a client's connection stands, the same words for every family:
 * - `idle`: not connecting (a lazy ioredis client, a node-redis client nobody called `connect()` on);
 * - `connecting`: making its first connection;
 * - `ready`: requests go through;
 * - `down`: lost its connection and reconnecting (requests wait or fail);
 * - `closed`: closed for good.
 */
export type ClientStatus = 'idle' | 'connecting' | 'ready' | 'down' | 'closed';

/** The address of a standalone client, for telling Redlock's masters apart. */
export interface ClientEndpoint {
  readonly host?: string | undefined;
  readonly port?: number | string | undefined;
  readonly path?: string | undefined;
}

/** One server of a client (a cluster's master, or the one server): its name and a way to ask it one command. */
export interface ServerLink {
  /** `host:port`, for messages. */
  readonly name: string;
  /** Sends one command to this server; resolves its reply (unbounded: the caller bounds it). */
  command(args: readonly string[]): Promise<unknown>;
}

/** What a subscriber connection listens to: channels, and channel patterns (`PSUBSCRIBE`). */
export interface Subscriptions {
  readonly channels: readonly string[];
  readonly patterns?: readonly string[];
}

/** What a subscriber connection reports (see {@link LockClient.subscriber}). */
export interface SubscriberHandlers {
  /** A message on one of the channels (with the pattern it matched, for a pattern subscription). */
  message(channel: string, message: string, pattern: string | undefined): void;
  /** The server confirmed the subscription (again, after each reconnect). */
  confirmed(): void;
  /** The connection dropped: messages are lost until the next `confirmed`. */
  lost(): void;
}

/** A pub/sub connection of its own, duplicated from the client (see {@link LockClient.subscriber}). */
export interface SubscriberConnection {
  /** Closes the connection (no more handler calls). */
  close(): void;
}

/**
 * The seam between the lock logic of `@fencelock/redis` and `@fencelock/redlock` and the Redis
 * client a user has. One implementation per client family (ioredis 5 and 6 and iovalkey share one,
 * node-redis 5 and 6 another, Valkey GLIDE a third); the Lua, the keys and the lock logic are the adapters', once.
 *
 * Replies are the family's own decoding of the server's reply — bulk strings as strings, integers
 * as numbers, nil as `null`, arrays as arrays — under RESP2 and RESP3 alike: the lock scripts reply
 * with nothing else. Requests are unbounded unless said otherwise; the adapters bound them with
 * core's per-request timeout.
 */
export interface LockClient {
  readonly family: ClientFamily;
  readonly isCluster: boolean;
  /** Where the connection stands right now. */
  readonly status: ClientStatus;
  /** The server a standalone client talks to; `undefined` for a cluster or when the client does not say. */
  readonly endpoint: ClientEndpoint | undefined;
  /**
   * Whether {@link sendScript} is bounded by the provider's request timeout already (a client the
   * provider opened, whose commands carry the bound): the caller then adds no timer of its own.
   */
  readonly boundsScripts: boolean;
  /**
   * Whether every other request ({@link command}) is bounded by the provider's request timeout
   * already (the client's own command timeout equals it).
   */
  readonly boundsCommands: boolean;
  /**
   * `EVAL` (with the script, which loads it) or `EVALSHA` (with its SHA); `args` = the number of
   * keys, the keys, then ARGV. On a cluster it goes to the master of the first key's slot,
   * following redirections.
   */
  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown>;
  /**
   * What a script loaded by EVAL is known on: the connection (a reconnect may reach a restarted
   * server that lost its script cache), or the cluster client as a whole (a node without it answers
   * NOSCRIPT). `undefined` while there is no connection.
   */
  scriptScope(): object | undefined;
  /** One command about `key` (GET, PTTL, ZREM), routed by `key` on a cluster. */
  command(args: readonly string[], key: string): Promise<unknown>;
  /** The server's clock (`TIME`), in microseconds since the epoch (on a cluster: any master's). */
  time(): Promise<bigint>;
  /** Every master: the one server, or the cluster's masters as currently known (none before the cluster map is read). */
  masters(): readonly ServerLink[];
  /**
   * Calls `listener` when the connection comes up (`ready`) or goes down (`down`, `closed`);
   * on a cluster, when any master's does. Returns the function that stops it.
   */
  onStatus(listener: (status: ClientStatus) => void): () => void;
  /**
   * A connection of its own (duplicated from this client, same server and options) subscribed to
   * `to`, kept subscribed across reconnects; `handlers` hear its messages and its state.
   */
  subscriber(to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection;
  /** Starts connecting a client that is `idle` (lazy); nothing otherwise. Never rejects. */
  connect(): void;
  /**
   * Closes the client gracefully (`QUIT`), or hard if the server does not answer within `timeoutMs`;
   * resolves once the socket is closed. Only for clients the provider opened.
   */
  close(timeoutMs: number): Promise<void>;
  /** Drops the connection at once, without a goodbye (a crash, or a client that will not answer). */
  disconnect(): void;
  /**
   * Why the last connection attempt was refused, when it was refused for the credentials or the TLS
   * certificates (see `redisRefusal`) and no connection has been ready since; `undefined` otherwise,
   * or where the client library does not report connection errors.
   */
  connectionRefusal(): string | undefined;
}
