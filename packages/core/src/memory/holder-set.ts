/** An item of a {@link HolderSet}; the set keeps `holderSlot`. */
export interface SetHolder {
  readonly ownerId: string;
  /** The holder's position in its set, -1 when in none. Start it at -1. */
  holderSlot: number;
}

// A key with more holders than this (shared locks) looks them up by owner id through a map.
const SCAN_LIMIT = 8;

/**
 * The holders of one key, by owner id. Nearly always one: a plain array then, searched in place. A
 * `Map` whose only entry is deleted and another added, once per lock, rebuilds its table each time;
 * the map is built only for keys with many (shared) holders.
 */
export class HolderSet<T extends SetHolder> {
  readonly #items: T[] = [];
  #byOwner: Map<string, T> | undefined;

  /** How many holders there are. */
  get size(): number {
    return this.#items.length;
  }

  /** The holder `ownerId`, if it holds. */
  get(ownerId: string): T | undefined {
    if (this.#byOwner !== undefined) return this.#byOwner.get(ownerId);
    const items = this.#items;
    for (let index = 0; index < items.length; index += 1) {
      const item = items[index]!;
      if (item.ownerId === ownerId) return item;
    }
    return undefined;
  }

  /** Adds `holder`, whose owner id must not be in the set. */
  add(holder: T): void {
    holder.holderSlot = this.#items.length;
    this.#items.push(holder);
    if (this.#byOwner !== undefined) this.#byOwner.set(holder.ownerId, holder);
    else if (this.#items.length > SCAN_LIMIT) this.#byOwner = new Map(this.#items.map((item) => [item.ownerId, item]));
  }

  /** Removes `holder`; false when it was not in the set. */
  delete(holder: T): boolean {
    const slot = holder.holderSlot;
    const items = this.#items;
    if (slot === -1 || items[slot] !== holder) return false;
    holder.holderSlot = -1;
    const last = items.pop()!;
    if (last !== holder) {
      items[slot] = last;
      last.holderSlot = slot;
    }
    if (items.length === 0) this.#byOwner = undefined;
    else this.#byOwner?.delete(holder.ownerId);
    return true;
  }

  /** The holders now: the set's own array, to read before changing the set. */
  list(): readonly T[] {
    return this.#items;
  }
}
