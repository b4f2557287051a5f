/** A plain text table for the terminal. */

/** Formats rows (first row = header) as left-aligned columns separated by two spaces. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  '))
    .join('\n');
}

/** Seconds with two decimals since `start` (a `performance.now()` value). */
export function seconds(start: number): string {
  return `${((performance.now() - start) / 1_000).toFixed(2)} s`;
}
