import { randomUUID } from 'node:crypto';
import { redisCommand, startRedisServer, type RedisServer } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/index.js';
import { capturedIo } from './support/captured-io.js';

// A dedicated server: its eviction policy is changed, which the shared one must never see.
describe('backend warnings (a Redis whose maxmemory-policy is not noeviction)', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedisServer({ persistence: false });
    await redisCommand(server.port, ['CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru']);
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });
  const env = (): Record<string, string> => ({ FENCELOCK_BACKEND: 'redis', FENCELOCK_REDIS_URL: server.url });

  it('inspect prints the warning, and --json carries it', async () => {
    const key = `cli-warning:${randomUUID()}`;
    const text = capturedIo(env());
    expect(await runCli(['inspect', key], text)).toBe(0);
    expect(text.out()).toMatch(/is free .*\nwarning: Redis 127\.0\.0\.1:\d+ runs maxmemory-policy "volatile-lru"/);
    const json = capturedIo(env());
    expect(await runCli(['inspect', key, '--json'], json)).toBe(0);
    expect(JSON.parse(json.out())).toMatchObject({ state: 'free', warnings: [{ code: 'redis-eviction-policy' }] });
  });

  it('hold says it on stderr, without --verbose, and still runs the command', async () => {
    const io = capturedIo(env());
    expect(await runCli(['hold', `cli-warning:${randomUUID()}`, '--', 'true'], io)).toBe(0);
    expect(io.err()).toContain('fencelock: warning: Redis 127.0.0.1:');
    expect(io.err()).toContain('Only "noeviction" keeps locks safe.');
  });
});
