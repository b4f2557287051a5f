import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { blockerOf, holdersOf, ownNodePrefix, parseContender, sortedContenders } from '../src/contender-names.js';
import { decodeKeySegment, encodeKeySegment } from '../src/index.js';
import { createZooKeeperLockProvider } from '../src/index.js';

describe('key encoding', () => {
  const keys = ['.', '..', '...', '/', '//', 'a/b', 'a%2Fb', '%2E', 'trailing/', 'a\u0000b', '\u0001', ' a', 'A', 'a', 'é', 'e\u0301', '🔒 lock', '__proto__', 'zookeeper', 'orders:42', 'x-lock-0000000001', '\uE000', '\uFFF0'];

  it('is injective and reversible, and gives one legal ZooKeeper segment', () => {
    const encoded = keys.map(encodeKeySegment);
    expect(new Set(encoded).size).toBe(keys.length);
    for (const [index, segment] of encoded.entries()) {
      expect(decodeKeySegment(segment)).toBe(keys[index]);
      expect(segment).toMatch(/^[A-Za-z0-9\-_~.:%]+$/);
      expect(segment).not.toMatch(/^\.{1,2}$/);
    }
  });

  it('leaves readable keys readable, so other libraries can lock the same path', () => {
    expect(encodeKeySegment('orders:42')).toBe('orders:42');
    expect(encodeKeySegment('a/b')).toBe('a%2Fb');
    expect(encodeKeySegment('a%2Fb')).toBe('a%252Fb');
    expect(encodeKeySegment('..')).toBe('%2E%2E');
    expect(encodeKeySegment('a\u0000b')).toBe('a%00b');
  });
});

describe('contender names', () => {
  const id = randomUUID();
  const hex = id.replaceAll('-', '');

  it('are recognised exactly as the patterns of the other recipes match them: marker, then ten digits at the end', () => {
    // The patterns Curator's and kazoo's names were first recognised by, kept here as the reference.
    const contender = /^(.*?)(-lock-|__lock__|__READ__|__WRIT__|__rlock__)(\d{10})$/;
    const latch = /^(.*?)(latch-)(\d{10})$/;
    const sequences = ['0000000001', '000000001', '00000000001', '000000000x', '\u0660000000001', '9999999999'];
    const heads = ['', `_c_${id}`, hex, 'a\nb', 'a\u2028', 'x-lock-0000000001', '_rlock_', '__', '-lock', 'latch', 'é🔒'];
    const markers = ['-lock-', '__lock__', '__READ__', '__WRIT__', '__rlock__', 'latch-', '_lock_', '-lock', 'lock-', '', '__r'];
    for (const head of heads) {
      for (const marker of markers) {
        for (const sequence of sequences) {
          const name = `${head}${marker}${sequence}`;
          for (const [naming, pattern] of [['curator', contender], ['latch', latch]] as const) {
            const match = pattern.exec(name);
            const parsed = parseContender(name, naming);
            expect(parsed === undefined, `${JSON.stringify(name)} as ${naming}`).toBe(match === null);
            if (match === null || parsed === undefined) continue;
            expect([parsed.sequence, parsed.mode], name).toEqual([Number.parseInt(match[3] ?? '', 10), match[2] === '__READ__' || match[2] === '__rlock__' ? 'shared' : 'exclusive']);
          }
        }
      }
    }
  });

  it('parses Curator, Curator read-write and kazoo names, and ignores anything else', () => {
    expect(parseContender(`_c_${id}-lock-0000000003`)).toMatchObject({ sequence: 3, mode: 'exclusive', ownerId: id });
    expect(parseContender(`_c_${id}-__READ__0000000004`)).toMatchObject({ sequence: 4, mode: 'shared', ownerId: id });
    expect(parseContender(`_c_${id}-__WRIT__0000000005`)).toMatchObject({ sequence: 5, mode: 'exclusive', ownerId: id });
    expect(parseContender(`${hex}__lock__0000000006`)).toMatchObject({ sequence: 6, mode: 'exclusive', ownerId: id });
    expect(parseContender(`${hex}__rlock__0000000007`)).toMatchObject({ sequence: 7, mode: 'shared' });
    expect(parseContender('lease-0000000001')).toBeUndefined();
    expect(parseContender('x-lock-123')).toBeUndefined();
  });

  it('orders by sequence across naming schemes and picks the one node to watch', () => {
    const names = [`b__lock__0000000012`, `_c_${id}-lock-0000000010`, `_c_${id}-__READ__0000000011`, `_c_${id}-__READ__0000000013`, 'junk'];
    const sorted = sortedContenders(names);
    expect(sorted.map((c) => c.sequence)).toEqual([10, 11, 12, 13]);
    // An exclusive node waits for the node just before it, a reader for the last writer before it.
    expect(blockerOf(sorted, 'b__lock__0000000012')).toMatchObject({ sequence: 11 });
    expect(blockerOf(sorted, `_c_${id}-__READ__0000000013`)).toMatchObject({ sequence: 12 });
    expect(blockerOf(sorted, `_c_${id}-__READ__0000000011`)).toMatchObject({ sequence: 10 });
    expect(blockerOf(sorted, `_c_${id}-lock-0000000010`)).toBeUndefined();
    expect(blockerOf(sorted, 'missing')).toBe('missing');
    expect(holdersOf(sorted).map((c) => c.sequence)).toEqual([10]);
    expect(holdersOf(sortedContenders([`_c_${id}-__READ__0000000001`, `x__lock__0000000003`, `_c_${id}-__READ__0000000002`])).map((c) => c.sequence)).toEqual([1, 2]);
  });

  it("keeps a leader latch's candidates apart: only latch- nodes count there, and they are no lock contenders", () => {
    const names = [`_c_${id}-latch-0000000007`, `_c_${id}-lock-0000000005`, 'latch-0000000006', `${hex}__lock__0000000004`, 'junk'];
    const sorted = sortedContenders(names, 'latch');
    expect(sorted.map((c) => [c.sequence, c.ownerId])).toEqual([
      [6, undefined],
      [7, id],
    ]);
    expect(blockerOf(sorted, `_c_${id}-latch-0000000007`)).toMatchObject({ sequence: 6 });
    expect(sortedContenders(names).map((c) => c.sequence)).toEqual([4, 5]);
    expect(ownNodePrefix('latch', id, 'exclusive')).toEqual({ prefix: `_c_${id}-latch-`, guid: `_c_${id}-` });
  });

  it('names our nodes in Curator protected form, or kazoo form, with the owner id as the unique part', () => {
    expect(parseContender(`${ownNodePrefix('kazoo', id, 'shared').prefix}0000000001`)).toMatchObject({ mode: 'shared', ownerId: id });
    expect(ownNodePrefix('curator', id, 'exclusive')).toEqual({ prefix: `_c_${id}-lock-`, guid: `_c_${id}-` });
    expect(ownNodePrefix('curator-read-write', id, 'exclusive').prefix).toBe(`_c_${id}-__WRIT__`);
    expect(ownNodePrefix('kazoo', id, 'exclusive')).toEqual({ prefix: `${hex}__lock__`, guid: hex });
    expect(ownNodePrefix('kazoo', id, 'shared')).toEqual({ prefix: `${hex}__rlock__`, guid: hex });
    expect(ownNodePrefix('curator', id, 'shared').prefix).toBe(`_c_${id}-__READ__`);
  });
});

