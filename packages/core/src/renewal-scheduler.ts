import { monotonicNow } from './clock.js';

/** A scheduled renewal; `cancel()` is idempotent. */
export interface RenewalTicket {
  cancel(): void;
}

interface Entry {
  readonly dueAt: number;
  readonly earliestAt: number;
  readonly run: () => void;
  cancelled: boolean;
}

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
  readonly #heap: Entry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;

  /** Runs `run` at `dueAt` (monotonic ms) at the latest, and possibly from `dueAt - slackMs` on. */
  schedule(dueAt: number, slackMs: number, run: () => void): RenewalTicket {
    const entry: Entry = { dueAt, earliestAt: dueAt - Math.max(0, slackMs), run, cancelled: false };
    this.#push(entry);
    if (dueAt < this.#timerAt) this.#arm(dueAt);
    return {
      cancel: () => {
        entry.cancelled = true;
      },
    };
  }

  /** How many renewals are waiting (cancelled ones included until they are dropped). */
  get size(): number {
    return this.#heap.length;
  }

  /** Drops every renewal and the timer. */
  clear(): void {
    for (const entry of this.#heap) entry.cancelled = true;
    this.#heap.length = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(1, Math.ceil(at - monotonicNow())));
    // A held lock alone does not keep the process alive (its TTL frees it on the server).
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = monotonicNow();
    const due: Entry[] = [];
    // Bounded by the heap's size: each iteration removes one entry.
    for (let top = this.#heap[0]; top !== undefined; top = this.#heap[0]) {
      if (!top.cancelled && top.earliestAt > now) break;
      this.#pop();
      if (!top.cancelled) due.push(top);
    }
    const next = this.#heap[0];
    if (next !== undefined) this.#arm(next.dueAt);
    for (const entry of due) entry.run();
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
