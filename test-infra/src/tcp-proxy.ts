/**
 * A small TCP proxy for network faults on loopback (tc netem and toxiproxy are not available
 * here): pass, blackhole, delay, reset — switchable at any time, for existing and new
 * connections.
 */
import net from 'node:net';
import { assertLoopbackHost } from './loopback.js';
import { LOOPBACK, freePort } from './ports.js';

/**
 * - `pass`: forward both ways.
 * - `blackhole`: keep every socket open but forward nothing either way (like a partition
 *   where packets are dropped and TCP keeps retrying). Bytes stay queued in the proxy and the
 *   kernel and are delivered when the mode changes back, as after a healed partition. New
 *   connections are accepted but not connected upstream until then.
 * - `delay`: forward each chunk `delayMs` after it arrived, in order.
 * - `reset`: send RST to every client socket, close the upstream ones, and reset new
 *   connections at once (the client sees ECONNRESET).
 */
export type ProxyMode = 'pass' | 'blackhole' | 'delay' | 'reset';

/** Options of {@link startTcpProxy}. */
export interface TcpProxyOptions {
  readonly targetPort: number;
  /** Must be loopback. Default 127.0.0.1. */
  readonly targetHost?: string;
  /** Initial mode. Default `'pass'`. */
  readonly mode?: ProxyMode;
  /** Delay used in `'delay'` mode. Default 0. */
  readonly delayMs?: number;
  /** Listen on this port instead of a free one. */
  readonly port?: number;
}

/** A running proxy; clients connect to 127.0.0.1:`port`. */
export interface TcpProxy {
  readonly port: number;
  readonly mode: ProxyMode;
  /** Client connections currently open through the proxy. */
  readonly connectionCount: number;
  setMode(mode: ProxyMode): void;
  setDelayMs(ms: number): void;
  /** Stops listening and destroys every connection. Idempotent. */
  close(): Promise<void>;
}

type Direction = 'up' | 'down';

interface Chunk {
  readonly data: Buffer;
  /** `performance.now()` at which delay mode may forward it. */
  readonly due: number;
}

/** One client connection and its upstream connection. */
class ProxiedConnection {
  upstream: net.Socket | undefined;
  readonly queues: Record<Direction, Chunk[]> = { up: [], down: [] };
  readonly ended: Record<Direction, boolean> = { up: false, down: false };
  readonly timers: Record<Direction, NodeJS.Timeout | undefined> = { up: undefined, down: undefined };
  closed = false;

  constructor(
    readonly client: net.Socket,
    private readonly proxy: Proxy,
  ) {
    client.on('data', (data: Buffer) => this.receive('up', data));
    client.on('end', () => this.receiveEnd('up'));
    client.on('error', () => this.destroy());
    client.on('close', () => this.destroy());
  }

  /** Opens the upstream socket (not in blackhole mode: a dropped SYN never reaches the server). */
  connectUpstream(): void {
    if (this.upstream || this.closed) return;
    const upstream = net.connect({ host: this.proxy.targetHost, port: this.proxy.targetPort, allowHalfOpen: true });
    this.upstream = upstream;
    upstream.on('connect', () => {
      this.flush('up');
      this.flush('down');
    });
    upstream.on('data', (data: Buffer) => this.receive('down', data));
    upstream.on('end', () => this.receiveEnd('down'));
    // Target down or gone: the client sees a reset, as it would without the proxy in between.
    upstream.on('error', () => this.reset());
    upstream.on('close', () => {
      if (!this.ended.down) this.reset();
    });
  }

  private receive(direction: Direction, data: Buffer): void {
    const delay = this.proxy.mode === 'delay' ? this.proxy.delayMs : 0;
    this.queues[direction].push({ data, due: performance.now() + delay });
    this.flush(direction);
  }

  private receiveEnd(direction: Direction): void {
    this.ended[direction] = true;
    this.flush(direction);
  }

  /** The socket bytes of `direction` are written to. */
  private target(direction: Direction): net.Socket | undefined {
    if (direction === 'down') return this.client;
    const upstream = this.upstream;
    return upstream && !upstream.connecting ? upstream : undefined;
  }

  private source(direction: Direction): net.Socket | undefined {
    return direction === 'up' ? this.client : this.upstream;
  }

