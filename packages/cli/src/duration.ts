import { MAX_DURATION_MS } from '@fencelock/core';
import { UsageError } from './usage-error.js';

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };
const DURATION = /^(\d+(?:\.\d+)?|\.\d+)(ms|s|m|h)?$/;

/** What a duration flag accepts besides positive values. */
export interface DurationRules {
  /** `0` is allowed (e.g. `--wait 0`: try once). @default false */
  readonly allowZero?: boolean;
  /** `forever` / `infinity` / `inf` is allowed and means `Infinity`. @default false */
  readonly allowForever?: boolean;
}

/**
 * Parses a duration flag into ms: `250ms`, `1.5s`, `2m`, `1h`, or a bare number of seconds (as
 * `flock -w` and `timeout` take it). Fractions round up to the next ms. Refuses anything else with a
 * {@link UsageError} naming the flag.
 */
export function parseDuration(text: string, flag: string, rules: DurationRules = {}): number {
  const trimmed = text.trim().toLowerCase();
  if (rules.allowForever && (trimmed === 'forever' || trimmed === 'infinity' || trimmed === 'inf')) {
    return Number.POSITIVE_INFINITY;
  }
  const match = DURATION.exec(trimmed);
  const examples = `e.g. 500ms, 10s, 2m${rules.allowZero ? ', 0' : ''}${rules.allowForever ? ', forever' : ''}`;
  if (match === null) {
    throw new UsageError(`${flag} needs a duration (${examples}), got ${JSON.stringify(text)}`);
  }
  const ms = Math.ceil(Number(match[1]) * (UNIT_MS[match[2] ?? 's'] ?? 1_000));
  if (ms === 0 && !rules.allowZero) {
    throw new UsageError(`${flag} must be more than 0, got ${JSON.stringify(text)}`);
  }
  if (ms > MAX_DURATION_MS) {
    throw new UsageError(`${flag} must be at most ${MAX_DURATION_MS} ms (about 24.8 days), got ${JSON.stringify(text)}`);
  }
  return ms;
}

/** Renders ms for people: `850 ms`, `12.5 s`, `3 min 20 s`, `forever`. */
export function formatDuration(ms: number): string {
  if (ms === Number.POSITIVE_INFINITY) return 'forever';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${Number((ms / 1_000).toFixed(1))} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return seconds === 0 ? `${minutes} min` : `${minutes} min ${seconds} s`;
}
