import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  RESERVED_PORTS,
  isPortFree,
  redisCommand,
  startRedisMasters,
  startRedisServer,
  type RedisServer,
} from '../src/index.js';
import { processState } from '../src/processes.js';

const servers: RedisServer[] = [];
async function track<T extends RedisServer | RedisServer[]>(value: Promise<T>): Promise<T> {
  const resolved = await value;
  servers.push(...(Array.isArray(resolved) ? resolved : [resolved]));
  return resolved;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

describe('startRedisServer()', () => {
  it('starts on a free loopback port outside the shared topology and answers PING', async () => {
    const redis = await track(startRedisServer());
    expect(RESERVED_PORTS.has(redis.port)).toBe(false);
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
    expect(redis.running).toBe(true);
    expect(await redisCommand(redis.port, ['PING'])).toBe('PONG');
    expect(await redisCommand(redis.port, ['CONFIG', 'GET', 'appendonly'])).toEqual(['appendonly', 'no']);
    expect(await redisCommand(redis.port, ['CONFIG', 'GET', 'bind'])).toEqual(['bind', '127.0.0.1']);
  });

  it('pause() stops the process until resume(); a request sent meanwhile is answered after resume', async () => {
    const redis = await track(startRedisServer());
    await redis.pause();
    expect(redis.paused).toBe(true);
    expect(processState(redis.pid)).toBe('T');
    // The kernel accepts the connection, but nobody reads it.
    await expect(redisCommand(redis.port, ['PING'], { timeoutMs: 300 })).rejects.toThrow(/did not answer/);
    const queued = redisCommand(redis.port, ['SET', 'queued', '1'], { timeoutMs: 10_000 });
    await redis.resume();
    expect(redis.paused).toBe(false);
    await expect(queued).resolves.toBe('OK');
    expect(await redisCommand(redis.port, ['GET', 'queued'])).toBe('1');
  });

  it('kill() crashes it; restart() comes back on the same port, empty without persistence', async () => {
    const redis = await track(startRedisServer());
    const firstPid = redis.pid;
    expect(await redisCommand(redis.port, ['SET', 'k', 'v'])).toBe('OK');
    await redis.kill();
    expect(redis.running).toBe(false);
    expect(() => redis.pid).toThrow(/not running/);
    await expect(redisCommand(redis.port, ['PING'])).rejects.toThrow(/ECONNREFUSED/);
    await redis.restart();
    expect(redis.pid).not.toBe(firstPid);
    expect(await redisCommand(redis.port, ['GET', 'k'])).toBeNull();
  });

  it('with persistence (AOF, fsync always) a key survives kill -9 and restart', async () => {
    const redis = await track(startRedisServer({ persistence: true }));
    expect(await redisCommand(redis.port, ['CONFIG', 'GET', 'appendfsync'])).toEqual(['appendfsync', 'always']);
    expect(await redisCommand(redis.port, ['SET', 'k', 'v'])).toBe('OK');
    expect(await redisCommand(redis.port, ['INCR', 'fence'])).toBe(1);
    await redis.kill();
    await redis.restart();
    expect(await redisCommand(redis.port, ['GET', 'k'])).toBe('v');
    expect(await redisCommand(redis.port, ['INCR', 'fence'])).toBe(2);
  });

  it('restart() may switch persistence; restart() of a running server is a crash + start', async () => {
    const redis = await track(startRedisServer({ persistence: true }));
    await redisCommand(redis.port, ['SET', 'k', 'v']);
    await redis.restart({ persistence: false });
    expect(redis.persistence).toBe(false);
    expect(await redisCommand(redis.port, ['CONFIG', 'GET', 'appendonly'])).toEqual(['appendonly', 'no']);
    // Without AOF loading, the key written under persistence is not there.
    expect(await redisCommand(redis.port, ['GET', 'k'])).toBeNull();
    await redis.restart({ persistence: true });
    expect(await redisCommand(redis.port, ['CONFIG', 'GET', 'appendonly'])).toEqual(['appendonly', 'yes']);
  });

  it('stop() kills a paused server, frees the port and deletes the data dir; twice is harmless', async () => {
    const redis = await startRedisServer();
    const pid = redis.pid;
    const dataDir = dirname(redis.logFile);
    await redis.pause();
    await redis.stop();
    await redis.stop();
    const state = processState(pid);
    expect(state === undefined || state === 'Z').toBe(true);
    expect(existsSync(dataDir)).toBe(false);
    expect(await isPortFree(redis.port)).toBe(true);
    await expect(redis.restart()).rejects.toThrow(/was stopped/);
  });

  it('refuses a port of the shared topology and a port already in use', async () => {
    await expect(startRedisServer({ port: 6379 })).rejects.toThrow(/shared topology/);
    const busy = await track(startRedisServer());
    await expect(startRedisServer({ port: busy.port })).rejects.toThrow(/already in use/);
  });
});

describe('startRedisMasters()', () => {
  it('starts independent masters on distinct ports; killing a minority leaves the others serving', async () => {
    const masters = await track(startRedisMasters(5));
    expect(new Set(masters.map((m) => m.port)).size).toBe(5);
    await Promise.all(masters.slice(0, 2).map((m) => m.kill()));
    const answers = await Promise.allSettled(masters.map((m) => redisCommand(m.port, ['PING'])));
    expect(answers.map((a) => a.status)).toEqual(['rejected', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
  });

  it('rejects a bad count before starting anything', async () => {
    await expect(startRedisMasters(0)).rejects.toThrow(RangeError);
    await expect(startRedisMasters(2.5)).rejects.toThrow(RangeError);
  });
});
