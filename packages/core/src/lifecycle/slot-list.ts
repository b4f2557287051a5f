/** Something a {@link SlotList} can hold; the list keeps the field. */
export interface Slotted {
  /** The item's position in its list, -1 when it is in none. Start it at -1. */
  listSlot: number;
}

/**
 * An unordered set of items that record their own position: adding and removing allocate nothing.
 * A `Set` that goes from one item to none and back, once per lock, rebuilds its hash table each time
 * (V8 shrinks it on the last delete), which costs more than the item itself.
 */
export class SlotList<T extends Slotted> {
  readonly #items: T[] = [];

  /** How many items the list holds. */
  get size(): number {
    return this.#items.length;
  }

  /** Adds `item` (which must be in no list). */
  add(item: T): void {
    item.listSlot = this.#items.length;
    this.#items.push(item);
  }

  /** Whether `item` is in this list. */
  has(item: T): boolean {
    return item.listSlot !== -1 && this.#items[item.listSlot] === item;
  }

  /** Removes `item`; false when it was not in this list. */
  delete(item: T): boolean {
    if (!this.has(item)) return false;
    const slot = item.listSlot;
    item.listSlot = -1;
    const last = this.#items.pop()!;
    if (last !== item) {
      this.#items[slot] = last;
      last.listSlot = slot;
    }
    return true;
  }

  /** The items now, as a new array (safe to iterate while items leave). */
  snapshot(): T[] {
    return [...this.#items];
  }

  /** Removes every item. */
  clear(): void {
    for (const item of this.#items) item.listSlot = -1;
    this.#items.length = 0;
  }
}
