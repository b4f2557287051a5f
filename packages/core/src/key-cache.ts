// Keys whose derived names are remembered; the cache is emptied when it is full (a bound on memory,
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

  constructor(derive: (key: string) => T, size = DEFAULT_SIZE) {
    this.#derive = derive;
    this.#size = size;
  }

  /** The names derived from `key`. */
  get(key: string): T {
    let names = this.#entries.get(key);
    if (names === undefined) {
      names = this.#derive(key);
      if (this.#entries.size >= this.#size) this.#entries.clear();
      this.#entries.set(key, names);
    }
    return names;
  }
}
