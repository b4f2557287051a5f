/** Small helpers shared by the tests: an echo server and bounded waits on socket data. */
import net from 'node:net';

/** A loopback echo server that also counts what reached it. */
export interface EchoServer {
  readonly port: number;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Bytes received so far (over all connections). */
  readonly bytesReceived: number;
  /** Writes `text` to every open server-side socket (server-initiated data). */
  send(text: string): void;
  close(): Promise<void>;
}

export async function startEchoServer(): Promise<EchoServer> {
  let connections = 0;
  let bytesReceived = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('data', (data: Buffer) => {
      bytesReceived += data.length;
      socket.write(data);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('echo server has no port');
  return {
    port: address.port,
    get connections() {
      return connections;
    },
    get bytesReceived() {
      return bytesReceived;
    },
    send(text: string) {
      for (const socket of sockets) socket.write(text);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A client socket that accumulates what it receives. */
export interface CollectingClient {
  readonly socket: net.Socket;
  /** Everything received so far, as UTF-8. */
  text(): string;
  /** Resolves once the received text includes `expected`; rejects after `timeoutMs`. */
  waitFor(expected: string, timeoutMs: number): Promise<void>;
  /** Resolves with the first socket error; rejects after `timeoutMs`. */
  waitForError(timeoutMs: number): Promise<NodeJS.ErrnoException>;
}

export async function connectClient(port: number): Promise<CollectingClient> {
  const socket = net.connect({ host: '127.0.0.1', port });
  let received = '';
  let error: NodeJS.ErrnoException | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  socket.on('data', (data: Buffer) => {
    received += data.toString('utf8');
    notify();
  });
  socket.on('error', (e: NodeJS.ErrnoException) => {
    error = e;
    notify();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const waitOn = <T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const listener = (): void => {
        const value = check();
        if (value === undefined) return;
        clearTimeout(timer);
        listeners.delete(listener);
        resolve(value);
      };
      const timer = setTimeout(() => {
        listeners.delete(listener);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received ${JSON.stringify(received)}`));
      }, timeoutMs);
      listeners.add(listener);
      listener();
    });
  return {
    socket,
    text: () => received,
    waitFor: (expected, timeoutMs) =>
      waitOn(() => (received.includes(expected) ? true : undefined), timeoutMs, JSON.stringify(expected)).then(() => undefined),
    waitForError: (timeoutMs) => waitOn(() => error, timeoutMs, 'a socket error'),
  };
}
