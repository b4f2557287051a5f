import { randomFillSync } from 'node:crypto';

// Random bytes for this many ids are drawn at once (16 KiB), as crypto.randomUUID caches its entropy
// for 128: a draw costs about the same for 2 KiB as for 16, so this takes a tenth of the cost per id.
const IDS_PER_DRAW = 1_024;
const ID_BYTES = 16;
const entropy = Buffer.alloc(IDS_PER_DRAW * ID_BYTES);
let drawn = IDS_PER_DRAW;
// The 36 characters of one id, written in place and read out as one string.
const text = Buffer.alloc(36);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
const HYPHEN = 0x2d;

/**
 * A fresh owner id: a random (version 4) UUID in its usual lowercase form, with the same 122 random
 * bits from the same CSPRNG as `crypto.randomUUID()`. It is written byte by byte into a buffer and
 * decoded once: `randomUUID()` concatenates twenty strings, which makes it the largest allocation
 * of an in-memory acquire. Adapters rely on the UUID shape (Curator's protected node names).
 */
export function newOwnerId(): string {
  if (drawn === IDS_PER_DRAW) {
    randomFillSync(entropy);
    drawn = 0;
  }
  const start = drawn * ID_BYTES;
  drawn += 1;
  let at = 0;
  for (let index = 0; index < ID_BYTES; index += 1) {
    let byte = entropy[start + index]!;
    // RFC 9562: the version (4) in the high nibble of byte 6, the variant (10xx) in byte 8.
    if (index === 6) byte = (byte & 0x0f) | 0x40;
    else if (index === 8) byte = (byte & 0x3f) | 0x80;
    if (index === 4 || index === 6 || index === 8 || index === 10) text[at++] = HYPHEN;
    text[at++] = HEX_DIGITS[byte >> 4]!;
    text[at++] = HEX_DIGITS[byte & 0x0f]!;
  }
  return text.toString('latin1', 0, 36);
}
