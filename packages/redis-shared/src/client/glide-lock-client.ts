import type { ScriptArgument } from '../scripts/script-runner.js';
import { glideSubscriber } from './glide-subscriber.js';
import { GlideStatus, type GlideCommandOptions } from './glide-status.js';
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

/** The configuration a GLIDE client was created with, as far as the seam reads it. */
export interface GlideConfiguration {
  readonly addresses?: readonly { readonly host: string; readonly port?: number }[];
}

/** What the seam calls on a Valkey GLIDE `GlideClient` or `GlideClusterClient` (2.x). */
export interface GlideInternals {
  /** Kept by GLIDE from `createClient(configuration)`: the subscriber client is made from it. */
  readonly config?: GlideConfiguration;
  readonly isClosed?: boolean;
  customCommand(args: string[], options?: GlideCommandOptions): Promise<unknown>;
  close(errorMessage?: string): void;
  /** Present on a `GlideClusterClient` only: tells the two apart. */
  invokeScriptWithRoute?: (...args: never[]) => unknown;
}

// GLIDE takes strings (or buffers) only.
function textArgs(command: string, body: string, args: readonly ScriptArgument[]): string[] {
  const text = new Array<string>(args.length + 2);
  text[0] = command;
  text[1] = body;
  for (let index = 0; index < args.length; index += 1) text[index + 2] = String(args[index]);
  return text;
}

/**
 * GLIDE decodes a RESP3 map to an array of `{ key, value }` records (its `GlideRecord`); the other
 * clients give a `Map` or an object. Only `CONFIG GET` replies with a map here: a `Map` then, as the
 * readers of the other clients' replies expect.
 */
function normalizeReply(reply: unknown): unknown {
  if (!Array.isArray(reply) || reply.length === 0) return reply;
  const isRecord = (entry: unknown): entry is { key: unknown; value: unknown } => typeof entry === 'object' && entry !== null && !Array.isArray(entry) && 'key' in entry && 'value' in entry;
  return reply.every(isRecord) ? new Map(reply.map((entry) => [entry.key, entry.value])) : reply;
}

// `CLUSTER NODES` lines: `<id> <ip:port@cport[,hostname]> <flags> …`; masters not failed.
function mastersOfClusterNodes(reply: unknown): { host: string; port: number }[] {
  const masters: { host: string; port: number }[] = [];
  for (const line of String(reply).split('\n')) {
    const [, address, flags] = line.split(' ');
    if (address === undefined || flags === undefined) continue;
    const flagList = flags.split(',');
    if (!flagList.includes('master') || flagList.some((flag) => flag.startsWith('fail'))) continue;
    const hostPort = address.split('@')[0] ?? '';
    const colon = hostPort.lastIndexOf(':');
    if (colon <= 0) continue;
    masters.push({ host: hostPort.slice(0, colon), port: Number(hostPort.slice(colon + 1)) });
  }
  return masters;
}

/**
 * The seam over a Valkey GLIDE 2.x `GlideClient` or `GlideClusterClient`. GLIDE's Rust core owns
 * the connections: it reconnects by itself, resubscribes, and follows MOVED and ASK, and it tells
 * its user nothing about its connections. Where the connection stands is therefore read from the
 * requests' outcomes (see `GlideStatus`): a request failing with a connection error marks the client
 * `down`, and the client is pinged until it answers, which marks it `ready` again.
 *
 * Scripts go as `EVAL` / `EVALSHA` through `customCommand` (routed by the first key's slot on a
 * cluster) rather than GLIDE's `Script` objects: the seam's `ScriptRunner` does the NOSCRIPT fallback
 * for every family, with the Lua sent once per connection.
 */
export class GlideLockClient implements LockClient {
  readonly family = 'glide';
  readonly isCluster: boolean;
  // GLIDE has one request timeout per client (`requestTimeout`), not per command: the provider
  // bounds every request with its own as well.
  readonly boundsScripts = false;
  readonly boundsCommands = false;
  readonly #client: GlideInternals;
  readonly #status: GlideStatus;
  #masters: readonly { host: string; port: number }[] = [];
  #readingMasters = false;

