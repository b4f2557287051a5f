/**
 * Guesses the sequence number ZooKeeper will give this provider's next contender node on a lock, so
 * that the stat of that node (its czxid: the fencing token) can be asked for in the same round trip
 * as the create itself.
 *
 * Guarantees: a guess is only ever used to build the full path of OUR node (our unique prefix + the
 * guessed digits); a wrong guess names a node that does not exist and costs one wasted read, never a
 * wrong answer. After a wrong guess the next acquisition on that lock does not guess (a contended
 * lock wastes at most one read every other acquisition). Memory is bounded (`MAX_LOCKS` locks).
 */

// Enough for every lock a busy process cycles through; the oldest hint is dropped beyond it.
const MAX_LOCKS = 1_024;
// ZooKeeper's sequence is a signed 32-bit counter printed with 10 digits; past this it wraps.
const MAX_SEQUENCE = 2_147_483_647;
// The counter moves by one per create on the lock's znode (deletes do not move it on ZooKeeper 3.8);
// a larger step seen between two of our own creates came from other clients and is not learnt.
const MAX_LEARNT_STEP = 4;

interface Hint {
  /** The sequence of our last contender node on this lock. */
  readonly sequence: number;
  /** How far the counter moved between our last two creates, when that looked like a pattern. */
  readonly step: number;
  /** The last guess was wrong: do not guess on the next acquisition. */
  readonly missed: boolean;
}

/** Per-lock sequence guesses of one provider (internal). */
export class SequenceHints {
  readonly #byLock = new Map<string, Hint>();

  /** The 10-digit sequence our next node on `lockPath` will probably get, or `undefined` (no guess). */
  guess(lockPath: string): string | undefined {
    const hint = this.#byLock.get(lockPath);
    if (hint === undefined || hint.missed) return undefined;
    const next = hint.sequence + hint.step;
    if (next > MAX_SEQUENCE) return undefined;
    return String(next).padStart(10, '0');
  }

  /** True once this provider created a node on `lockPath` (and has not forgotten it since). */
  knows(lockPath: string): boolean {
    return this.#byLock.has(lockPath);
  }

  /** Learns from the node we just created (`sequence`), and whether `guessed` was right. */
  record(lockPath: string, sequence: number, guessed: string | undefined): void {
    const previous = this.#byLock.get(lockPath);
    const moved = previous === undefined ? 1 : sequence - previous.sequence;
    const step = moved >= 1 && moved <= MAX_LEARNT_STEP ? moved : (previous?.step ?? 1);
    const missed = guessed !== undefined && Number.parseInt(guessed, 10) !== sequence;
    // Re-inserted at the end: the map's order is then least recently used first.
    this.#byLock.delete(lockPath);
    this.#byLock.set(lockPath, { sequence, step, missed });
    if (this.#byLock.size > MAX_LOCKS) {
      const oldest = this.#byLock.keys().next();
      if (oldest.done !== true) this.#byLock.delete(oldest.value);
    }
  }

  /** Forgets `lockPath` (its znode was removed: ZooKeeper restarts its counter at 0). */
  forget(lockPath: string): void {
    this.#byLock.delete(lockPath);
  }
}