describe('options', () => {
  const base = { connectionString: '127.0.0.1:2181' };
  it('are validated before any I/O', () => {
    const bad: [unknown, string][] = [
      [{}, 'TypeError'],
      [{ ...base, client: {} }, 'TypeError'],
      [{ ...base, sessionTimeoutMs: 999 }, 'RangeError'],
      [{ ...base, sessionTimeoutMs: Number.NaN }, 'RangeError'],
      [{ ...base, sessionTimeoutMs: '3000' }, 'TypeError'],
      [{ ...base, defaultTtlMs: 3000 }, 'TypeError'],
      [{ ...base, root: 'locks' }, 'RangeError'],
      [{ ...base, root: '/' }, 'RangeError'],
      [{ ...base, root: '/a/../b' }, 'RangeError'],
      [{ ...base, root: '/zookeeper/x' }, 'RangeError'],
      [{ ...base, naming: 'zk' }, 'TypeError'],
      [{ ...base, sessionTimeoutMs: 3000, requestTimeoutMs: 3001 }, 'RangeError'],
      [{ ...base, requestTimeoutMs: 0 }, 'RangeError'],
      [{ ...base, heartbeatIntervalMs: 1000 }, 'TypeError'],
      [{ ...base, removeEmptyParents: 'yes' }, 'TypeError'],
      [{ ...base, defaultWaitMs: -1 }, 'RangeError'],
    ];
    for (const [options, kind] of bad) {
      let error: unknown;
      try {
        createZooKeeperLockProvider(options as never);
      } catch (caught) {
        error = caught;
      }
      expect(error, JSON.stringify(options)).toMatchObject({ code: 'LOCK_INVALID_ARGUMENT' });
      expect(error).toBeInstanceOf(kind === 'TypeError' ? TypeError : RangeError);
    }
  });

  it('refuse the old operationTimeoutMs as unknown, naming requestTimeoutMs', () => {
    expect(() => createZooKeeperLockProvider({ ...base, operationTimeoutMs: 1_000 } as never)).toThrow(
      expect.objectContaining({ code: 'LOCK_INVALID_ARGUMENT', name: 'LockTypeError', message: expect.stringContaining('use requestTimeoutMs') }),
    );
    // The new name is taken, up to the session timeout.
    expect(() => createZooKeeperLockProvider({ ...base, sessionTimeoutMs: 3_000, requestTimeoutMs: 3_000 })).not.toThrow();
  });

  it('make the session timeout the default TTL and the keepalive step the TTL resolution', async () => {
    const provider = createZooKeeperLockProvider({ ...base, sessionTimeoutMs: 6_000 });
    expect(provider.name).toBe('zookeeper');
    expect(provider.defaultTtlMs).toBe(6_000);
    expect(provider.capabilities).toMatchObject({ expiry: 'session', ttlResolutionMs: 2_000, minTtlMs: 1_000 });
    await expect(provider.acquire('k', { ttlMs: 5_000 })).rejects.toMatchObject({ code: 'LOCK_UNSUPPORTED' });
    await provider.close();
  });
});
