// Keys whose derived values are remembered; the cache is emptied when it is full (a bound on memory,
// not an LRU: a working set larger than this costs what no cache would).
const DEFAULT_SIZE = 1_024;

/**
 * What an adapter derives from a lock key (its side keys, its path or range), remembered for the next
 * acquisitions of the same key: building it (a CRC or a check over the key, an escape, a few strings
 * or buffers) is a noticeable share of an uncontended acquire. A `derive` that throws (a reserved
 * key) caches nothing. Keep what it derives immutable: every acquisition of the key shares it.
 */
export class KeyCache<T> {
  readonly #derive: (key: string) => T;
  readonly #size: number;
  readonly #entries = new Map<string, T>();

  /**
   * @param derive builds what is cached for a key; it may throw (nothing is cached then).
   * @param size how many keys are kept before the cache starts again from empty.
   */
  constructor(derive: (key: string) => T, size = DEFAULT_SIZE) {
    this.#derive = derive;
    this.#size = size;
  }

  /** What `derive` gave for `key`, derived now if it is not cached. */
  get(key: string): T {
    let derived = this.#entries.get(key);
    if (derived === undefined) {
      derived = this.#derive(key);
      if (this.#entries.size >= this.#size) this.#entries.clear();
      this.#entries.set(key, derived);
    }
    return derived;
  }
}
