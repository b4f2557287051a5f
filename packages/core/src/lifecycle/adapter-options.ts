import { LockRangeError, LockTypeError } from '../errors.js';
import { validateDurationMs } from '../validation.js';

/**
 * Checks that `options` is a plain object (or undefined) whose own keys are all in `known`, and
 * returns it. Every adapter refuses unknown options the same way, before any I/O: a misspelt
 * `requestTimeoutMs` must not silently fall back to a default.
 */
export function readAdapterOptions<T extends object>(options: T | undefined, known: readonly (keyof T & string)[], argument = 'options'): Partial<T> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LockTypeError(argument, `${argument} must be an object`);
  }
  const allowed = new Set<string>(known);
  for (const name of Object.keys(options)) {
    if (!allowed.has(name)) {
      throw new LockTypeError(`${argument}.${name}`, `unknown option "${name}" (known: ${[...allowed].sort().join(', ')})`);
    }
  }
  return options;
}

/**
 * Checks a per-request timeout (`requestTimeoutMs`, the one name every adapter uses) and that it
 * fits in the TTL it must serve: a renewal is due a third of the way through a TTL, so a request
 * that may take longer than that could let a lock run out while the process waits for one reply.
 */
export function validateRequestTimeoutMs(value: unknown, ttlMs: number, ttlName: string, argument = 'options.requestTimeoutMs'): number {
  const ms = validateDurationMs(value, argument);
  if (ms * 3 > ttlMs) {
    throw new LockRangeError(argument, `${argument} (${ms} ms) must be at most a third of ${ttlName} (${ttlMs} ms), so that a renewal's reply can arrive before the lock runs out`);
  }
  return ms;
}
