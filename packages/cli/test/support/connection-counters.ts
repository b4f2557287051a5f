import { createServer, type Server, type Socket } from 'node:net';
import type { BackendName } from '../../src/index.js';

/** Loopback servers that accept connections and count them. */
export interface ConnectionCounters {
  /** Their ports. */
  readonly ports: number[];
  /** How many connections they have accepted so far. */
  connections(): number;
  /** Closes them and their connections. */
  close(): Promise<void>;
}

/** Loopback servers that only count connections: backend addresses that must stay untouched. */
export async function connectionCounters(count: number): Promise<ConnectionCounters> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const servers: Server[] = [];
  const ports: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const server = createServer((socket) => {
      connections += 1;
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    servers.push(server);
    ports.push(address.port);
  }
  return {
    ports,
    connections: () => connections,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
    },
  };
}

/** An environment that points `backend` at the counters (their first three ports). */
export function counterEnv(counters: ConnectionCounters, backend: BackendName): Record<string, string> {
  const [a, b, c] = counters.ports;
  switch (backend) {
    case 'redis':
      return { FENCELOCK_BACKEND: backend, FENCELOCK_REDIS_URL: `redis://127.0.0.1:${a}` };
    case 'redlock':
      return { FENCELOCK_BACKEND: backend, FENCELOCK_REDLOCK_URLS: [a, b, c].map((port) => `redis://127.0.0.1:${port}`).join(',') };
    case 'etcd':
      return { FENCELOCK_BACKEND: backend, FENCELOCK_ETCD_ENDPOINTS: `http://127.0.0.1:${a}` };
    case 'zookeeper':
      return { FENCELOCK_BACKEND: backend, FENCELOCK_ZK_HOSTS: `127.0.0.1:${a}` };
    case 'postgres':
      return { FENCELOCK_BACKEND: backend, FENCELOCK_POSTGRES_URL: `postgres://127.0.0.1:${a}/postgres` };
  }
}
