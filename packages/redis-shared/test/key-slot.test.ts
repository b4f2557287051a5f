/**
 * The hash-tag table names every side key (fence counters, metadata, lines of waiters) of locks on a
 * Redis Cluster and on a single server alike: it must never change between versions, or a new
 * version would count tokens in other keys than the old one while both run.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { HASH_SLOTS, hashSlot, hashTagForSlot } from '../src/key-slot.js';

describe('hash tags for slots', () => {
  it('every slot has a tag that hashes to it, and the table is the one every earlier version used', () => {
    const tags = Array.from({ length: HASH_SLOTS }, (_, slot) => hashTagForSlot(slot));
    tags.forEach((tag, slot) => expect(hashSlot(`{${tag}}fencelock:x`)).toBe(slot));
    expect([tags[0], tags[1], tags[HASH_SLOTS - 1]]).toEqual(['1bz', 'emj', 'hia']);
    expect(createHash('sha256').update(tags.join(',')).digest('hex')).toBe('a3215d917d1d893709d4388eac78ee4c1f29fd0325a1f1340103fbf56567281e');
  });

  it('hashes keys as the server does: the first {…} with something in it, else the whole key', () => {
    // What CLUSTER KEYSLOT answered for each key on Redis 7.0.
    const slots: [string, number][] = [
      ['123456789', 12_739],
      ['{user1000}.following', 3_443],
      ['user1000', 3_443],
      ['foo{}{bar}', 8_363],
      ['foo{{bar}}zap', 4_015],
      ['foo{bar}{zap}', 5_061],
      ['ключ', 10_303],
    ];
    for (const [key, slot] of slots) expect(hashSlot(key), key).toBe(slot);
  });
});
