import { monotonicNow } from '../clock.js';
import { backoffDelayMs, type RetryOptions } from './backoff.js';

/** A release (or a clean-up of what a failed acquire may have created) that must reach the backend. */
export interface ReleaseJob {
  /** One bounded attempt: resolves when the backend answered (whatever it answered), rejects on failure. */
  readonly attempt: () => Promise<unknown>;
  /**
   * Until when (monotonic ms) the backend may still hold what is to be released; after it, the
   * backend frees it by itself and retrying is pointless. Read before every retry: the deadline of a
   * session-bound lock moves while its session is kept alive.
   */
  readonly until: () => number;
  /** Called once, when the job ends: `answer` is the backend's answer, or `error` the last failure. */
  readonly settled: (result: { readonly done: true; readonly answer: unknown } | { readonly done: false; readonly error: unknown }) => void;
}

// Retry soon (a reconnect is often quick), then back off to a couple of seconds.
const RELEASE_RETRY: RetryOptions = Object.freeze({ initialDelayMs: 50, maxDelayMs: 2_000, factor: 2 });
/** At most this many attempts per job, whatever its deadline: every loop is bounded in count too. */
export const MAX_RELEASE_ATTEMPTS = 30;

interface RunningJob {
  readonly job: ReleaseJob;
  attempts: number;
  timer: NodeJS.Timeout | undefined;
  inFlight: Promise<void> | undefined;
  ended: boolean;
}

/**
 * The background releases of one provider. `release()` never rejects because the backend is
 * unreachable: its first attempt runs in the caller's await, and when that fails the job lands here
 * and is retried with jittered backoff until the backend answers, the lock's validity ends (the
 * backend frees it by itself then), {@link MAX_RELEASE_ATTEMPTS} attempts were made, or the provider
 * closes (one last attempt each, then nothing more). Timers are unref'd: a pending release alone does
 * not keep a process alive (the TTL or the session's end frees the lock).
 */
export class BackgroundReleases {
  readonly #running = new Set<RunningJob>();

  /** How many jobs are still being retried. */
  get size(): number {
    return this.#running.size;
  }

  /**
   * Starts a job: its first attempt now, in the background, then retries as needed. Resolves when
   * that first attempt has settled (answered, or failed and left to the retries); never rejects.
   */
  start(job: ReleaseJob): Promise<void> {
    const running: RunningJob = { job, attempts: 0, timer: undefined, inFlight: undefined, ended: false };
    this.#running.add(running);
    const first = this.#attempt(running, false);
    running.inFlight = first;
    return first;
  }

  /** Takes over a job whose first attempt already failed with `error`. */
  retry(job: ReleaseJob, error: unknown): void {
    const running: RunningJob = { job, attempts: 1, timer: undefined, inFlight: undefined, ended: false };
    this.#running.add(running);
    this.#schedule(running, error);
  }

  /** Makes one immediate attempt for every job (a provider closing), then ends them all. Never rejects. */
  async flush(): Promise<void> {
    const jobs = [...this.#running];
    await Promise.all(
      jobs.map(async (running) => {
        clearTimeout(running.timer);
        await running.inFlight;
        if (!running.ended) await this.#attempt(running, true);
      }),
    );
  }

  #schedule(running: RunningJob, lastError: unknown): void {
    const now = monotonicNow();
    if (running.attempts >= MAX_RELEASE_ATTEMPTS || now >= running.job.until()) {
      this.#end(running, { done: false, error: lastError });
      return;
    }
    const delay = Math.min(backoffDelayMs(running.attempts - 1, RELEASE_RETRY), Math.max(0, running.job.until() - now));
    running.timer = setTimeout(() => {
      running.timer = undefined;
      running.inFlight = this.#attempt(running, false);
    }, Math.ceil(delay));
    running.timer.unref();
  }

  async #attempt(running: RunningJob, last: boolean): Promise<void> {
    running.attempts += 1;
    try {
      const answer = await running.job.attempt();
      this.#end(running, { done: true, answer });
    } catch (error) {
      running.inFlight = undefined;
      if (running.ended) return;
      if (last) this.#end(running, { done: false, error });
      else this.#schedule(running, error);
    }
  }

  #end(running: RunningJob, result: Parameters<ReleaseJob['settled']>[0]): void {
    if (running.ended) return;
    running.ended = true;
    clearTimeout(running.timer);
    this.#running.delete(running);
    running.job.settled(result);
  }
}
