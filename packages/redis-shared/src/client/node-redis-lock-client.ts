import { withRequestTimeout } from '@fencelock/core/adapter';
import { redisRefusal } from '../refusals.js';
import type { ScriptArgument } from '../scripts/script-runner.js';
import { timeReplyMicros } from './ioredis-lock-client.js';
import type {
  ClientEndpoint,
  ClientStatus,
  LockClient,
  ServerLink,
  SubscriberConnection,
  SubscriberHandlers,
  Subscriptions,
} from './lock-client.js';

type Listener = (...args: never[]) => void;
type PubSubListener = (message: string, channel: string) => void;

/** What every node-redis client (5 and 6, standalone and cluster) has and the seam uses. */
interface NodeRedisCommon {
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  subscribe(channels: string[], listener: PubSubListener): Promise<void>;
  pSubscribe(patterns: string[], listener: PubSubListener): Promise<void>;
  close(): Promise<void>;
  destroy(): void;
  on(event: string, listener: Listener): unknown;
  off(event: string, listener: Listener): unknown;
}

/** A node-redis standalone client, as the seam uses it. */
export interface NodeRedisClientInternals extends NodeRedisCommon {
  readonly isReady: boolean;
  readonly options?: { readonly url?: string; readonly socket?: { readonly host?: string; readonly port?: number; readonly path?: string } };
  sendCommand(args: readonly string[]): Promise<unknown>;
  duplicate(): NodeRedisClientInternals;
}

/** A node-redis cluster client, as the seam uses it. */
export interface NodeRedisClusterInternals extends NodeRedisCommon {
  readonly masters: readonly { readonly host: string; readonly port: number }[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: readonly string[]): Promise<unknown>;
  nodeClient(node: object): Promise<{ sendCommand(args: readonly string[]): Promise<unknown> }>;
  duplicate(): NodeRedisClusterInternals;
}

// node-redis takes strings (or buffers) only.
function textArgs(command: string, body: string, args: readonly ScriptArgument[]): string[] {
  const text = new Array<string>(args.length + 2);
  text[0] = command;
  text[1] = body;
  for (let index = 0; index < args.length; index += 1) text[index + 2] = String(args[index]);
  return text;
}

/**
 * What both node-redis seams share: the connection state from the client's events (node-redis
 * reconnects by itself and says so with `reconnecting`), pub/sub on a duplicate, closing.
 */
abstract class NodeRedisSeam<C extends NodeRedisCommon> {
  readonly family = 'node-redis';
  // The provider bounds every request with core's per-request timeout.
  readonly boundsScripts = false;
  readonly boundsCommands = false;
  protected readonly client: C;
  #wasOpen: boolean;
  #down = false;
  #refusal: string | undefined;

  constructor(client: C, readyEvent: string, downEvents: readonly string[]) {
    this.client = client;
    this.#wasOpen = client.isOpen;
    client.on(readyEvent, () => {
      this.#wasOpen = true;
      this.#down = false;
      this.#refusal = undefined;
    });
    // Why a connection was refused is only in node-redis' 'error' events. Listened to only beside a
    // listener of the user's own: node-redis throws an error nobody listens to, and that stays so.
    if (((client as unknown as { listenerCount?(event: string): number }).listenerCount?.('error') ?? 0) > 0) {
      client.on('error', (error: unknown) => {
        this.#refusal = redisRefusal(error) ?? this.#refusal;
      });
    }
    for (const event of downEvents) {
      client.on(event, () => {
        this.#down = true;
      });
    }
  }

  protected abstract get ready(): boolean;

  get status(): ClientStatus {
    if (this.client.isOpen) this.#wasOpen = true;
    else return this.#wasOpen ? 'closed' : 'idle';
    if (this.ready) return 'ready';
    return this.#down ? 'down' : 'connecting';
  }

  subscriber(to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
    const connection = (this.client as unknown as { duplicate(): NodeRedisCommon }).duplicate();
    let closed = false;
    let subscribed = false;
    connection.on('error', () => undefined);
    // node-redis subscribes again by itself after a reconnect, before it says `ready`.
    for (const event of ['reconnecting', 'node-reconnecting']) connection.on(event, () => handlers.lost());
    for (const event of ['ready', 'node-ready']) {
      connection.on(event, () => {
        if (subscribed && !closed) handlers.confirmed();
      });
    }
    const subscribe = async (): Promise<void> => {
      await connection.connect();
      const listener = (message: string, channel: string): void => handlers.message(channel, message, undefined);
      if (to.channels.length > 0) await connection.subscribe([...to.channels], listener);
      for (const pattern of to.patterns ?? []) {
        await connection.pSubscribe([pattern], (message, channel) => handlers.message(channel, message, pattern));
      }
    };
    subscribe().then(
      () => {
        subscribed = true;
        if (!closed) handlers.confirmed();
        else connection.destroy();
      },
      () => undefined,
    );
    return {
      close: () => {
        closed = true;
        if (connection.isOpen) connection.destroy();
      },
    };
  }

