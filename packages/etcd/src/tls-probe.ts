/**
 * grpc-js reports a refused certificate as a bare UNAVAILABLE ("No connection established"), the
 * same as a server that is down. When a connection fails, one TLS handshake of our own with the same
 * certificates tells the two apart, so a bad certificate is `LOCK_FORBIDDEN` at once rather than a
 * wait until `waitMs`.
 */
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { tlsCertificateProblem } from '@fencelock/core/adapter';
import type { IOptions } from 'etcd3';

/**
 * Handshakes with the first `https://` host of `connection` using its credentials and resolves what
 * is wrong with the certificates, or `undefined` when nothing is (or the host cannot be reached at
 * all, or it is not TLS). Waits at most `timeoutMs`; always closes its socket.
 */
export function probeTls(connection: IOptions, timeoutMs: number): Promise<string | undefined> {
  const hosts = Array.isArray(connection.hosts) ? connection.hosts : [connection.hosts];
  const host = hosts.find((entry) => typeof entry === 'string' && entry.startsWith('https://'));
  if (host === undefined) return Promise.resolve(undefined);
  const url = new URL(host);
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const { credentials } = connection;
  return new Promise((resolve) => {
    const socket = connect({
      host: hostname,
      port: Number(url.port || 443),
      ...(isIP(hostname) === 0 ? { servername: hostname } : {}),
      ca: credentials?.rootCertificate,
      key: credentials?.privateKey,
      cert: credentials?.certChain,
      // etcd speaks HTTP/2 and sends its SETTINGS first: data proves it accepted our certificate
      // (under TLS 1.3 a refusal of it arrives only after the handshake, as an alert).
      ALPNProtocols: ['h2'],
    });
    const done = (problem: string | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(problem);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    socket.once('data', () => done(undefined));
    // `on`, not `once`: under TLS 1.3 a refusal can come as an alert and then a reset, two errors.
    socket.on('error', (error) => done(tlsCertificateProblem(error)));
    socket.once('close', () => done(undefined));
  });
}
