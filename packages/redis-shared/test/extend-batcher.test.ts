import { topology } from '@fencelock/test-infra';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExtendBatcher, extendManyCommand } from '../src/index.js';

const { redisUrl } = topology();

describe('ExtendBatcher on a real server', () => {
  let client: Redis;
  beforeAll(() => {
    client = new Redis(redisUrl, { maxRetriesPerRequest: 2 });
  });
  afterAll(() => client?.disconnect());

  /** Two locks, one of them ours (`owner`), the other someone else's. */
  async function twoLocks(): Promise<{ ours: string; theirs: string }> {
    const [ours, theirs] = [`batch-ours:${randomUUID()}`, `batch-theirs:${randomUUID()}`];
    await client.set(ours, 'owner', 'PX', 10_000);
    await client.set(theirs, 'someone-else', 'PX', 10_000);
    return { ours, theirs };
  }

  it('sends the extensions of one turn as one call and reports each lock: extended, or not ours', async () => {
    const { ours, theirs } = await twoLocks();
    const extendMany = extendManyCommand(client);
    let calls = 0;
    const batcher = new ExtendBatcher(
      (keys, args) => {
        calls += 1;
        return extendMany(keys, args);
      },
      { bySlot: false, withMeta: false },
    );
    const [mine, other] = await Promise.all([
      batcher.extend({ lockKey: ours, ownerId: 'owner', ttlMs: 20_000 }),
      batcher.extend({ lockKey: theirs, ownerId: 'owner', ttlMs: 20_000 }),
    ]);
    expect(calls).toBe(1);
    expect(mine.extended).toBe(true);
    expect(other.extended).toBe(false);
    expect(await client.pttl(ours)).toBeGreaterThan(10_000);
    await client.del(ours, theirs);
  });

  // What a server answers for a script other than the protocol's: a proxy in between, or another
  // copy of the library that registered a different script under the same command name.
  const malformed: [string, string][] = [
    ['a status reply', "return redis.status_reply('OK')"],
    ['nil', 'return false'],
    ['an array with one result for a batch of two', 'return {1}'],
    ['an array with results other than 0 and 1', "return {1, 'yes'}"],
  ];
  for (const [what, lua] of malformed) {
    it(`a reply that is ${what} fails every extension of the batch (a transport failure), none is reported lost`, async () => {
      const { ours, theirs } = await twoLocks();
      const batcher = new ExtendBatcher(() => client.eval(lua, 0), { bySlot: false, withMeta: false });
      const outcomes = await Promise.allSettled([
        batcher.extend({ lockKey: ours, ownerId: 'owner', ttlMs: 20_000 }),
        batcher.extend({ lockKey: theirs, ownerId: 'owner', ttlMs: 20_000 }),
      ]);
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
      await client.del(ours, theirs);
    });
  }
});
