/**
 * ioredis 5 without a ready check (`enableReadyCheck: false`, as a least-privilege ACL needs: the
 * check is an INFO) says 'ready' once the client setup commands it sends on connecting have settled,
 * without asking whether that connection still exists. When the connection drops in between (a
 * server that refuses our TLS client certificate resets it right after the handshake; a server at
 * `maxclients`), the client is marked ready on a closed socket, and the reconnect already scheduled
 * then gives up ("already connected"): every later request waits for its timeout, forever. ioredis 6
 * checks this itself; iovalkey says 'ready' before any such command.
 */

/** The parts of an ioredis `Redis` this repair reads and sets (present in ioredis 5 and 6). */
interface RepairableClient {
  readonly stream?: { readonly destroyed?: boolean } | null;
  readonly reconnectTimeout?: unknown;
  setStatus?(status: string, arg?: unknown): void;
  on(event: string, listener: () => void): unknown;
}

/**
 * Watches `client` (a single server's client, not a Cluster) for a 'ready' on a socket that is
 * already closed, and puts it back in the state its close left it in: reconnecting (its reconnect
 * timer then connects again), or ended when its retry strategy gave up.
 */
export function repairReadyOnClosedSocket(client: object): void {
  const repairable = client as RepairableClient;
  repairable.on('ready', () => {
    if (repairable.stream?.destroyed !== true || typeof repairable.setStatus !== 'function') return;
    repairable.setStatus(repairable.reconnectTimeout ? 'reconnecting' : 'end');
  });
}
