/**
 * Every error of a connection the adapters open with ioredis (or iovalkey) has a listener.
 *
 * The client's own 'error' events: without a listener ioredis prints each one, and the provider
 * reports them through rejected calls and the handles' `uncertain` state instead.
 *
 * Each socket's: Node's TLS socket can emit 'error' twice. An alert that arrives after the client's
 * side of the handshake finished (with TLS 1.3, a server refusing our client certificate) is
 * emitted at once, and a reset of the same connection right after is emitted again as the socket is
 * destroyed. ioredis listens for a socket's errors with `once` only (twice, both spent on the
 * first), so the second would be thrown: an uncaught exception, the end of the user's process. The
 * first one still reaches the client, and the close after it makes ioredis reconnect as usual.
 */

interface OwnedClient {
  readonly stream?: unknown;
  readonly connector?: Connector;
  readonly isCluster?: boolean;
  nodes?(role: 'all'): readonly object[];
  on(event: string, listener: (...args: never[]) => void): unknown;
}

// ioredis' connector of a single server (standalone or Sentinel): it makes each socket the client
// uses, and keeps the newest in its own `stream`.
interface Connector {
  stream?: unknown;
}

interface Emitter {
  on(event: 'error', listener: () => void): unknown;
  listeners(event: 'error'): readonly unknown[];
}

const ignore = (): void => undefined;

function listenToSocket(socket: unknown): void {
  const emitter = socket as Partial<Emitter> | null | undefined;
  if (typeof emitter?.on !== 'function' || typeof emitter.listeners !== 'function') return;
  if (!emitter.listeners('error').includes(ignore)) emitter.on('error', ignore);
}

// A single server's client connects on its own schedule (at once, on demand, on every reconnect),
// each time through its connector, which puts the new socket in its own `stream` as it makes it,
// before anything can arrive on it: that assignment is where the socket gets its listener. The
// connector's property, not the client's: an accessor defined on the client itself would turn all of
// the client's properties into V8's slow (dictionary) mode, and ioredis reads them on every command.
function listenToEverySocket(client: OwnedClient): void {
  listenToSocket(client.stream);
  const connector = client.connector;
  if (connector === undefined || connector === null) return;
  let current = connector.stream;
  listenToSocket(current);
  Object.defineProperty(connector, 'stream', {
    configurable: true,
    enumerable: true,
    get: () => current,
    set: (socket: unknown) => {
      current = socket;
      listenToSocket(socket);
    },
  });
}

/**
 * Listens for the errors of `client`, an ioredis `Redis` or `Cluster` the adapter opened (never a
 * user's client): its own, and those of every socket it or (for a Cluster) any of its nodes connects.
 * A Cluster's internal pub/sub connection is not reachable from here.
 */
export function listenToOwnedConnection(client: object): void {
  const owned = client as OwnedClient;
  owned.on('error', ignore);
  if (owned.isCluster !== true) {
    listenToEverySocket(owned);
    return;
  }
  const listenToNode = (node: object): void => listenToOwnedConnection(node);
  for (const node of owned.nodes?.('all') ?? []) listenToNode(node);
  owned.on('+node', listenToNode);
}
