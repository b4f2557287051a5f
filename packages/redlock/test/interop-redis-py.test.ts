/**
 * Interop with a real peer: redis-py's `Lock` (4.3, Debian's python3-redis), taken on every master
 * as a Python Redlock over redis-py does it. Its key is exactly the lock name with a `uuid1().hex`
 * value and a TTL; ours is the same key, so each excludes the other on every master.
 */
import type { LockProvider } from '@fencelock/core';
import { SYSTEM_PYTHON, redisCommand, topology } from '@fencelock/test-infra';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedlockLockProvider } from '../src/index.js';

const run = promisify(execFile);
const { redlockUrls, servers } = topology();
const ports = servers.redlock.map((e) => e.port);

// For each master: try redis-py's Lock(name, timeout=10).acquire(blocking=False, token=…); print the results,
// then release those it got unless told to keep them (they then expire after 10 s or are deleted by the test).
const PEER = `
import json, sys, uuid, redis
name, keep, ports = sys.argv[1], sys.argv[2] == 'keep', [int(p) for p in sys.argv[3:]]
token = uuid.uuid1().hex  # one token on every master, as a Redlock over redis-py uses it
results = []
for port in ports:
    lock = redis.Redis(host='127.0.0.1', port=port).lock(name, timeout=10)
    got = lock.acquire(blocking=False, token=token)
    results.append({'port': port, 'acquired': bool(got), 'token': lock.local.token.decode() if got else None})
    if got and not keep:
        lock.release()
print(json.dumps(results))
`;

async function redisPyLocks(name: string, keep: boolean): Promise<{ port: number; acquired: boolean; token: string | null }[]> {
  const { stdout } = await run(SYSTEM_PYTHON, ['-c', PEER, name, keep ? 'keep' : 'release', ...ports.map(String)], { timeout: 20_000 });
  return JSON.parse(stdout) as { port: number; acquired: boolean; token: string | null }[];
}

const opened: LockProvider[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((p) => p.close()));
});

describe('interop with redis-py Lock on every master', () => {
  it('while we hold the lock, redis-py gets it on no master', async () => {
    const provider = createRedlockLockProvider({ masters: redlockUrls });
    opened.push(provider);
    const name = `interop-py:${randomUUID()}`;
    const lock = await provider.acquire(name);
    const results = await redisPyLocks(name, false);
    expect(results.map((r) => r.acquired)).toEqual(ports.map(() => false));
    expect(await lock.release()).toBe(true);
    expect((await redisPyLocks(name, false)).map((r) => r.acquired)).toEqual(ports.map(() => true));
  }, 30_000);

  it('while redis-py holds it on every master, we cannot acquire; inspect shows its token; our release leaves it alone', async () => {
    const provider = createRedlockLockProvider({ masters: redlockUrls });
    opened.push(provider);
    const name = `interop-py-held:${randomUUID()}`;
    const results = await redisPyLocks(name, true);
    expect(results.every((r) => r.acquired)).toBe(true);
    try {
      expect(await provider.tryAcquire(name)).toBeUndefined();
      expect((await provider.inspect(name))?.holders[0]?.ownerId).toBe(results[0]?.token);
      for (const [index, port] of ports.entries()) expect(await redisCommand(port, ['GET', name])).toBe(results[index]?.token);
    } finally {
      for (const port of ports) await redisCommand(port, ['DEL', name]);
    }
    const lock = await provider.acquire(name);
    await lock.release();
  }, 30_000);
});
