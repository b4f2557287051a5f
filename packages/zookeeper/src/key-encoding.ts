/**
 * Lock keys → one znode name each.
 *
 * Guarantees: the mapping is injective (`decodeKeySegment(encodeKeySegment(k)) === k` for every valid
 * key) and its output is one legal ZooKeeper path segment, so `/`, `.`, `..`, `%`, NUL, control
 * characters and any Unicode key work and never collide.
 *
 * The rule is percent-encoding of the UTF-8 bytes, as in URIs: ASCII letters, digits, `-`, `_`, `~`,
 * `:` and `.` stay as they are (so `orders:42` is the znode `orders:42`, readable for users of other
 * libraries who lock the same path); every other byte becomes `%XX` (uppercase hex). The two names
 * ZooKeeper refuses as relative paths, `.` and `..`, are written `%2E` and `%2E%2E`. ZooKeeper also
 * refuses NUL, control characters and some Unicode ranges in names (`BAD_ARGUMENTS`); none of those
 * survive the encoding, which only emits printable ASCII.
 */

// Bytes that stay literal: RFC 3986 unreserved characters plus ':'.
const LITERAL_CLASS = '[A-Za-z0-9\\-_~.:]';
const LITERAL = new RegExp(`^${LITERAL_CLASS}$`);
// A key made of literal characters only (most keys): its own name, checked in one pass, with no
// string built per character (this ran on every acquire and release).
const ALL_LITERAL = new RegExp(`^${LITERAL_CLASS}+$`);

/** The znode name (one path segment) of `key`. */
export function encodeKeySegment(key: string): string {
  if (ALL_LITERAL.test(key) && key !== '.' && key !== '..') return key;
  let out = '';
  for (const char of key) {
    if (LITERAL.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  if (out === '.' || out === '..') return out.replaceAll('.', '%2E');
  return out;
}

/** The key a znode name stands for (the inverse of {@link encodeKeySegment}). */
export function decodeKeySegment(segment: string): string {
  return decodeURIComponent(segment);
}
