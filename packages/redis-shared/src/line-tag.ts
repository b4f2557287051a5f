import { randomBytes } from 'node:crypto';

/**
 * Line tags: each provider registers its waiters as `<id>|<tag>`, with a random tag of its own, and
 * listens on `<channel>:<tag>`; a release announces the head of the line on the head's channel, so
 * it wakes only the process whose waiter is next (see `headOfLineLua`). The tag has a fixed length
 * and sits at the end, so a registration is read the same whatever its id holds (a Redlock value
 * may carry metadata with any character).
 */
export const LINE_TAG_LENGTH = 12;

/** A fresh random line tag (base64url, no `|`). */
export function newLineTag(): string {
  return randomBytes((LINE_TAG_LENGTH * 3) / 4).toString('base64url');
}

/** The registration of `id` in a line of waiters, for a provider with line tag `tag`. */
export function lineMember(id: string, tag: string): string {
  return `${id}|${tag}`;
}

/** `id` without a line tag, as an older release script may announce a tagged registration whole. */
export function withoutLineTag(id: string): string {
  return id.length > LINE_TAG_LENGTH + 1 && id[id.length - LINE_TAG_LENGTH - 1] === '|' ? id.slice(0, -LINE_TAG_LENGTH - 1) : id;
}
