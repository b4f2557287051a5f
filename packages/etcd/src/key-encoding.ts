/**
 * How a user's lock key becomes the etcd prefix its waiters live under.
 *
 * etcd's `concurrency.Mutex` keeps every waiter of lock NAME at `NAME/<lease id in hex>` and treats
 * EVERY key under `NAME/` as a waiter — so a holder of `NAME/sub` blocks `NAME`. With the default
 * `escape` encoding the user key becomes one path segment with no `/` in it, so no lock's range
 * (`<prefix><segment>/`) can contain another lock's keys: `a` never sees `a/b`'s waiters.
 */

import { LockRangeError } from '@fencelock/core/adapter';

/** How user keys are turned into etcd names. */
export type KeyEncoding = 'escape' | 'as-is';

// Percent-encode '%' (so the encoding is injective), '/' (so no lock name is a prefix of another's
// range) and the C0 controls and DEL (so names stay printable in etcdctl). Everything else — '.',
// '..', spaces, any Unicode — is kept byte for byte: etcd keys are plain bytes with no path rules.
const ESCAPED = /[%/\u0000-\u001f\u007f]/g;

/** Encodes a validated user key as one segment without `/`; injective (`a/b` → `a%2Fb`, `a%2Fb` → `a%252Fb`). */
export function escapeKeySegment(key: string): string {
  return key.replace(ESCAPED, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/**
 * The etcd name of a lock (Go's `pfx` without the trailing `/`). Waiter keys are `<name>/<lease hex>`.
 * With `as-is`, the key is used verbatim (after `keyPrefix`), exactly as `etcdctl lock NAME` would.
 */
export function lockName(key: string, keyPrefix: string, encoding: KeyEncoding): string {
  if (encoding === 'as-is' && key.startsWith(RESERVED_AS_IS)) {
    throw new LockRangeError('key', `keys starting with ${JSON.stringify(RESERVED_AS_IS)} are reserved with keyEncoding 'as-is' (fencelock's own keys live there)`);
  }
  if (encoding === 'as-is' && (key === ELECTION_SEGMENT || key.startsWith(`${ELECTION_SEGMENT}/`))) {
    throw new LockRangeError('key', `the key ${JSON.stringify(ELECTION_SEGMENT)} and keys under ${JSON.stringify(`${ELECTION_SEGMENT}/`)} are reserved with keyEncoding 'as-is' (elections live there)`);
  }
  return keyPrefix + (encoding === 'escape' ? escapeKeySegment(key) : key);
}

// fencelock's own keys under the prefix (tombstones: see `tombstoneRoot`) start with NUL, which an
// escaped key never does; only a verbatim key could.
const RESERVED_AS_IS = '\u0000fencelock-';

/**
 * Where the tombstones of cancelled attempts live: `<keyPrefix>\0fencelock-cancelled/`. Under the
 * prefix, so that a role limited to the prefix covers them, and outside every lock's range.
 */
export function tombstoneRoot(keyPrefix: string): Buffer {
  return Buffer.from(`${keyPrefix}${RESERVED_AS_IS}cancelled/`, 'utf8');
}

/**
 * The etcd name of a semaphore: `<keyPrefix>\0fencelock-semaphore/<escaped key>`; its contenders'
 * keys are `<name>/<lease hex>`. Under the prefix (a role limited to the prefix covers it) and in
 * fencelock's reserved space, so a semaphore and a lock never share a range whatever the key and the
 * encoding: a lock's name never starts with NUL (escaped), or is refused when it would (`as-is`).
 * The key is always escaped (no Go recipe shares semaphores by name), so `a` never sees `a/b`'s.
 */
export function semaphoreName(key: string, keyPrefix: string): string {
  return `${semaphoreRoot(keyPrefix)}${escapeKeySegment(key)}`;
}

/** Where every semaphore of a provider lives: `<keyPrefix>\0fencelock-semaphore/`. */
export function semaphoreRoot(keyPrefix: string): string {
  return `${keyPrefix}${RESERVED_AS_IS}semaphore/`;
}

// The first segment of every election's name. Typeable (an operator passes it to `etcdctl elect`),
// yet never an escaped lock key: escaping writes every '%' as '%25'. A verbatim ('as-is') lock key
// could spell it, so `lockName` refuses those.
const ELECTION_SEGMENT = '%election';

/**
 * The etcd name of an election (Go's `concurrency.NewElection` prefix without the trailing `/`):
 * `<keyPrefix>%election/<escaped name>`; its candidates' keys are `<name>/<lease hex>`, so
 * `etcdctl elect <that name> <value>` campaigns in the same election. Under the prefix (a role
 * limited to the prefix covers it) and apart from every lock's and semaphore's range: no escaped lock
 * key starts with `%election`, a verbatim one that would is refused, and semaphores start with NUL.
 * The name is always escaped, so election `a` never sees `a/b`'s candidates.
 */
export function electionName(name: string, keyPrefix: string): string {
  return `${keyPrefix}${ELECTION_SEGMENT}/${escapeKeySegment(name)}`;
}

/** The range `[start, end)` holding every key that starts with `prefix` (etcd's "prefix + 1" rule). */
export function prefixRange(prefix: Buffer): { start: Buffer; end: Buffer } {
  const end = Buffer.from(prefix);
  for (let index = end.length - 1; index >= 0; index -= 1) {
    const byte = end[index] ?? 0;
    if (byte < 0xff) {
      end[index] = byte + 1;
      return { start: prefix, end: end.subarray(0, index + 1) };
    }
  }
  // All bytes 0xff: the range runs to the end of the keyspace.
  return { start: prefix, end: Buffer.from([0]) };
}
