import { monotonicNow } from '../clock.js';

/**
 * The one timer behind a queue of due times (renewals, handle deadlines, request timeouts): armed
 * for a monotonic time, re-armed when an earlier one comes, and cleared with the queue. It is
 * `unref`'d: pending renewals or deadlines alone do not keep the process alive (a lock's TTL frees
 * it on the server). Disarmed before `fire` runs, so that `fire` may arm it again.
 */
export class WakeTimer {
  #timer: NodeJS.Timeout | undefined;
  #at = Number.POSITIVE_INFINITY;
  readonly #fire: () => void;
  readonly #onTimer = (): void => {
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
    this.#fire();
  };

  constructor(fire: () => void) {
    this.#fire = fire;
  }

  /** The monotonic time it is armed for; `Infinity` when disarmed. */
  get at(): number {
    return this.#at;
  }

  /** Arms it for monotonic time `at` (1 ms from now at the soonest), replacing the previous arming. */
  arm(at: number): void {
    clearTimeout(this.#timer);
    this.#at = at;
    this.#timer = setTimeout(this.#onTimer, Math.max(1, Math.ceil(at - monotonicNow())));
    this.#timer.unref();
  }

  /** Arms it for `at` when that is sooner than the time it is armed for. */
  armBy(at: number): void {
    if (at < this.#at) this.arm(at);
  }

  /** Disarms it. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = Number.POSITIVE_INFINITY;
  }
}
