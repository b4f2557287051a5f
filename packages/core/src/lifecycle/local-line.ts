import type { HoldMode } from '../types.js';
import { waitFor, type AbortLike } from './wait.js';

/**
 * A place in a local line; {@link LocalLines.join} makes one for each waiting acquire call.
 */
export interface LinePlace {
  /** Whether this call is at the head of its line (the one that contends at the backend). */
  readonly isHead: boolean;
  /**
   * Resolves `true` when this call may contend at the backend (it is at the head of its line), or
   * `false` when `deadline` passed first; rejects with the signal's reason on abort. At once for
   * the head.
   */
  turn(deadline: number, signal: AbortLike): Promise<boolean>;
  /** Leaves the line (granted, timed out, aborted, failed); the next call in line becomes the head. Idempotent. */
  leave(): void;
}

/** The calls waiting for one (key, mode), in arrival order (a semaphore's calls: mode `semaphore`, a campaign's: `leader`). */
export class Line {
  readonly places: Place[] = [];
  /** Empty, and kept in its map for the next call of its key (see {@link LocalLines}). */
  idle = false;
}

/** One call's place in a {@link Line}. */
export class Place implements LinePlace {
  readonly line: Line;
  readonly lines: LocalLines;
  #wake: ((value: true) => void) | undefined;
  #left = false;

  constructor(line: Line, lines: LocalLines) {
    this.line = line;
    this.lines = lines;
  }

  get isHead(): boolean {
    return this.line.places[0] === this;
  }

  async turn(deadline: number, signal: AbortLike): Promise<boolean> {
    if (this.isHead) return true;
    const outcome = await waitFor<true>({
      deadline,
      signal,
      until: (wake) => {
        this.#wake = wake;
        return () => {
          this.#wake = undefined;
        };
      },
    });
    return outcome.woken;
  }

  /** This place became the head: its wait for a turn ends. */
  wakeAsHead(): void {
    this.#wake?.(true);
  }

  leave(): void {
    if (this.#left) return;
    this.#left = true;
    const places = this.line.places;
    const index = places.indexOf(this);
    if (index === -1) return;
    // pop() for the last place (nearly always the only one): splice() returns a new array each time.
    if (index === places.length - 1) places.pop();
    else places.splice(index, 1);
    if (index === 0) places[0]?.wakeAsHead();
    if (places.length === 0) this.lines.emptied(this.line);
  }
}

// Empty lines kept for reuse before they are forgotten in bulk (and never more than the busy ones).
const IDLE_LINES_KEPT = 64;

/**
 * One backend contender per (key, mode) in a provider. Waiting acquire calls of the same key and
 * mode queue here, in arrival order, each with its own deadline and signal; only the head of a line
 * contends at the backend (one waiter key, znode or registration instead of one per call). When the
 * head leaves — granted, timed out, aborted — the next call becomes the head and contends with the
 * rest of its own deadline. A call that times out or aborts while queued costs no request at all.
 *
 * A line that empties stays in its map, idle, until idle lines are many: a map entry deleted and
 * added again for every acquisition of a key rebuilds the map's table each time.
 */
export class LocalLines {
  readonly #exclusive = new Map<string, Line>();
  readonly #shared = new Map<string, Line>();
  // Semaphores are a namespace apart from locks: their calls queue in lines of their own.
  readonly #semaphore = new Map<string, Line>();
  // So are elections: one campaigner per name contends at the backend, the others wait here.
  readonly #leader = new Map<string, Line>();
  #idle = 0;

  /** Joins the line of `key` in `mode`; the place is at the head when the line was empty. */
  join(key: string, mode: HoldMode): LinePlace {
    const map = this.#map(mode);
    let line = map.get(key);
    if (line === undefined) {
      line = new Line();
      map.set(key, line);
    } else if (line.idle) {
      line.idle = false;
      this.#idle -= 1;
    }
    const place = new Place(line, this);
    line.places.push(place);
    return place;
  }

  /** How many calls wait in the line of `key` in `mode`, its head included. */
  waiting(key: string, mode: HoldMode): number {
    return this.#map(mode).get(key)?.places.length ?? 0;
  }

  #map(mode: HoldMode): Map<string, Line> {
    return mode === 'exclusive' ? this.#exclusive : mode === 'shared' ? this.#shared : mode === 'semaphore' ? this.#semaphore : this.#leader;
  }

  /** How many lines have calls (each has one contender at most). */
  get size(): number {
    return this.#mapSizes() - this.#idle;
  }

  /** Called by a place whose leaving emptied its line. */
  emptied(line: Line): void {
    if (line.idle) return;
    line.idle = true;
    this.#idle += 1;
    if (this.#idle > IDLE_LINES_KEPT && this.#idle * 2 > this.#mapSizes()) this.#forgetIdle();
  }

  #mapSizes(): number {
    return this.#exclusive.size + this.#shared.size + this.#semaphore.size + this.#leader.size;
  }

  #forgetIdle(): void {
    for (const map of [this.#exclusive, this.#shared, this.#semaphore, this.#leader]) {
      map.forEach((line, key) => {
        if (line.idle) map.delete(key);
      });
    }
    this.#idle = 0;
  }
}
