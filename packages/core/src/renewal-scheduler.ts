import { monotonicNow } from './clock.js';
import { WakeTimer } from './lifecycle/wake-timer.js';

/** A scheduled renewal; `cancel()` is idempotent. */
export interface RenewalTicket {
  cancel(): void;
}

// An entry is its own ticket: one object per scheduled renewal.
class Entry implements RenewalTicket {
  readonly scheduler: RenewalScheduler;
  readonly dueAt: number;
  readonly earliestAt: number;
  // Dropped at cancel: a released lock's handle must not stay reachable until its old due time.
  run: (() => void) | undefined;

  constructor(scheduler: RenewalScheduler, dueAt: number, earliestAt: number, run: () => void) {
    this.scheduler = scheduler;
    this.dueAt = dueAt;
    this.earliestAt = earliestAt;
    this.run = run;
  }

  cancel(): void {
    this.scheduler.cancel(this);
  }
}

// Rebuild the heap without cancelled entries once they are the majority (and more than a few): a
// loop of short holds cancels one renewal per lock, each due a third of a TTL later.
const COMPACT_MIN_CANCELLED = 64;

/**
 * One timer for all the automatic extensions of a provider, instead of one per lock.
 *
 * Each renewal names when it is due and how much earlier it may run. When the timer fires it runs
 * every renewal whose window has opened, in the same turn of the event loop, so a backend can send
 * them as one request (the Redis adapter batches the extensions it is asked for in one turn). Locks
 * renewed together get the same new deadline, so they stay in step and keep sharing batches: 10 000
 * held locks cost a few requests per renewal period rather than 10 000.
 */
export class RenewalScheduler {
  // A binary min-heap on dueAt; cancelled entries are dropped when they reach the top.
  #heap: Entry[] = [];
  #cancelled = 0;
  readonly #timer = new WakeTimer(() => this.#fire());

  /** Runs `run` at `dueAt` (monotonic ms) at the latest, and possibly from `dueAt - slackMs` on. */
  schedule(dueAt: number, slackMs: number, run: () => void): RenewalTicket {
    const entry = new Entry(this, dueAt, dueAt - Math.max(0, slackMs), run);
    this.#push(entry);
    this.#timer.armBy(dueAt);
    return entry;
  }

  /** Cancels a renewal this scheduler made (what `ticket.cancel()` does); idempotent. */
  cancel(ticket: RenewalTicket): void {
    if (!(ticket instanceof Entry) || ticket.scheduler !== this || ticket.run === undefined) return;
    ticket.run = undefined;
    this.#cancelled += 1;
    if (this.#cancelled >= COMPACT_MIN_CANCELLED && this.#cancelled * 2 > this.#heap.length) this.#compact();
  }

  /** How many renewals are waiting (cancelled ones included until they are dropped). */
  get size(): number {
    return this.#heap.length;
  }

  /** Drops every renewal and the timer. */
  clear(): void {
    for (const entry of this.#heap) entry.run = undefined;
    this.#heap = [];
    this.#cancelled = 0;
    this.#timer.clear();
  }


  #fire(): void {
    const now = monotonicNow();
    const due: (() => void)[] = [];
    // Bounded by the heap's size: each iteration removes one entry.
    for (let top = this.#heap[0]; top !== undefined; top = this.#heap[0]) {
      if (top.run !== undefined && top.earliestAt > now) break;
      this.#pop();
      if (top.run === undefined) {
        this.#cancelled -= 1;
      } else {
        due.push(top.run);
        top.run = undefined;
      }
    }
    const next = this.#heap[0];
    if (next !== undefined) this.#timer.arm(next.dueAt);
    for (const run of due) run();
  }

  #compact(): void {
    const live = this.#heap.filter((entry) => entry.run !== undefined);
    this.#heap = [];
    this.#cancelled = 0;
    for (const entry of live) this.#push(entry);
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (heap[parent]!.dueAt <= entry.dueAt) break;
      heap[index] = heap[parent]!;
      index = parent;
    }
    heap[index] = entry;
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && heap[right]!.dueAt < heap[left]!.dueAt ? right : left;
      if (heap[child]!.dueAt >= last.dueAt) break;
      heap[index] = heap[child]!;
      index = child;
    }
    heap[index] = last;
  }
}
