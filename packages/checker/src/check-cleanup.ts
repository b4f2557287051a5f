import type { Violation } from './violation.js';

/**
 * L3: after the run (and TTL + 1 s), no lock keys, znodes or leases remain. The harness scans the
 * backend's prefixes and passes what it found; each leftover is one violation.
 */
export function checkCleanup(run: string, leftoverKeys: readonly string[]): Violation[] {
  return leftoverKeys.map((key) => ({
    property: 'L3' as const,
    run,
    key,
    events: [],
    message: `"${key}" was still present on the backend after the run`,
  }));
}
