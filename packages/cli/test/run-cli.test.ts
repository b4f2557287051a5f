import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { createRedisLockProvider } from '@fencelock/redis';
import { freePort, topology } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode, runCli } from '../src/index.js';
import { capturedIo } from './support/captured-io.js';

/** A loopback TCP server that only counts connections: a backend address that must stay untouched. */
async function connectionCounter(): Promise<{ server: Server; port: number; connections: () => number; close: () => Promise<void> }> {
  let count = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    count += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    server,
    port: address.port,
    connections: () => count,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('runCli, in process', () => {
  const { redisUrl } = topology();
  const redisEnv = { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: redisUrl };
  let counter: Awaited<ReturnType<typeof connectionCounter>>;

  beforeAll(async () => {
    counter = await connectionCounter();
  });
  afterAll(async () => {
    await counter.close();
  });

  it('refuses bad usage with 64 and a pointer to help, without connecting to the backend', async () => {
    const env = { FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: `redis://127.0.0.1:${counter.port}` };
    const cases: string[][] = [
      [],
      ['frobnicate'],
      ['hold', 'k'],
      ['hold', '', '--', 'true'],
      ['hold', 'k', '--wait', '5 parsecs', '--', 'true'],
      ['hold', 'k', '--unknown-flag', '--', 'true'],
      ['hold', 'k', '--ttl', '50ms', '--', 'true'], // below Redis' 100 ms minimum
      ['inspect', 'k', '--ttl', '5s'],
      ['--backend', 'etcd', '--redis-url', 'redis://127.0.0.1:1', 'inspect', 'k'],
      ['inspect', 'k', '--zk-naming', 'kazoo'], // a ZooKeeper flag on redis
      ['inspect', 'k', '--redis-key-prefix', '{a}fencelock:'], // the form of fencelock's side keys
      ['hold', 'k', '--etcd-key-encoding', 'as-is', '--', 'true'],
    ];
    for (const argv of cases) {
      const io = capturedIo(env);
      expect(await runCli(argv, io), argv.join(' ')).toBe(ExitCode.USAGE);
      expect(io.err(), argv.join(' ')).toMatch(/^fencelock: .+\n {2}see: fencelock( hold| inspect)? --help\n$/);
      expect(io.out()).toBe('');
    }
    expect(counter.connections()).toBe(0);
  });

  it('prints help with examples, per command, and the version', async () => {
    const global = capturedIo({});
    expect(await runCli(['--help'], global)).toBe(0);
    expect(global.out()).toContain('Examples:');
    for (const word of ['hold', 'inspect', '--backend', 'FENCELOCK_BACKEND', 'FENCELOCK_REDIS_URL', 'FENCELOCK_ETCD_ENDPOINTS', 'FENCELOCK_ZK_HOSTS', 'FENCELOCK_REDLOCK_URLS',
      '--redis-key-prefix', 'FENCELOCK_REDIS_KEY_PREFIX', '--redlock-key-prefix', 'FENCELOCK_REDLOCK_KEY_PREFIX',
      '--etcd-key-prefix', 'FENCELOCK_ETCD_KEY_PREFIX', '--etcd-key-encoding <escape|as-is>', 'FENCELOCK_ETCD_KEY_ENCODING',
      '--zk-root', 'FENCELOCK_ZK_ROOT', '--zk-naming <curator|curator-read-write|kazoo>', 'FENCELOCK_ZK_NAMING', '(default: /fencelock)']) {
      expect(global.out()).toContain(word);
    }
    const holdHelp = capturedIo({});
    expect(await runCli(['help', 'hold'], holdHelp)).toBe(0);
    for (const word of ['--wait', '--no-wait', '--ttl', '--kill-grace', '--max-hold', '--shared', '--metadata', '--conflict-exit-code', '--foreground', 'FENCELOCK_TOKEN', 'Examples:', '76']) {
      expect(holdHelp.out()).toContain(word);
    }
    const inspectHelp = capturedIo({});
    expect(await runCli(['inspect', '--help'], inspectHelp)).toBe(0);
    expect(inspectHelp.out()).toContain('--json');
    // The backend settings apply to both commands, so both helps show them.
    for (const help of [holdHelp, inspectHelp]) for (const flag of ['--etcd-key-prefix', '--zk-naming']) expect(help.out()).toContain(flag);
    expect(inspectHelp.out()).not.toContain('--kill-grace');

    const version = capturedIo({});
    expect(await runCli(['--version'], version)).toBe(0);
    const { version: expected } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(version.out()).toBe(`${expected}\n`);
  });

  it('draws a waiting status line on a terminal, and erases it when the wait ends', async () => {
    const key = `cli-status:${randomUUID()}`;
    const locks = createRedisLockProvider({ connection: redisUrl });
    try {
      const held = await locks.acquire(key, { metadata: 'the test holds it' });
      const tty = capturedIo(redisEnv, { tty: true });
      expect(await runCli(['hold', key, '--wait', '300ms', '--', 'true'], tty)).toBe(ExitCode.NOT_ACQUIRED);
      expect(tty.err()).toMatch(/\r\u001b\[2Kfencelock: waiting for lock "cli-status:[^"]+"/);
      // Erased before the error is printed, so the error starts on a clean line.
      expect(tty.err()).toMatch(/\r\u001b\[2Kfencelock: LOCK_TIMEOUT: /);

      // Not a terminal and not --verbose: only the error.
      const quiet = capturedIo(redisEnv);
      expect(await runCli(['hold', key, '--wait', '300ms', '--', 'true'], quiet)).toBe(ExitCode.NOT_ACQUIRED);
      expect(quiet.err()).not.toContain('waiting');
      expect(quiet.err()).toMatch(/^fencelock: LOCK_TIMEOUT: .*\n {2}hint: .*fencelock inspect cli-status:/);

      // inspect, in process, shows the test's own holder.
      const inspect = capturedIo(redisEnv);
      expect(await runCli(['inspect', key, '--json'], inspect)).toBe(0);
      expect(JSON.parse(inspect.out())).toMatchObject({ state: 'held', holders: [{ ownerId: held.ownerId, fencingToken: String(held.fencingToken), metadata: 'the test holds it' }] });
      await held.release();
    } finally {
      await locks.close();
    }
  });

  it('refuses a shared lock where the backend has none (64), after connecting but before locking', async () => {
    const io = capturedIo(redisEnv);
    expect(await runCli(['hold', `cli-shared:${randomUUID()}`, '--shared', '--', 'true'], io)).toBe(ExitCode.USAGE);
    expect(io.err()).toContain('LOCK_UNSUPPORTED');
  });

  it('says the backend is unavailable with 69 and a hint, and shows the stack only with --debug', async () => {
    const port = await freePort();
    const env = { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: `http://127.0.0.1:${port}` };
    const plain = capturedIo(env);
    expect(await runCli(['inspect', 'k'], plain)).toBe(ExitCode.BACKEND_UNAVAILABLE);
    expect(plain.err()).toMatch(/^fencelock: LOCK_BACKEND_UNAVAILABLE: .*\n {2}hint: is etcd at http:\/\/127\.0\.0\.1:\d+ running\?/);
    expect(plain.err()).not.toMatch(/\n\s+at /);
    const debug = capturedIo(env);
    expect(await runCli(['hold', 'k', '--debug', '--', 'true'], debug)).toBe(ExitCode.BACKEND_UNAVAILABLE);
    expect(debug.err()).toMatch(/\n\s+at /);
  });
});
