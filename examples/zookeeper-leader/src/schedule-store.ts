/**
 * What the leader writes to: the results of the scheduled job, fenced by the leader's term. A write
 * whose term is below the highest term already accepted comes from a deposed leader (one that was
 * paused with the write on its way) and is refused: the store, not the leader, has the last word.
 * In a real service this is the database row, the object store's conditional put, or the API that
 * takes the term with each write; the check is the same one comparison.
 */
export class FencedScheduleStore {
  #highest: bigint | undefined;
  readonly accepted: { readonly worker: string; readonly term: bigint; readonly round: number }[] = [];
  readonly refused: { readonly worker: string; readonly term: bigint; readonly round: number; readonly highest: bigint }[] = [];

  /** Applies `round`'s result written with `term`; false when a newer leader has written already. */
  write(worker: string, term: bigint, round: number): boolean {
    const highest = this.#highest;
    if (highest !== undefined && term < highest) {
      this.refused.push({ worker, term, round, highest });
      return false;
    }
    this.#highest = term;
    this.accepted.push({ worker, term, round });
    return true;
  }

  /** The highest term accepted so far. */
  get highest(): bigint | undefined {
    return this.#highest;
  }
}
