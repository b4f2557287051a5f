import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { RESERVED_PORTS, freePort, freePorts, isListening, isPortFree } from '../src/index.js';

describe('ports', () => {
  it('freePort() returns a free loopback port outside the shared topology', async () => {
    const port = await freePort();
    expect(RESERVED_PORTS.has(port)).toBe(false);
    expect(await isPortFree(port)).toBe(true);
  });

  it('freePorts() returns distinct ports; companion offsets are checked too', async () => {
    const ports = await freePorts(9);
    expect(new Set(ports).size).toBe(9);
    const withBus = await freePort({ companionOffsets: [10_000] });
    expect(await isPortFree(withBus + 10_000)).toBe(true);
    expect(RESERVED_PORTS.has(withBus + 10_000)).toBe(false);
  });

  it('isPortFree() and isListening() see a listening socket', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    expect(await isPortFree(address.port)).toBe(false);
    expect(await isListening(address.port)).toBe(true);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await isPortFree(address.port)).toBe(true);
    expect(await isListening(address.port)).toBe(false);
  });
});
