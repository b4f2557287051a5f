import { monotonicNow, type LockHolder } from '@fencelock/core';
import type { CliOutput } from './cli-io.js';
import { formatDuration } from './duration.js';

/** How often the terminal status line is redrawn, in ms. */
const REDRAW_INTERVAL_MS = 250;
const CLEAR_LINE = '\r\u001b[2K';

/** Options of {@link WaitStatus}. */
export interface WaitStatusOptions {
  /** Where the status goes. */
  readonly stderr: CliOutput;
  /** Print plain lines when stderr is not a terminal. */
  readonly verbose: boolean;
  /** The key waited for. */
  readonly key: string;
  /** The wait bound, in ms (`Infinity` for none). */
  readonly waitMs: number;
  /** The semaphore waited for (`hold --permits`): its limit and the permits asked for; `undefined` for a lock. */
  readonly semaphore?: { readonly limit: number; readonly permits: number } | undefined;
  /** True for the leadership of the election `key` (`elect`). */
  readonly election?: boolean;
}

/** What the status line says of a holder (a lock's or a semaphore's). */
export type HolderSummary = Pick<LockHolder, 'ownerId' | 'fencingToken' | 'metadata'>;

/**
 * The "waiting for the lock" status on stderr. On a terminal: one line, redrawn in place with the
 * time waited and who holds the lock, erased when the wait ends. Elsewhere: one plain line with
 * `--verbose`, nothing without (scripts and logs stay quiet).
 */
export class WaitStatus {
  readonly #options: WaitStatusOptions;
  readonly #tty: boolean;
  #startedAt: number | undefined;
  #holder: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #drawn = false;
  #waiting = false;

  constructor(options: WaitStatusOptions) {
    this.#options = options;
    this.#tty = options.stderr.isTTY === true;
  }

  /** The key turned out to be held: start showing that we wait. */
  contended(): void {
    if (this.#startedAt !== undefined) return;
    this.#startedAt = monotonicNow();
    this.#waiting = true;
    if (this.#tty) {
      this.#draw();
      this.#timer = setInterval(() => this.#draw(), REDRAW_INTERVAL_MS);
      this.#timer.unref();
    } else if (this.#options.verbose) {
      const bound = this.#options.waitMs === Number.POSITIVE_INFINITY ? 'with no time limit' : `up to ${formatDuration(this.#options.waitMs)}`;
      const taken = this.#options.election === true ? 'another campaigner leads' : this.#options.semaphore === undefined ? 'held by another owner' : 'its permits taken';
      this.#options.stderr.write(`fencelock: waiting for ${this.#subject()}, ${taken} (${bound})\n`);
    }
  }

  /** Who holds the key, once known (best effort: shown only while still waiting). */
  holder(holder: HolderSummary | undefined): void {
    if (!this.#waiting || holder === undefined) return;
    this.#holder = this.#options.election === true ? describeLeader(holder) : describeHolder(holder);
    if (!this.#tty && this.#options.verbose) this.#options.stderr.write(`fencelock:   ${this.#by()} ${this.#holder}\n`);
  }

  /** The wait ended (acquired or not): erase the line and stop redrawing. */
  stop(): void {
    this.#waiting = false;
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#drawn) this.#options.stderr.write(CLEAR_LINE);
    this.#drawn = false;
  }

  /** `lock "k"`, `semaphore "k" (n permits)` or `election "k"`. */
  #subject(): string {
    const key = JSON.stringify(this.#options.key);
    if (this.#options.election === true) return `election ${key}`;
    const semaphore = this.#options.semaphore;
    return semaphore === undefined ? `lock ${key}` : `semaphore ${key} (${semaphore.limit} permits)`;
  }

  /** `held by`, or `led by` for an election. */
  #by(): string {
    return this.#options.election === true ? 'led by' : 'held by';
  }

  #draw(): void {
    const waited = monotonicNow() - (this.#startedAt ?? monotonicNow());
    const bound = this.#options.waitMs === Number.POSITIVE_INFINITY ? '' : ` of ${formatDuration(this.#options.waitMs)}`;
    const holder = this.#holder === undefined ? '' : ` (${this.#by()} ${this.#holder})`;
    const line = `fencelock: waiting for ${this.#subject()}${holder}: ${formatDuration(Math.floor(waited / 1000) * 1000)}${bound}`;
    this.#options.stderr.write(`${CLEAR_LINE}${line}`);
    this.#drawn = true;
  }
}

/** One holder in a few words: its metadata (host, pid, command) or owner id, and its token. */
export function describeHolder(holder: HolderSummary): string {
  const who = holder.metadata ?? `owner ${holder.ownerId}`;
  return holder.fencingToken === undefined ? who : `${who}, token ${holder.fencingToken}`;
}

/** The leader in a few words: its value (in the summary's `ownerId`) and its term. */
function describeLeader(leader: HolderSummary): string {
  const who = JSON.stringify(leader.ownerId);
  return leader.fencingToken === undefined ? who : `${who}, term ${leader.fencingToken}`;
}
