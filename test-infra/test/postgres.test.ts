import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort, postgresProbe, topology, topologyEnv, TOPOLOGY_ENV } from '../src/index.js';
import { startEchoServer } from './helpers.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../bin/infra.mjs', import.meta.url));

describe('postgresProbe()', () => {
  it('says nothing answers on a free port', async () => {
    expect(await postgresProbe(await freePort(), { timeoutMs: 500 })).toBeUndefined();
  });

  it('does not take a server that is not PostgreSQL for one', async () => {
    const echo = await startEchoServer();
    try {
      // The echo of our startup message is no PostgreSQL reply.
      expect((await postgresProbe(echo.port, { timeoutMs: 500 }))?.accepting ?? false).toBe(false);
    } finally {
      await echo.close();
    }
  });

  it('reads the reply to the startup message: an authentication request, or "starting up" (57P03)', async () => {
    const message = (type: string, body: Buffer): Buffer => {
      const head = Buffer.alloc(5);
      head.write(type, 0, 'latin1');
      head.writeInt32BE(4 + body.length, 1);
      return Buffer.concat([head, body]);
    };
    const authOk = message('R', Buffer.from([0, 0, 0, 0]));
    const startingUp = message('E', Buffer.from('SFATAL\0C57P03\0Mthe database system is starting up\0\0', 'latin1'));
    const noSuchRole = message('E', Buffer.from('SFATAL\0C28000\0Mrole "x" does not exist\0\0', 'latin1'));
    const answers = async (reply: Buffer): Promise<unknown> => {
      // Split in two writes: the probe must wait for the whole message.
      const server = net.createServer((socket) => {
        socket.once('data', () => {
          socket.write(reply.subarray(0, 3));
          setImmediate(() => socket.write(reply.subarray(3)));
        });
        socket.on('error', () => undefined);
      });
      await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
      const { port } = server.address() as net.AddressInfo;
      try {
        return await postgresProbe(port, { timeoutMs: 2_000 });
      } finally {
        server.close();
      }
    };
    expect(await answers(authOk)).toEqual({ accepting: true, detail: 'accepting connections' });
    expect(await answers(startingUp)).toMatchObject({ accepting: false, detail: expect.stringContaining('57P03') });
    expect(await answers(noSuchRole)).toMatchObject({ accepting: true, detail: expect.stringContaining('28000') });
  });
});

// The CLI starts PostgreSQL like every shared service. Here it runs with a state dir of its own and
// every other service pointed at the shared servers (external: never started or stopped here), so
// `down` touches only the PostgreSQL this test started, on a port of its own.
describe('infra CLI with PostgreSQL', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    // If an assertion failed half-way, stop what this test's state dir recorded.
    for (const dir of dirs.splice(0)) {
      if (existsSync(join(dir, 'state.json'))) await cli(['down'], dir).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });

  async function isolated(): Promise<{ dir: string; url: string; port: number }> {
    const dir = await mkdtemp(join(tmpdir(), 'fencelock-infra-state-'));
    dirs.push(dir);
    const port = await freePort();
    return { dir, port, url: `postgres://postgres@127.0.0.1:${port}/postgres` };
  }

  function cli(args: readonly string[], dir: string, postgresUrl?: string): Promise<{ stdout: string; stderr: string }> {
    const env = {
      ...process.env,
      ...topologyEnv(topology()),
      FENCELOCK_INFRA_DIR: dir,
      ...(postgresUrl === undefined ? {} : { [TOPOLOGY_ENV.postgres]: postgresUrl }),
    };
    return run(process.execPath, [CLI, ...args], { env, timeout: 120_000 });
  }

  it('up starts it as a recorded service, status shows it, down stops it and deletes its data', async () => {
    const { dir, port, url } = await isolated();
    const up = await cli(['up'], dir, url);
    expect(up.stdout).toMatch(/started: postgres; already running: -; external: redis, redlock, redisCluster, zookeeper, etcd; failed: -/);
    expect(await postgresProbe(port)).toEqual({ accepting: true, detail: 'accepting connections' });

    const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as {
      services: Record<string, { members: { pid: number; cwd: string }[] }>;
    };
    expect(Object.keys(state.services)).toEqual(['postgres']);
    const member = state.services.postgres?.members[0];
    expect(member).toBeDefined();
    expect(existsSync(join(member?.cwd ?? '', 'PG_VERSION'))).toBe(true);

    const status = await cli(['status'], dir, url);
    expect(status.stdout).toMatch(new RegExp(`postgres +${url.replace(/[.]/g, '\\.')} +up +accepting connections +fencelock \\(up, pid ${member?.pid}\\)`));

    const down = await cli(['down'], dir, url);
    expect(down.stdout).toContain('stopped postgres (1/1)');
    expect(await postgresProbe(port, { timeoutMs: 500 })).toBeUndefined();
    expect(existsSync(member?.cwd ?? '')).toBe(false);
    expect(existsSync(join(dir, 'state.json'))).toBe(false);
  });

  it('run starts it for the command with its URL in FENCELOCK_POSTGRES_URL, and stops it afterwards', async () => {
    const { dir, port, url } = await isolated();
    const script = `
      const url = process.env.${TOPOLOGY_ENV.postgres};
      const net = await import('node:net');
      const socket = net.connect({ host: '127.0.0.1', port: Number(new URL(url).port) });
      socket.once('connect', () => { console.log('REACHED ' + url); socket.destroy(); });
      socket.once('error', () => process.exit(3));
    `;
    const result = await cli(['run', '--', process.execPath, '--input-type=module', '--eval', script], dir, url);
    expect(result.stdout).toContain(`REACHED ${url}`);
    expect(result.stdout).toContain('stopped postgres');
    expect(await postgresProbe(port, { timeoutMs: 500 })).toBeUndefined();
  });
});
