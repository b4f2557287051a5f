import { afterEach, describe, expect, it } from 'vitest';
import { RESERVED_PORTS, startTcpProxy, type TcpProxy } from '../src/index.js';
import { connectClient, startEchoServer, type CollectingClient, type EchoServer } from './helpers.js';

/** Generous bound for data that should arrive; only reached when something is broken. */
const ARRIVES_WITHIN_MS = 5_000;
/** Bounded wait during which nothing may arrive (blackhole). */
const SILENCE_MS = 300;

let echo: EchoServer;
let proxy: TcpProxy;
const clients: CollectingClient[] = [];

async function setup(): Promise<void> {
  echo = await startEchoServer();
  proxy = await startTcpProxy({ targetPort: echo.port });
}

async function client(): Promise<CollectingClient> {
  const c = await connectClient(proxy.port);
  clients.push(c);
  return c;
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  await proxy.close();
  await echo.close();
});

describe('startTcpProxy()', () => {
  it('pass: forwards both ways', async () => {
    await setup();
    expect(RESERVED_PORTS.has(proxy.port)).toBe(false);
    expect(proxy.mode).toBe('pass');
    const c = await client();
    c.socket.write('hello');
    await c.waitFor('hello', ARRIVES_WITHIN_MS);
    expect(proxy.connectionCount).toBe(1);
  });

  it('blackhole: keeps the socket open, forwards nothing either way, then delivers after pass', async () => {
    await setup();
    const c = await client();
    c.socket.write('before');
    await c.waitFor('before', ARRIVES_WITHIN_MS);
    const bytesBefore = echo.bytesReceived;

    proxy.setMode('blackhole');
    c.socket.write('during');
    await expect(c.waitFor('during', SILENCE_MS)).rejects.toThrow(/timed out/);
    expect(echo.bytesReceived).toBe(bytesBefore);
    expect(c.socket.destroyed).toBe(false);

    // A new connection is accepted but does not reach the server while blackholed.
    const late = await client();
    late.socket.write('late');
    await expect(late.waitFor('late', SILENCE_MS)).rejects.toThrow(/timed out/);
    expect(echo.connections).toBe(1);

    proxy.setMode('pass');
    await c.waitFor('during', ARRIVES_WITHIN_MS);
    await late.waitFor('late', ARRIVES_WITHIN_MS);
    expect(c.text()).toBe('beforeduring');
    expect(echo.connections).toBe(2);
  });

  it('blackhole also holds the server-to-client direction', async () => {
    await setup();
    const c = await client();
    c.socket.write('hi');
    await c.waitFor('hi', ARRIVES_WITHIN_MS);
    proxy.setMode('blackhole');
    echo.send('push');
    await expect(c.waitFor('push', SILENCE_MS)).rejects.toThrow(/timed out/);
    proxy.setMode('pass');
    await c.waitFor('push', ARRIVES_WITHIN_MS);
  });

  it('delay: forwards every chunk after the delay, in order', async () => {
    await setup();
    proxy.setDelayMs(150);
    proxy.setMode('delay');
    const c = await client();
    const sent = performance.now();
    for (const part of ['a', 'b', 'c', 'd']) c.socket.write(part);
    await c.waitFor('abcd', ARRIVES_WITHIN_MS);
    // A lower bound only (slow machines make it larger, never smaller): the delay applied
    // once on the way there and once on the way back. 10 ms slack for timer rounding.
    expect(performance.now() - sent).toBeGreaterThanOrEqual(2 * 150 - 10);
    expect(c.text()).toBe('abcd');
  });

  it('reset: established clients get ECONNRESET, new ones too, until pass', async () => {
    await setup();
    const c = await client();
    c.socket.write('x');
    await c.waitFor('x', ARRIVES_WITHIN_MS);

    proxy.setMode('reset');
    const error = await c.waitForError(ARRIVES_WITHIN_MS);
    expect(error.code).toBe('ECONNRESET');
    expect(proxy.connectionCount).toBe(0);

    const refused = await connectClient(proxy.port).then(
      async (fresh) => {
        clients.push(fresh);
        return (await fresh.waitForError(ARRIVES_WITHIN_MS)).code;
      },
      (e: NodeJS.ErrnoException) => e.code,
    );
    expect(refused).toBe('ECONNRESET');

    proxy.setMode('pass');
    const again = await client();
    again.socket.write('again');
    await again.waitFor('again', ARRIVES_WITHIN_MS);
  });

  it('close() ends every connection and stops listening; a bad mode or delay is refused', async () => {
    await setup();
    const c = await client();
    expect(() => proxy.setDelayMs(-1)).toThrow(RangeError);
    expect(() => proxy.setMode('drop' as never)).toThrow(RangeError);
    await proxy.close();
    await new Promise<void>((resolve) => (c.socket.destroyed ? resolve() : c.socket.once('close', () => resolve())));
    await expect(connectClient(proxy.port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('refuses a non-loopback target', async () => {
    await expect(startTcpProxy({ targetPort: 80, targetHost: '10.1.2.3' })).rejects.toThrow(/not a loopback address/);
    // afterEach needs something to close.
    await setup();
  });
});
