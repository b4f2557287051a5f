import type { CheckResult } from './checker.js';

/** One line of the `pnpm chaos` summary: one backend under one fault. */
export interface SummaryRow {
  readonly backend: string;
  readonly fault: string;
  readonly operations: number;
  readonly acquisitions: number;
  readonly violations: number;
  /** Writes the fenced store refused as stale. */
  readonly staleWritesRejected: number;
  /** The largest loss-signal latency, ms; `null` when no loss was measured. */
  readonly maxLossSignalLatencyMs: number | null;
  /** Whether this row is a negative control, whose expected outcome is "violation found". */
  readonly expectViolation?: boolean;
}

/** Builds a summary row from a run's check result. */
export function summaryRow(backend: string, fault: string, result: CheckResult, expectViolation = false): SummaryRow {
  return {
    backend,
    fault,
    operations: result.stats.operations,
    acquisitions: result.stats.acquisitions,
    violations: result.violations.length,
    staleWritesRejected: result.stats.fenceRejections,
    maxLossSignalLatencyMs: result.stats.maxLossSignalLatencyMs,
    expectViolation,
  };
}

const HEADERS = ['backend', 'fault', 'operations', 'acquisitions', 'violations', 'stale writes rejected', 'max loss-signal latency'] as const;
// Text columns are left-aligned, figures right-aligned.
const NUMERIC = [false, false, true, true, true, true, true] as const;

function cells(row: SummaryRow): string[] {
  const latency = row.maxLossSignalLatencyMs === null ? '—' : `${Math.max(0, row.maxLossSignalLatencyMs).toFixed(1)} ms`;
  // A negative control passes when it finds violations: mark it so a reader does not take it for a bug.
  const violations = row.expectViolation === true ? `${row.violations} (expected)` : String(row.violations);
  return [row.backend, row.fault, String(row.operations), String(row.acquisitions), violations, String(row.staleWritesRejected), latency];
}

/** Options of {@link renderSummaryTable}. */
export interface RenderOptions {
  /** `text` pads columns for a terminal; `markdown` makes a pipe table for docs/SAFETY.md. @default 'text' */
  readonly format?: 'text' | 'markdown';
}

/**
 * Renders the backend × fault table: operations, acquisitions, violations, stale writes rejected by
 * the fence, and the max loss-signal latency (negative latencies, i.e. early detection, show as 0).
 */
export function renderSummaryTable(rows: readonly SummaryRow[], options: RenderOptions = {}): string {
  const body = rows.map(cells);
  if (options.format === 'markdown') {
    const line = (values: readonly string[]): string => `| ${values.join(' | ')} |`;
    const rule = `|${NUMERIC.map((numeric) => (numeric ? '---:' : '---')).join('|')}|`;
    return [line(HEADERS), rule, ...body.map(line)].join('\n');
  }
  const widths = HEADERS.map((header, column) => Math.max(header.length, ...body.map((row) => row[column]?.length ?? 0)));
  const pad = (value: string, column: number): string =>
    NUMERIC[column] === true ? value.padStart(widths[column] ?? 0) : value.padEnd(widths[column] ?? 0);
  const line = (values: readonly string[]): string => values.map(pad).join('  ').trimEnd();
  return [line(HEADERS), widths.map((width) => '-'.repeat(width)).join('  '), ...body.map(line)].join('\n');
}

/** Options of {@link renderViolations}. */
export interface RenderViolationsOptions {
  /** Show at most this many violations, then a count of the rest. @default 20 */
  readonly limit?: number;
}

/**
 * Lists a run's violations for a failing test or a chaos log, one per line:
 * `S1 jobs:42 [events 3, 7, 9] [nemesis 2] two holders of "jobs:42" at once: …`.
 */
export function renderViolations(result: CheckResult, options: RenderViolationsOptions = {}): string {
  if (result.ok) return `run ${result.run}: no violations`;
  const limit = options.limit ?? 20;
  const lines = result.violations.slice(0, limit).map((violation) => {
    const parts = [violation.property, violation.key];
    if (violation.events.length > 0) parts.push(`[events ${violation.events.join(', ')}]`);
    if (violation.writes !== undefined) parts.push(`[writes ${violation.writes.join(', ')}]`);
    if (violation.nemesis !== undefined && violation.nemesis.length > 0) parts.push(`[nemesis ${violation.nemesis.join(', ')}]`);
    return `${parts.join(' ')} ${violation.message}`;
  });
  const rest = result.violations.length - lines.length;
  return [`run ${result.run}: ${result.violations.length} violation(s)`, ...lines, ...(rest > 0 ? [`… and ${rest} more`] : [])].join('\n');
}
