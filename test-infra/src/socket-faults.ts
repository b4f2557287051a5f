import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';
import tls from 'node:tls';

/**
 * Every socket `net.createConnection` or `tls.connect` opens in this process until `stop()` (ioredis
 * opens its connections there). Both modules' exports are replaced, named ES module imports of them
 * included, so code loaded before still counts.
 */
export interface SocketRecorder {
  /** The sockets opened so far, oldest first; splice it to start a new batch. */
  readonly sockets: net.Socket[];
  /** Puts the original `net.createConnection` and `tls.connect` back. */
  stop(): void;
}

/** Starts recording the sockets opened in this process: see {@link SocketRecorder}. */
export function recordSockets(): SocketRecorder {
  const sockets: net.Socket[] = [];
  const createConnection = net.createConnection;
  const connect = tls.connect;
  const recordingPlain = (...args: Parameters<typeof net.createConnection>): net.Socket => {
    const socket = createConnection.apply(net, args);
    sockets.push(socket);
    return socket;
  };
  const recordingTls = (...args: Parameters<typeof tls.connect>): tls.TLSSocket => {
    const socket = connect.apply(tls, args);
    sockets.push(socket);
    return socket;
  };
  net.createConnection = recordingPlain as typeof net.createConnection;
  tls.connect = recordingTls as typeof tls.connect;
  syncBuiltinESMExports();
  return {
    sockets,
    stop: () => {
      if (net.createConnection === recordingPlain) net.createConnection = createConnection;
      if (tls.connect === recordingTls) tls.connect = connect;
      syncBuiltinESMExports();
    },
  };
}

/**
 * What Node's TLS socket does when a TLS 1.3 server refuses the client's certificate: the alert,
 * which arrives after the client's side of the handshake, is emitted as an 'error', then the reset
 * of the same connection is emitted as a second one; then the socket is gone. Throws (from the
 * second emit) when nothing listens for the socket's errors any more.
 */
export function alertThenReset(socket: net.Socket): void {
  const alert = Object.assign(new Error('tlsv1 alert unknown ca'), { code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' });
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read', errno: -104 });
  try {
    socket.emit('error', alert);
    socket.emit('error', reset);
  } finally {
    socket.destroy();
  }
}