  connect(): void {
    if (!this.client.isOpen && !this.#wasOpen) this.client.connect().catch(() => undefined);
  }

  async close(timeoutMs: number): Promise<void> {
    if (!this.client.isOpen) return;
    try {
      await withRequestTimeout(this.client.close(), timeoutMs, 'closing the connection');
    } catch {
      if (this.client.isOpen) this.client.destroy();
    }
  }

  disconnect(): void {
    if (this.client.isOpen) this.client.destroy();
  }

  connectionRefusal(): string | undefined {
    return this.#refusal;
  }

  onStatus(listener: (status: ClientStatus) => void): () => void {
    const ready = (): void => listener('ready');
    const down = (): void => listener(this.status === 'closed' ? 'closed' : 'down');
    const events: [string, () => void][] = [
      ['ready', ready],
      ['node-ready', ready],
      ['reconnecting', down],
      ['node-reconnecting', down],
      ['end', down],
    ];
    for (const [event, handler] of events) this.client.on(event, handler);
    return () => {
      for (const [event, handler] of events) this.client.off(event, handler);
    };
  }
}

/**
 * The seam over a node-redis 5 or 6 client (`createClient()`), RESP2 or RESP3 (node-redis decodes
 * the lock scripts' replies to the same values under both).
 */
export class NodeRedisLockClient extends NodeRedisSeam<NodeRedisClientInternals> implements LockClient {
  readonly isCluster = false;
  // A new object per connection: EVAL first on each (see scriptScope).
  #connection: object = {};

  constructor(client: NodeRedisClientInternals) {
    // Not 'error': a listener there would keep node-redis from raising the user's unhandled errors;
    // a lost connection says 'reconnecting' as well.
    super(client, 'ready', ['reconnecting']);
    client.on('connect', () => {
      this.#connection = {};
    });
  }

  protected get ready(): boolean {
    return this.client.isReady;
  }

  get endpoint(): ClientEndpoint | undefined {
    const options = this.client.options;
    if (options?.url !== undefined) {
      try {
        const url = new URL(options.url);
        return { host: url.hostname, port: url.port === '' ? undefined : url.port };
      } catch {
        return undefined;
      }
    }
    const socket = options?.socket;
    return { host: socket?.host, port: socket?.port, path: socket?.path };
  }

  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown> {
    return this.client.sendCommand(textArgs(command === 'eval' ? 'EVAL' : 'EVALSHA', body, args));
  }

  scriptScope(): object | undefined {
    return this.client.isReady ? this.#connection : undefined;
  }

  command(args: readonly string[], _key: string): Promise<unknown> {
    return this.client.sendCommand(args);
  }

  async time(): Promise<bigint> {
    return timeReplyMicros(await this.client.sendCommand(['TIME']));
  }

  masters(): readonly ServerLink[] {
    const endpoint = this.endpoint;
    return [{ name: `${endpoint?.host ?? 'localhost'}:${endpoint?.port ?? 6379}`, command: (args) => this.client.sendCommand(args) }];
  }
}

/**
 * The seam over a node-redis 5 or 6 cluster client (`createCluster()`): each request goes to the
 * master of its first key's slot (node-redis follows MOVED and ASK).
 */
export class NodeRedisClusterLockClient extends NodeRedisSeam<NodeRedisClusterInternals> implements LockClient {
  readonly isCluster = true;
  readonly endpoint = undefined;
  #ready: boolean;

  constructor(client: NodeRedisClusterInternals) {
    super(client, 'connect', ['node-reconnecting']);
    this.#ready = client.isOpen && client.masters.length > 0;
    client.on('connect', () => {
      this.#ready = true;
    });
    client.on('node-ready', () => {
      this.#ready = true;
    });
    client.on('node-reconnecting', () => {
      this.#ready = false;
    });
  }

  protected get ready(): boolean {
    return this.#ready;
  }

  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown> {
    // args = number of keys, keys, ARGV: the first key, if any, routes the call.
    const firstKey = Number(args[0]) > 0 ? String(args[1]) : undefined;
    return this.client.sendCommand(firstKey, false, textArgs(command === 'eval' ? 'EVAL' : 'EVALSHA', body, args));
  }

  scriptScope(): object | undefined {
    return this.client;
  }

  command(args: readonly string[], key: string): Promise<unknown> {
    return this.client.sendCommand(key, false, args);
  }

  async time(): Promise<bigint> {
    return timeReplyMicros(await this.client.sendCommand(undefined, true, ['TIME']));
  }

  masters(): readonly ServerLink[] {
    return this.client.masters.map((master) => ({
      name: `${master.host}:${master.port}`,
      command: async (args) => (await this.client.nodeClient(master)).sendCommand(args),
    }));
  }
}
