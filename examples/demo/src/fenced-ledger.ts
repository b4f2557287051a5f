import { FencingGuard } from '@fencelock/core';

/**
 * The protected resource: an account balance that only accepts writes carrying a fencing token at
 * least as new as the newest it has seen, the way a database row guarded by `WHERE fence < $token` does.
 */
export class FencedLedger {
  readonly #guard = new FencingGuard();
  #accepted = 0;
  balance = 0;

  /** Applies `balance` if `token` is not stale; returns whether it was accepted. */
  write(key: string, token: bigint | undefined, balance: number): boolean {
    if (token === undefined) {
      // A provider without fencing tokens (Redlock) cannot be guarded: the write goes through blind.
      this.balance = balance;
      this.#accepted += 1;
      return true;
    }
    if (!this.#guard.check(key, token)) return false;
    this.balance = balance;
    this.#accepted += 1;
    return true;
  }

  /** Writes refused as stale. */
  get refused(): number {
    return this.#guard.stats.rejected;
  }

  /** Writes accepted. */
  get accepted(): number {
    return this.#accepted;
  }
}
