/**
 * The TLS probe that tells a refused certificate from a server that is down: under TLS 1.3 the
 * server's refusal of our certificate arrives after our side of the handshake, as an alert, and Node
 * may then emit the reset of the same connection as a second error. The probe must read the first
 * and survive the second (nothing listening for it would throw, and end the process).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { alertThenReset, generateCertificates, recordSockets, waitFor, type SocketRecorder } from '@fencelock/test-infra';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { probeTls } from '../src/tls-probe.js';

let dir: string;
let server: tls.Server;
let port: number;
let ca: Buffer;
let recorder: SocketRecorder | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fencelock-tls-probe-'));
  const certificates = await generateCertificates(join(dir, 'certs'), []);
  ca = await readFile(certificates.ca);
  // A TLS server that accepts the handshake and then says nothing (etcd would send its SETTINGS).
  server = tls.createServer({ key: await readFile(certificates.server.key), cert: await readFile(certificates.server.cert) }, () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
}, 60_000);

afterAll(async () => {
  recorder?.stop();
  await new Promise((resolve) => server.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

it('reads an alert after the handshake as a refused client certificate, and survives the reset after it', async () => {
  recorder = recordSockets();
  const probing = probeTls({ hosts: `https://127.0.0.1:${port}`, credentials: { rootCertificate: ca } }, 10_000);
  const socket = (await waitFor(async () => recorder?.sockets[0], { what: 'the probe to connect', timeoutMs: 10_000, intervalMs: 5 })) as tls.TLSSocket;
  recorder.stop();
  // Our side of the handshake done, as when a TLS 1.3 server's alert arrives.
  await waitFor(async () => socket.getProtocol() ?? undefined, { what: 'the handshake', timeoutMs: 10_000, intervalMs: 5 });
  expect(socket.getProtocol()).toBe('TLSv1.3');
  // Throws from the second emit when the probe listens only once.
  alertThenReset(socket);
  expect(await probing).toBe('the server refused our client certificate (TLS alert unknown ca)');
}, 30_000);
