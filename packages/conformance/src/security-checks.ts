import { type LockError, type LockEventMap, type LockProvider, LockErrorCode, isLockError } from '@fencelock/core';
import { expect } from 'vitest';

/**
 * For an adapter's security tests: a refusal is `LOCK_FORBIDDEN` with a given message, and the
 * "secrets never leak" check: everything a provider reported
 * (errors with their causes, event payloads) as one text, searched for known secrets.
 */

/** Every string reachable from `value`: an error's name, message and stack, its cause, and every own property, depth first, each object once. */
function reachableText(value: unknown, seen: WeakSet<object>): string {
  if (typeof value !== 'object' || value === null) return String(value);
  if (seen.has(value)) return '';
  seen.add(value);
  const own = value instanceof Error ? `${value.name} ${value.message} ${value.stack ?? ''} ${reachableText(value.cause, seen)}` : '';
  return `${own} ${Object.values(value).map((entry) => reachableText(entry, seen)).join(' ')}`;
}

/**
 * The secrets (passwords, lines of private keys) that appear anywhere in `reported`: empty when none
 * leaked. A test asserts `toEqual([])`, so a failure names what leaked only by its index in `secrets`.
 */
export function leakedSecrets(reported: readonly unknown[], secrets: readonly string[]): number[] {
  const seen = new WeakSet<object>();
  const text = reported.map((value) => reachableText(value, seen)).join('\n');
  return secrets.flatMap((secret, index) => (secret !== '' && text.includes(secret) ? [index] : []));
}

const EVERY_EVENT = [
  'acquired', 'contended', 'timeout', 'aborted', 'declined', 'failed', 'released', 'release-failed',
  'renewal-late', 'extended', 'lost', 'uncertain', 'recovered', 'backend-warning',
] as const satisfies readonly (keyof LockEventMap)[];

/** What providers reported during a security test: every event of the providers it watches, and the errors it collected. */
export class ReportLog {
  readonly items: unknown[] = [];

  /** Records every event `provider` emits from now on. */
  watch<P extends LockProvider>(provider: P): P {
    for (const event of EVERY_EVENT) provider.on(event, (payload) => this.items.push(payload));
    return provider;
  }

  /** Records `error` (thrown by a provider or its client) and returns it. */
  record(error: unknown): unknown {
    this.items.push(error);
    return error;
  }

  /** Resolves what `promise` rejects with, recorded; fails if it resolves. */
  async rejection(promise: Promise<unknown>): Promise<unknown> {
    try {
      await promise;
    } catch (error) {
      return this.record(error);
    }
    throw new Error('expected a rejection');
  }

  /** {@link leakedSecrets} of everything recorded. */
  leaked(secrets: readonly string[]): number[] {
    return leakedSecrets(this.items, secrets);
  }
}

/** Asserts that `error` is a `LOCK_FORBIDDEN` LockError whose message matches `message`. */
export function expectForbidden(error: unknown, message: RegExp): asserts error is LockError {
  expect(isLockError(error, LockErrorCode.FORBIDDEN), String(error)).toBe(true);
  expect((error as LockError).message).toMatch(message);
}