  constructor(client: GlideInternals) {
    this.#client = client;
    this.isCluster = typeof client.invokeScriptWithRoute === 'function';
    this.#status = new GlideStatus(client);
    if (this.isCluster) this.#readMasters();
  }

  get status(): ClientStatus {
    return this.#status.current;
  }

  get endpoint(): ClientEndpoint | undefined {
    if (this.isCluster) return undefined;
    const [address] = this.#client.config?.addresses ?? [];
    return address === undefined ? undefined : { host: address.host, port: address.port ?? 6379 };
  }

  sendScript(command: 'eval' | 'evalsha', body: string, args: readonly ScriptArgument[]): Promise<unknown> {
    const text = textArgs(command === 'eval' ? 'EVAL' : 'EVALSHA', body, args);
    // args = number of keys, keys, ARGV: the first key, if any, routes the call.
    const options: GlideCommandOptions | undefined = this.isCluster && Number(args[0]) > 0 ? { route: { type: 'primarySlotKey', key: String(args[1]) } } : undefined;
    return this.#status.track(this.#client.customCommand(text, options));
  }

  // A connection GLIDE made again may reach a restarted server without the scripts: a new scope
  // after each recovery (the cluster client as a whole, whose nodes answer NOSCRIPT when they lack one).
  scriptScope(): object | undefined {
    if (this.isCluster) return this.#client;
    return this.#status.current === 'ready' ? this.#status.connection : undefined;
  }

  command(args: readonly string[], key: string): Promise<unknown> {
    const options: GlideCommandOptions | undefined = this.isCluster ? { route: { type: 'primarySlotKey', key } } : undefined;
    return this.#status.track(this.#client.customCommand([...args], options)).then(normalizeReply);
  }

  async time(): Promise<bigint> {
    const options: GlideCommandOptions | undefined = this.isCluster ? { route: 'randomNode' } : undefined;
    return timeReplyMicros(await this.#status.track(this.#client.customCommand(['TIME'], options)));
  }

  masters(): readonly ServerLink[] {
    if (!this.isCluster) {
      const endpoint = this.endpoint;
      return [{ name: `${endpoint?.host ?? 'localhost'}:${endpoint?.port ?? 6379}`, command: (args) => this.#client.customCommand([...args]).then(normalizeReply) }];
    }
    // GLIDE keeps its cluster map to itself: read from CLUSTER NODES, refreshed on each call.
    this.#readMasters();
    return this.#masters.map(({ host, port }) => ({
      name: `${host}:${port}`,
      command: (args) => this.#client.customCommand([...args], { route: { type: 'routeByAddress', host, port } }).then(normalizeReply),
    }));
  }

  #readMasters(): void {
    if (this.#readingMasters || this.#client.isClosed === true) return;
    this.#readingMasters = true;
    this.#client.customCommand(['CLUSTER', 'NODES'], { route: 'randomNode' }).then(
      (reply) => {
        this.#readingMasters = false;
        this.#masters = mastersOfClusterNodes(reply);
      },
      () => {
        this.#readingMasters = false;
      },
    );
  }

  onStatus(listener: (status: ClientStatus) => void): () => void {
    return this.#status.listen(listener);
  }

  subscriber(to: Subscriptions, handlers: SubscriberHandlers): SubscriberConnection {
    return glideSubscriber(this.#client, to, handlers);
  }

  connect(): void {
    // GLIDE connects in createClient (or, with lazyConnect, on the first request).
  }

  async close(_timeoutMs: number): Promise<void> {
    this.disconnect();
  }

  disconnect(): void {
    if (this.#client.isClosed !== true) this.#client.close();
  }

  // Not known: GLIDE creates its clients connected (a refused connection fails their creation, in the
  // user's code) and reports later trouble only through its requests' errors.
  connectionRefusal(): string | undefined {
    return undefined;
  }
}
