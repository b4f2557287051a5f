/** Loopback ports: checking that one is free, and picking free ones for dedicated servers. */
import net from 'node:net';

/** The only address anything here listens on or connects to. */
export const LOOPBACK = '127.0.0.1';

/**
 * Ports of the shared topology (`infra up`) and their companions (cluster bus, ZooKeeper
 * quorum/election, etcd peers). Dedicated test servers never take these, so a test can run
 * while the shared topology is up.
 */
export const RESERVED_PORTS: ReadonlySet<number> = new Set([
  6379,
  7001, 7002, 7003, 7004, 7005,
  7101, 7102, 7103, 17101, 17102, 17103,
  2181, 2182, 2183, 2888, 2889, 2890, 3888, 3889, 3890,
  2379, 22379, 32379, 2380, 22380, 32380,
  15432,
]);

/*
 * Dedicated servers get ports from 20000–32767: below Linux's default ephemeral range
 * (32768–60999), so an outgoing connection's local port cannot grab a port between the
 * moment we find it free and the moment the server binds it. Picks are random so that
 * parallel test workers rarely collide; a collision shows up as "address in use" at start.
 */
const RANGE_START = 20_000;
const RANGE_END = 32_767;
const MAX_PICKS = 200;
/** Ports handed out by this process recently, so two servers started back to back differ. */
const handedOut = new Set<number>();

/** True when nothing listens on 127.0.0.1:`port` (we can bind it ourselves right now). */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: LOOPBACK, port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/** Options of {@link freePort}. */
export interface FreePortOptions {
  /** Extra ports that must not be returned (e.g. ones already chosen for the same cluster). */
  readonly exclude?: Iterable<number>;
  /** Further ports that must be free too, as offsets from the candidate (e.g. `[10000]`). */
  readonly companionOffsets?: readonly number[];
}

/**
 * A free loopback TCP port, never one of {@link RESERVED_PORTS}. Bounded: at most 200 picks.
 *
 * @throws Error when no free port was found.
 */
export async function freePort(options: FreePortOptions = {}): Promise<number> {
  const exclude = new Set(options.exclude ?? []);
  const offsets = options.companionOffsets ?? [];
  for (let pick = 0; pick < MAX_PICKS; pick += 1) {
    const port = RANGE_START + Math.floor(Math.random() * (RANGE_END - RANGE_START + 1));
    const all = [port, ...offsets.map((offset) => port + offset)];
    if (all.some((p) => p > 65_535 || RESERVED_PORTS.has(p) || exclude.has(p) || handedOut.has(p))) continue;
    const free = await Promise.all(all.map((p) => isPortFree(p)));
    if (free.every(Boolean)) {
      for (const p of all) handedOut.add(p);
      // Forget after a while: the set only guards against handing a port out twice in a row.
      setTimeout(() => {
        for (const p of all) handedOut.delete(p);
      }, 60_000).unref();
      return port;
    }
  }
  throw new Error(`no free loopback port found in ${RANGE_START}-${RANGE_END} after ${MAX_PICKS} picks`);
}

/** `count` distinct free loopback ports. */
export async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i += 1) ports.push(await freePort({ exclude: ports }));
  return ports;
}

/** True when something accepts TCP connections on 127.0.0.1:`port` within `timeoutMs`. */
export function isListening(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: LOOPBACK, port });
    const done = (result: boolean): void => {
      socket.destroy();
      resolve(result);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
