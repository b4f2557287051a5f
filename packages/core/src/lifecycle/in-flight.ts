/**
 * Work in flight that someone may wait out (a provider closing waits for the requests it still has
 * out): a counter and the waiters of the moment it reaches zero, not a promise per piece of work,
 * which would cost more than the work on a path that runs on every acquire.
 */
export class InFlight {
  #count = 0;
  #idle: (() => void)[] = [];

  /** How many pieces of work are in flight. */
  get size(): number {
    return this.#count;
  }

  /** A piece of work started. */
  begin(): void {
    this.#count += 1;
  }

  /** A piece of work ended (call once per {@link begin}). */
  end(): void {
    this.#count -= 1;
    if (this.#count === 0 && this.#idle.length > 0) for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** Resolves once nothing is in flight. */
  settled(): Promise<void> {
    if (this.#count === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }
}
