import { monotonicNow } from '../clock.js';
import { WakeTimer } from './wake-timer.js';

/** Something with a deadline in a {@link DeadlineQueue}; the queue keeps both fields. */
export interface DeadlineEntry {
  /** The monotonic time (ms) at which the entry is due; meaningful while queued. */
  deadlineAt: number;
  /** The entry's position in its queue, -1 when it is in none. Start it at -1. */
  deadlineIndex: number;
}

/**
 * Deadlines of many entries behind one timer, instead of one `setTimeout` per entry: a Node timer and
 * its closure are several times the size of everything else a short-lived lock needs.
 *
 * The timer is armed for the earliest deadline and left alone when entries leave or move later: it
 * then fires early, finds nothing due and re-arms for the next deadline. A loop of short holds thus
 * arms about one timer per deadline period, not one per entry. Entries are a binary min-heap that
 * records each entry's index in the entry itself, so moving or removing one allocates nothing.
 * The timer is unref'd: deadlines alone never keep a process alive.
 */
export class DeadlineQueue<T extends DeadlineEntry> {
  readonly #heap: T[] = [];
  readonly #onDue: (entry: T) => void;
  readonly #timer = new WakeTimer(() => this.#fireDue());

  /** `onDue` is called once for each entry whose deadline has passed, after it left the queue. */
  constructor(onDue: (entry: T) => void) {
    this.#onDue = onDue;
  }

  /** How many entries are queued. */
  get size(): number {
    return this.#heap.length;
  }

  /** Queues `entry` at `deadlineAt`, or moves it there if it is queued already. */
  set(entry: T, deadlineAt: number): void {
    const index = entry.deadlineIndex;
    if (index === -1) {
      entry.deadlineAt = deadlineAt;
      entry.deadlineIndex = this.#heap.length;
      this.#heap.push(entry);
      this.#up(entry.deadlineIndex);
    } else {
      const earlier = deadlineAt < entry.deadlineAt;
      entry.deadlineAt = deadlineAt;
      if (earlier) this.#up(index);
      else this.#down(index);
    }
    this.#timer.armBy(deadlineAt);
  }

  /** Takes `entry` out of the queue; a no-op when it is not queued. */
  delete(entry: T): void {
    const index = entry.deadlineIndex;
    if (index === -1 || this.#heap[index] !== entry) return;
    entry.deadlineIndex = -1;
    const last = this.#heap.pop();
    if (last === undefined || last === entry) return;
    this.#heap[index] = last;
    last.deadlineIndex = index;
    this.#up(index);
    this.#down(last.deadlineIndex);
  }

  /** Drops every entry and the timer. */
  clear(): void {
    for (const entry of this.#heap) entry.deadlineIndex = -1;
    this.#heap.length = 0;
    this.#timer.clear();
  }

  #fireDue(): void {
    const now = monotonicNow();
    // Taken out first, called after: a callback may queue entries again without upsetting the loop.
    let due: T[] | undefined;
    for (let top = this.#heap[0]; top !== undefined && top.deadlineAt <= now; top = this.#heap[0]) {
      this.delete(top);
      (due ??= []).push(top);
    }
    const next = this.#heap[0];
    if (next !== undefined) this.#timer.armBy(next.deadlineAt);
    if (due !== undefined) for (const entry of due) this.#onDue(entry);
  }

  #up(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex]!;
      if (parent.deadlineAt <= entry.deadlineAt) break;
      heap[index] = parent;
      parent.deadlineIndex = index;
      index = parentIndex;
    }
    heap[index] = entry;
    entry.deadlineIndex = index;
  }

  #down(index: number): void {
    const heap = this.#heap;
    const entry = heap[index]!;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const childIndex = right < heap.length && heap[right]!.deadlineAt < heap[left]!.deadlineAt ? right : left;
      const child = heap[childIndex]!;
      if (child.deadlineAt >= entry.deadlineAt) break;
      heap[index] = child;
      child.deadlineIndex = index;
      index = childIndex;
    }
    heap[index] = entry;
    entry.deadlineIndex = index;
  }
}
