import { monotonicNow } from '@fencelock/core';

/** One line of the story. */
export interface TimelineEntry {
  /** Milliseconds since the run started (monotonic clock). */
  readonly atMs: number;
  readonly who: string;
  readonly what: string;
}

/** Collects what happened, stamped on the monotonic clock from the start of the run, and prints it. */
export class Timeline {
  readonly #start = monotonicNow();
  readonly entries: TimelineEntry[] = [];
  readonly #print: (line: string) => void;

  constructor(print: (line: string) => void) {
    this.#print = print;
  }

  /** Records and prints one event. */
  log(who: string, what: string): void {
    const entry = { atMs: monotonicNow() - this.#start, who, what };
    this.entries.push(entry);
    this.#print(`${entry.atMs.toFixed(0).padStart(6)} ms  ${who.padEnd(8)}  ${what}`);
  }
}
