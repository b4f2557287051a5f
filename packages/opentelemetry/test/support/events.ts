import type { LockEventMap, LockProvider } from '@fencelock/core';
import { withTimeout } from '@fencelock/test-infra';

/** Waits (at most `timeoutMs`) for the next `event` matching `predicate`. */
export async function nextEvent<E extends keyof LockEventMap>(
  provider: Pick<LockProvider, 'on'>,
  event: E,
  predicate: (payload: LockEventMap[E]) => boolean = () => true,
  timeoutMs = 10_000,
): Promise<LockEventMap[E]> {
  let unsubscribe = (): void => undefined;
  const seen = new Promise<LockEventMap[E]>((resolve) => {
    unsubscribe = provider.on(event, (payload) => {
      if (predicate(payload)) resolve(payload);
    });
  });
  try {
    return await withTimeout(seen, timeoutMs, `the "${event}" lock event`);
  } finally {
    unsubscribe();
  }
}

/** Collects every payload of `event` from now on. */
export function recordEvents<E extends keyof LockEventMap>(provider: Pick<LockProvider, 'on'>, event: E): LockEventMap[E][] {
  const payloads: LockEventMap[E][] = [];
  provider.on(event, (payload) => payloads.push(payload));
  return payloads;
}
