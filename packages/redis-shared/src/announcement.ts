/**
 * The release announcement of the Redis lock protocol: `<length>:<id><lock key>`, where the id is
 * prefixed with its length so that any characters may follow (ids are ASCII — owner ids are UUIDs —
 * so Lua's byte length and JavaScript's string length agree). `@fencelock/redis` announces the head of
 * the line of waiters this way (the id is that waiter's owner id); `@fencelock/redlock` announces the
 * release id first and the head second, both prefixed alike.
 */

/** `id` with its length prefix, as the release scripts write it. */
export function lengthPrefixed(id: string): string {
  return `${Buffer.byteLength(id)}:${id}`;
}

/**
 * Splits one length-prefixed id off the front of `message`: the id and the rest, or `undefined` when
 * the message does not start with one (a malformed or foreign message).
 */
export function splitLengthPrefixed(message: string): { readonly id: string; readonly rest: string } | undefined {
  const colon = message.indexOf(':');
  if (colon <= 0 || colon > 10) return undefined;
  const length = Number(message.slice(0, colon));
  if (!Number.isInteger(length) || length < 0) return undefined;
  // Walk `length` UTF-8 bytes of the decoded string.
  let bytes = 0;
  let end = colon + 1;
  while (bytes < length && end < message.length) {
    const code = message.codePointAt(end) ?? 0;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    end += code >= 0x10000 ? 2 : 1;
  }
  if (bytes !== length) return undefined;
  return { id: message.slice(colon + 1, end), rest: message.slice(end) };
}

/** A release's direct grant to the head of the line, as the release script announces it. */
export interface DirectGrantAnnouncement {
  /** The owner id of the waiter the lock was granted to. */
  readonly ownerId: string;
  /** The number of the waiter's attempt whose ask the release used. */
  readonly attempt: number;
  /** The fencing token of the grant, a decimal string. */
  readonly token: string;
  /** The lock key. */
  readonly lockKey: string;
}

/**
 * Reads a direct-grant announcement `=<length>:<owner id><attempt>:<token>:<lock key>` (see the
 * release script of `@fencelock/redis`); `undefined` when `message` is not one (a release
 * announcement, or a malformed message).
 */
export function splitDirectGrant(message: string): DirectGrantAnnouncement | undefined {
  if (!message.startsWith('=')) return undefined;
  const head = splitLengthPrefixed(message.slice(1));
  if (head === undefined) return undefined;
  const match = /^(\d{1,15}):([1-9]\d{0,39}):/.exec(head.rest);
  if (match === null) return undefined;
  return { ownerId: head.id, attempt: Number(match[1]), token: match[2] ?? '', lockKey: head.rest.slice(match[0].length) };
}
