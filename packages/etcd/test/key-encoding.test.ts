import { describe, expect, it } from 'vitest';
import { electionName, escapeKeySegment, lockName } from '../src/index.js';
import { decodeLockValue, encodeLockValue, isReader } from '../src/lock-value.js';
import { prefixRange } from '../src/key-encoding.js';

const KEYS = ['a', 'a/b', 'a%2Fb', 'a%252Fb', '%', '/', '//', '.', '..', 'a\u0000b', '\u0001', '\u007f', 'é', 'e\u0301', ' a', 'A', '🔒', 'a_1', 'a/'];

describe('key encoding', () => {
  it('is injective and never yields a "/"', () => {
    const encoded = KEYS.map(escapeKeySegment);
    expect(new Set(encoded).size).toBe(KEYS.length);
    for (const segment of encoded) expect(segment).not.toContain('/');
    expect(escapeKeySegment('a/b')).toBe('a%2Fb');
    expect(escapeKeySegment('a%2Fb')).toBe('a%252Fb');
    expect(escapeKeySegment('é')).toBe('é');
  });

  it('keeps every lock range free of other locks\' keys (no name is a prefix of another range)', () => {
    const names = KEYS.map((key) => lockName(key, 'fencelock/', 'escape'));
    for (const name of names) {
      for (const other of names) {
        if (other === name) continue;
        // Another lock's waiter key starts with `<other>/`; it must not fall in `<name>/`.
        expect(`${other}/x`.startsWith(`${name}/`)).toBe(false);
      }
    }
  });

  it('as-is uses the name verbatim, as etcdctl lock does', () => {
    expect(lockName('jobs/42', '', 'as-is')).toBe('jobs/42');
    expect(lockName('jobs/42', 'fencelock/', 'escape')).toBe('fencelock/jobs%2F42');
  });

  it('keeps elections apart from every lock under either encoding, and refuses verbatim keys that would reach them', () => {
    const elections = KEYS.map((name) => electionName(name, 'fencelock/'));
    expect(electionName('jobs/42', 'fencelock/')).toBe('fencelock/%election/jobs%2F42');
    expect(new Set(elections).size).toBe(KEYS.length);
    const locks = [...KEYS, '%election', '%election/a', 'election', '%25election'].flatMap((key) => {
      const names = [lockName(key, 'fencelock/', 'escape')];
      if (!key.startsWith('%election')) names.push(lockName(key, 'fencelock/', 'as-is'));
      return names;
    });
    for (const election of elections) {
      for (const lock of [...locks, ...elections.filter((other) => other !== election)]) {
        // Neither range may hold the other's keys (`<name>/<lease hex>`).
        expect(`${lock}/x`.startsWith(`${election}/`), `${lock} inside ${election}`).toBe(false);
        expect(`${election}/x`.startsWith(`${lock}/`), `${election} inside ${lock}`).toBe(false);
      }
    }
    for (const key of ['%election', '%election/a', '%election/a/b']) {
      expect(() => lockName(key, 'fencelock/', 'as-is')).toThrow(RangeError);
    }
    expect(lockName('%elections', 'fencelock/', 'as-is')).toBe('fencelock/%elections');
  });

  it('computes etcd prefix ranges ("prefix + 1")', () => {
    expect(prefixRange(Buffer.from('ab/')).end.toString()).toBe('ab0');
    expect([...prefixRange(Buffer.from([0x61, 0xff])).end]).toEqual([0x62]);
    expect([...prefixRange(Buffer.from([0xff])).end]).toEqual([0]);
  });
});

describe('lock values', () => {
  it('round-trips ours and treats anything else as a foreign, exclusive holder', () => {
    const value = encodeLockValue({ ownerId: 'o-1', mode: 'shared', metadata: 'm' });
    expect(decodeLockValue(value)).toEqual({ ownerId: 'o-1', mode: 'shared', metadata: 'm' });
    expect(isReader(value)).toBe(true);
    for (const foreign of ['', 'x', '{"mode":"shared"}', '{not json', '[1]', 'null']) {
      expect(decodeLockValue(Buffer.from(foreign))).toBeUndefined();
      expect(isReader(Buffer.from(foreign))).toBe(false);
    }
  });
});
