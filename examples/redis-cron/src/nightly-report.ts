import { setTimeout as delay } from 'node:timers/promises';

/**
 * The job itself: builds the report of one day. It stands for any slow work (queries, rendering,
 * e-mail); here it takes `jobMs` and counts some orders. It stops as soon as `signal` aborts: a
 * worker that lost its lock must not go on as if it still had it.
 */
export async function buildNightlyReport(date: string, jobMs: number, signal: AbortSignal): Promise<{ orders: number }> {
  await delay(jobMs, undefined, { signal });
  // A number that depends on the date only, so every run of the same date builds the same report.
  const orders = [...date].reduce((sum, char) => sum + char.charCodeAt(0), 0);
  return { orders };
}
