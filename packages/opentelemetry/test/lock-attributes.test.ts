import { describe, expect, it } from 'vitest';
import { lockAttributeCache } from '../src/lock-attributes.js';
import { AttributeName } from '../src/names.js';

const event = (key: string) => ({ provider: 'memory', key, mode: 'exclusive' as const });

describe('lockAttributeCache', () => {
  it('reuses one frozen attribute object per series, so recording allocates nothing per event', () => {
    const attributesOf = lockAttributeCache({ team: 'billing' }, () => undefined);
    const sets = attributesOf(event('a'));
    expect(attributesOf(event('b'))).toBe(sets);
    expect(sets.acquired(true)).toBe(attributesOf(event('c')).acquired(true));
    expect(sets.acquired(true)).toEqual({
      team: 'billing',
      [AttributeName.BACKEND]: 'memory',
      [AttributeName.MODE]: 'exclusive',
      [AttributeName.OUTCOME]: 'acquired',
      [AttributeName.CONTENDED]: true,
    });
    expect(Object.isFrozen(sets.acquired(true))).toBe(true);
    expect(sets.lost('expired').hold).toEqual({ ...sets.lost('expired').loss, [AttributeName.OUTCOME]: 'lost' });
  });

  it('bounds the cache when keys are recorded, dropping the oldest entries first', () => {
    const attributesOf = lockAttributeCache({}, (key) => key);
    const first = attributesOf(event('k0'));
    expect(attributesOf(event('k0'))).toBe(first);
    for (let i = 1; i <= 1_000; i += 1) attributesOf(event(`k${i}`));
    expect(attributesOf(event('k0'))).not.toBe(first);
    expect(attributesOf(event('k0')).base).toEqual(first.base);
    const last = attributesOf(event('k1000'));
    expect(attributesOf(event('k1000'))).toBe(last);
  });
});
