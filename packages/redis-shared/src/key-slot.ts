/**
 * Redis Cluster hash slots, computed as the server does (CRC16-XMODEM of the key's hash tag, mod 16384),
 * so that side keys (the fence counter, the metadata string) can be placed in the slot of any lock key.
 */

/** The number of hash slots of a Redis Cluster. */
export const HASH_SLOTS = 16_384;

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte += 1) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

function crcStep(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ (CRC16_TABLE[((crc >> 8) ^ byte) & 0xff] ?? 0);
}

function crc16(bytes: Uint8Array, start: number, end: number): number {
  let crc = 0;
  for (let index = start; index < end; index += 1) crc = crcStep(crc, bytes[index] ?? 0);
  return crc;
}

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * The hash slot of `key` (its UTF-8 bytes). Redis' hash-tag rule: if the key has a `{`, and a `}`
 * somewhere after the first `{`, and at least one byte between them, only the bytes between the
 * first `{` and the first `}` after it are hashed; otherwise the whole key is. (UTF-8 multi-byte
 * sequences never contain the bytes of `{` or `}`, so a byte search is exact.)
 */
export function hashSlot(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(OPEN_BRACE);
  if (open !== -1) {
    const close = bytes.indexOf(CLOSE_BRACE, open + 1);
    if (close > open + 1) return crc16(bytes, open + 1, close) % HASH_SLOTS;
  }
  return crc16(bytes, 0, bytes.length) % HASH_SLOTS;
}

// About 16_384 · ln(16_384) ≈ 160k candidates cover every slot; the bound is far above that.
const MAX_TAG_CANDIDATES = 2_000_000;
let slotTags: string[] | undefined;

/**
 * A short hash tag (base-36 digits, no braces) whose slot is `slot`: `{tag}` at the start of a key
 * puts that key in `slot` whatever follows. The table is built once per process, on first use
 * (15–20 ms on the bench machine).
 */
export function hashTagForSlot(slot: number): string {
  slotTags ??= buildSlotTags();
  const tag = slotTags[slot];
  if (tag === undefined) throw new RangeError(`no hash tag for slot ${slot}`);
  return tag;
}

function buildSlotTags(): string[] {
  const tags = new Array<string>(HASH_SLOTS);
  let missing = HASH_SLOTS;
  for (let candidate = 0; candidate < MAX_TAG_CANDIDATES && missing > 0; candidate += 1) {
    const tag = candidate.toString(36);
    // Base-36 digits are one byte each: the CRC reads the string itself (a buffer per candidate made
    // the table cost ~40 ms instead of ~15 on the first acquire).
    let crc = 0;
    for (let index = 0; index < tag.length; index += 1) crc = crcStep(crc, tag.charCodeAt(index));
    const slot = crc % HASH_SLOTS;
    if (tags[slot] === undefined) {
      tags[slot] = tag;
      missing -= 1;
    }
  }
  if (missing > 0) throw new Error(`could not find a hash tag for ${missing} slots`);
  return tags;
}
