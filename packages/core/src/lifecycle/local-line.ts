import type { LockMode } from '../types.js';
import { waitFor } from './wait.js';

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
  turn(deadline: number, signal: AbortSignal): Promise<boolean>;
  /** Leaves the line (granted, timed out, aborted, failed); the next call in line becomes the head. Idempotent. */
  leave(): void;
}

class Line {
  readonly places: Place[] = [];
}

class Place implements LinePlace {
  #wake: ((value: true) => void) | undefined;
  #left = false;
  constructor(
    readonly line: Line,
    readonly forget: (line: Line) => void,
  ) {}

  get isHead(): boolean {
    return this.line.places[0] === this;
  }

  async turn(deadline: number, signal: AbortSignal): Promise<boolean> {
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
    places.splice(index, 1);
    if (index === 0) places[0]?.wakeAsHead();
    if (places.length === 0) this.forget(this.line);
  }
}

/**
 * One backend contender per (key, mode) in a provider. Waiting acquire calls of the same key and
 * mode queue here, in arrival order, each with its own deadline and signal; only the head of a line
 * contends at the backend (one waiter key, znode or registration instead of one per call). When the
 * head leaves — granted, timed out, aborted — the next call becomes the head and contends with the
 * rest of its own deadline. A call that times out or aborts while queued costs no request at all.
 */
export class LocalLines {
  readonly #lines = new Map<string, Line>();

  /** Joins the line of `key` in `mode`; the place is at the head when the line was empty. */
  join(key: string, mode: LockMode): LinePlace {
    // The mode comes from a fixed set and ends at the first ':', so the map key is injective.
    const id = `${mode}:${key}`;
    let line = this.#lines.get(id);
    if (line === undefined) {
      line = new Line();
      this.#lines.set(id, line);
    }
    const place = new Place(line, (empty) => {
      if (this.#lines.get(id) === empty) this.#lines.delete(id);
    });
    line.places.push(place);
    return place;
  }

  /** How many calls wait in the line of `key` in `mode`, its head included. */
  waiting(key: string, mode: LockMode): number {
    return this.#lines.get(`${mode}:${key}`)?.places.length ?? 0;
  }

  /** How many lines exist (each has one contender at most). */
  get size(): number {
    return this.#lines.size;
  }
}
