/**
 * A small hand-written SVG chart of latency distributions (no dependency): one row per
 * implementation, grouped by backend, on a log-scale ms axis. Each row is a bar in three shades
 * (up to p50, p50–p90, p90–p99) and a whisker to the max, coloured by kind (fencelock, raw
 * client, peer library), with the p50 and p99 written at the end.
 */

/** One row of the chart. */
export interface DistributionRow {
  /** Group heading (the backend). */
  readonly group: string;
  readonly label: string;
  readonly kind: 'fencelock' | 'raw' | 'peer';
  /** Percentiles, ms (non-finite or non-positive values are drawn as missing). */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
}

const WIDTH = 1060;
const LABEL_WIDTH = 400;
const PLOT_LEFT = LABEL_WIDTH + 10;
const PLOT_RIGHT = 870;
const ROW_HEIGHT = 20;
const GROUP_HEIGHT = 22;
const TOP = 48;

// Three shades per kind: ≤ p50 (dark), p50–p90, p90–p99 (light).
const SHADES: Readonly<Record<DistributionRow['kind'], readonly [string, string, string]>> = {
  fencelock: ['#1f5fa8', '#5d93d1', '#a9c8ec'],
  raw: ['#555555', '#8a8a8a', '#c4c4c4'],
  peer: ['#b35c00', '#e08f3c', '#f3c48f'],
};

/** Escapes text for SVG content and attributes. */
export function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const positive = (value: number): boolean => Number.isFinite(value) && value > 0;

const msText = (value: number): string => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value >= 1 ? value.toFixed(2) : value.toFixed(3));

/** 10^exponent as plain text: 0.01, 0.1, 1, 10, 1000. */
function decadeText(exponent: number): string {
  return exponent >= 0 ? `1${'0'.repeat(exponent)}` : `0.${'0'.repeat(-exponent - 1)}1`;
}

/** Renders `rows` (in the given order, a heading whenever the group changes) as an SVG document. */
export function renderDistributionChart(title: string, rows: readonly DistributionRow[]): string {
  const values = rows.flatMap((row) => [row.p50, row.p90, row.p99, row.max]).filter(positive);
  const low = 10 ** Math.floor(Math.log10(Math.min(...values, 1) * 0.9));
  const high = 10 ** Math.ceil(Math.log10(Math.max(...values, 1)));
  const x = (ms: number): number => PLOT_LEFT + ((Math.log10(Math.max(ms, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * (PLOT_RIGHT - PLOT_LEFT);
  const body: string[] = [];
  let y = TOP;
  let group: string | undefined;
  for (const row of rows) {
    if (row.group !== group) {
      group = row.group;
      y += 4;
      body.push(`<text x="8" y="${y + 15}" font-weight="bold">${escapeXml(group)}</text>`);
      y += GROUP_HEIGHT;
    }
    const [dark, mid, light] = SHADES[row.kind];
    const top = y + 3;
    const height = ROW_HEIGHT - 6;
    body.push(`<text x="${LABEL_WIDTH}" y="${y + 14}" text-anchor="end">${escapeXml(row.label)}</text>`);
    if (positive(row.p50)) {
      const segments: [number, number, string][] = [[low, row.p50, dark]];
      if (positive(row.p90)) segments.push([row.p50, row.p90, mid]);
      if (positive(row.p90) && positive(row.p99)) segments.push([row.p90, row.p99, light]);
      for (const [from, to, colour] of segments) {
        const left = x(from);
        body.push(`<rect x="${left.toFixed(1)}" y="${top}" width="${Math.max(0.5, x(to) - left).toFixed(1)}" height="${height}" fill="${colour}"/>`);
      }
      const end = positive(row.p99) ? row.p99 : row.p50;
      if (positive(row.max) && row.max > end) {
        const middle = top + height / 2;
        body.push(`<line x1="${x(end).toFixed(1)}" y1="${middle}" x2="${x(row.max).toFixed(1)}" y2="${middle}" stroke="${dark}"/>`);
        body.push(`<line x1="${x(row.max).toFixed(1)}" y1="${top}" x2="${x(row.max).toFixed(1)}" y2="${top + height}" stroke="${dark}"/>`);
      }
      body.push(`<text x="${PLOT_RIGHT + 8}" y="${y + 14}">p50 ${msText(row.p50)}${positive(row.p99) ? ` · p99 ${msText(row.p99)}` : ''} ms</text>`);
    } else {
      body.push(`<text x="${PLOT_LEFT + 4}" y="${y + 14}" fill="#888">no samples</text>`);
    }
    y += ROW_HEIGHT;
  }
  const plotBottom = y + 6;
  const axis: string[] = [];
  for (let exponent = Math.round(Math.log10(low)); exponent <= Math.round(Math.log10(high)); exponent += 1) {
    const at = x(10 ** exponent).toFixed(1);
    axis.push(`<line x1="${at}" y1="${TOP}" x2="${at}" y2="${plotBottom}" stroke="#ddd"/>`);
    axis.push(`<text x="${at}" y="${plotBottom + 16}" text-anchor="middle">${decadeText(exponent)} ms</text>`);
  }
  const legendY = plotBottom + 40;
  const legend: string[] = [];
  let legendX = 8;
  for (const [kind, shades] of Object.entries(SHADES)) {
    legend.push(`<rect x="${legendX}" y="${legendY - 11}" width="12" height="12" fill="${shades[0]}"/><text x="${legendX + 16}" y="${legendY}">${kind === 'raw' ? 'raw client' : kind === 'peer' ? 'peer library' : 'fencelock'}</text>`);
    legendX += 120;
  }
  legend.push(`<text x="${legendX + 20}" y="${legendY}">bar: dark to p50, then to p90, light to p99; whisker to max (log scale)</text>`);
  const height = legendY + 14;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#fff"/>`,
    `<text x="8" y="24" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    ...axis,
    ...body,
    ...legend,
    '</svg>',
    '',
  ].join('\n');
}