  /** Writes what is due in `direction`, honouring the current mode and back-pressure. */
  flush(direction: Direction): void {
    const mode = this.proxy.mode;
    if (this.closed || mode === 'blackhole' || mode === 'reset') return;
    const target = this.target(direction);
    if (!target || target.destroyed) return;
    clearTimeout(this.timers[direction]);
    this.timers[direction] = undefined;
    const queue = this.queues[direction];
    // Bounded by the queue length; each iteration removes one chunk.
    while (queue.length > 0) {
      const head = queue[0];
      if (head === undefined) break;
      const wait = mode === 'delay' ? head.due - performance.now() : 0;
      if (wait > 0) {
        this.timers[direction] = setTimeout(() => this.flush(direction), Math.ceil(wait));
        return;
      }
      queue.shift();
      if (!target.write(head.data)) {
        const source = this.source(direction);
        source?.pause();
        target.once('drain', () => {
          if (this.proxy.mode !== 'blackhole') source?.resume();
        });
      }
    }
    if (this.ended[direction]) target.end();
  }

  /** Stop reading both sockets (blackhole). */
  pause(): void {
    this.client.pause();
    this.upstream?.pause();
  }

  /** Leave blackhole: connect if not yet, read again, deliver what was held back. */
  resume(): void {
    this.connectUpstream();
    this.client.resume();
    this.upstream?.resume();
    this.flush('up');
    this.flush('down');
  }

  /** RST to the client, close upstream. */
  reset(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    if (!this.client.destroyed) this.client.resetAndDestroy();
    this.upstream?.destroy();
    this.proxy.forget(this);
  }

  destroy(): void {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.client.destroy();
    this.upstream?.destroy();
    this.proxy.forget(this);
  }

  private clearTimers(): void {
    clearTimeout(this.timers.up);
    clearTimeout(this.timers.down);
  }
}

class Proxy implements TcpProxy {
  #mode: ProxyMode;
  #delayMs: number;
  readonly connections = new Set<ProxiedConnection>();
  #closed = false;

  constructor(
    readonly server: net.Server,
    readonly port: number,
    readonly targetHost: string,
    readonly targetPort: number,
    mode: ProxyMode,
    delayMs: number,
  ) {
    this.#mode = mode;
    this.#delayMs = delayMs;
    server.on('connection', (socket) => this.accept(socket));
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  get delayMs(): number {
    return this.#delayMs;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  private accept(socket: net.Socket): void {
    if (this.#mode === 'reset' || this.#closed) {
      socket.on('error', () => undefined);
      socket.resetAndDestroy();
      return;
    }
    const connection = new ProxiedConnection(socket, this);
    this.connections.add(connection);
    if (this.#mode === 'blackhole') connection.pause();
    else connection.connectUpstream();
  }

  forget(connection: ProxiedConnection): void {
    this.connections.delete(connection);
  }

  setMode(mode: ProxyMode): void {
    if (!['pass', 'blackhole', 'delay', 'reset'].includes(mode)) throw new RangeError(`unknown proxy mode ${String(mode)}`);
    this.#mode = mode;
    for (const connection of [...this.connections]) {
      if (mode === 'blackhole') connection.pause();
      else if (mode === 'reset') connection.reset();
      else connection.resume();
    }
  }

  setDelayMs(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0 || ms > 2_147_483_647) throw new RangeError(`delay must be a finite number of ms ≥ 0, got ${ms}`);
    this.#delayMs = ms;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const connection of [...this.connections]) connection.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Attempts to listen when a randomly chosen free port is taken in between. */
const LISTEN_ATTEMPTS = 5;

/**
 * Starts a TCP proxy on 127.0.0.1 in front of `targetHost:targetPort` (loopback only).
 *
 * @example
 * const proxy = await startTcpProxy({ targetPort: zk.nodes[0].port });
 * proxy.setMode('blackhole'); // … later
 * proxy.setMode('pass');
 */
export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const targetHost = options.targetHost ?? LOOPBACK;
  assertLoopbackHost(targetHost, 'startTcpProxy targetHost');
  if (!Number.isInteger(options.targetPort) || options.targetPort < 1 || options.targetPort > 65_535) {
    throw new RangeError(`targetPort must be a TCP port, got ${String(options.targetPort)}`);
  }
  let lastError: unknown;
  for (let attempt = 0; attempt < LISTEN_ATTEMPTS; attempt += 1) {
    const port = options.port ?? (await freePort());
    const server = net.createServer({ allowHalfOpen: true });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: LOOPBACK, port }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      const proxy = new Proxy(server, port, targetHost, options.targetPort, options.mode ?? 'pass', 0);
      proxy.setDelayMs(options.delayMs ?? 0);
      return proxy;
    } catch (error) {
      lastError = error;
      server.close();
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || options.port !== undefined) throw error;
    }
  }
  throw lastError;
}
