import type { LockEventMap } from '@fencelock/core';
import { describe, expect, it } from 'vitest';
import { within, type SuiteContext } from '../context.js';
import type { BackendOutage } from '../options.js';

const OUTAGES: readonly BackendOutage[] = ['kill', 'pause', 'blackhole', 'reset'];

/** Release when the backend cannot be reached: never rejects, retried until it lands. */
export function registerReleaseCases(ctx: SuiteContext): void {
  const outages = ctx.options.harness?.outages ?? {};
  describe('release under faults', () => {
    for (const kind of OUTAGES) {
      const start = outages[kind];
      const label = `release during a backend outage (${kind}): resolves without rejecting, and the key is freed for the next holder once the backend is back`;
      it.skipIf(start === undefined)(
        `${start === undefined ? `[skipped: needs harness.outages.${kind}] ` : ''}${label}`,
        async () => {
          const { session } = await ctx.ttl();
          const [a, b] = [await ctx.provider(), await ctx.provider()];
          const key = ctx.key(`release-${kind}`);
          // A TTL far above the case's bounds: only the retried release, not expiry, frees the key in time.
          const lock = await a.acquire(key, session ? {} : { ttlMs: ctx.bound(120_000) });
          const ended: LockEventMap['released'][] = [];
          let resolveEnded: () => void = () => undefined;
          const releasedEvent = new Promise<void>((resolve) => {
            resolveEnded = resolve;
          });
          const off = a.on('released', (event) => {
            if (event.ownerId !== lock.ownerId) return;
            ended.push(event);
            resolveEnded();
          });
          const heal = await start!();
          let released: boolean;
          try {
            released = await within(lock.release(), ctx.bound(20_000), 'release() during the outage');
          } finally {
            await heal();
          }
          expect(released).toBe(true);
          expect(lock.isHeld()).toBe(false);
          expect(lock.signal.aborted).toBe(true);
          expect(['releasing', 'released']).toContain(lock.state);
          const next = await b.acquire(key, { waitMs: ctx.bound(30_000) });
          expect(next.isHeld()).toBe(true);
          await within(releasedEvent, ctx.bound(30_000), 'the released event of the retried release');
          off();
          expect(ended).toHaveLength(1);
          expect(lock.state).toBe('released');
          expect(await next.release()).toBe(true);
        },
        ctx.caseTimeout(90_000),
      );
    }
  });
}
