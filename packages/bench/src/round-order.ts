/**
 * The order subjects take turns in, round by round, so that what one slice leaves behind — the
 * garbage a peer allocated, the JIT code shared libraries were optimized for, a server's caches —
 * falls on every other subject alike. A plain rotation (A B C D, B C D A, …) moves who goes first
 * but keeps who follows whom: D precedes A in every round, and A always inherits D's aftermath.
 * This is a Williams design: over n rounds (2n for an odd n) every subject follows every other
 * subject equally often, and each is first equally often.
 */
export function roundOrder(count: number, round: number): number[] {
  if (count <= 0) return [];
  // The design's first row: 0, 1, n-1, 2, n-2, …; row r adds r (mod n) to each.
  const first: number[] = [0];
  for (let k = 1; k < count; k += 1) first.push(k % 2 === 1 ? (k + 1) / 2 : count - k / 2);
  // An odd n needs each row and its mirror image for every ordered pair to appear equally often.
  const odd = count % 2 === 1;
  const shift = (odd ? Math.floor(round / 2) : round) % count;
  const row = first.map((index) => (index + shift) % count);
  return odd && round % 2 === 1 ? row.reverse() : row;
}
