/**
 * The properties the checker verifies (FAULTS.md, "A history checker"):
 * - `S1` no two holders' validity windows overlap on a key;
 * - `S2` the holds linearize against the fenced mutex `{owner, fence}` (each grant's token exceeds every earlier grant's);
 * - `S3` the fenced store never accepts a lower token after a higher one, nor a token no acquire returned;
 * - `S4` tokens increase in the real-time order of holds and are unique per key;
 * - `S5` no write through the library after its hold ended (lost, expired or released);
 * - `S6` extend or release after loss never succeeds nor touches another holder;
 * - `S7` a counting semaphore never has more permits held at once than its limit, and its
 *   overlapping holders agree on that limit;
 * - `S8` an election has at most one leader per term, terms strictly increase from leader to
 *   leader, and no two leaders overlap while both are valid;
 * - `L1` the loss signal fires within a bound after validity ends;
 * - `L2` after a holder is killed, a waiter gets the key within a bound;
 * - `L3` no lock keys, znodes or leases are left over after the run.
 */
export type PropertyId = 'S1' | 'S2' | 'S3' | 'S4' | 'S5' | 'S6' | 'S7' | 'S8' | 'L1' | 'L2' | 'L3';

/** Every {@link PropertyId}, in report order. */
export const PROPERTY_IDS: readonly PropertyId[] = ['S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S7', 'S8', 'L1', 'L2', 'L3'];

/** One broken property, with the evidence. */
export interface Violation {
  /** Which property. */
  readonly property: PropertyId;
  /** The run. */
  readonly run: string;
  /** The lock (or resource) key. */
  readonly key: string;
  /** The `seq` of the history events involved, ascending. */
  readonly events: readonly number[];
  /** Indexes into the fenced store's write log of the writes involved (S3), ascending. */
  readonly writes?: readonly number[];
  /** The `seq` of the nemesis steps whose fault window touches the violation's time span. */
  readonly nemesis?: readonly number[];
  /** What went wrong, for people. */
  readonly message: string;
}

/** Sorted, de-duplicated sequence numbers. */
export function seqList(values: readonly (number | undefined)[]): number[] {
  return [...new Set(values.filter((value): value is number => value !== undefined))].sort((a, b) => a - b);
}
