import type { Redis } from 'ioredis';

/** A nightly report as the job produces it. */
export interface NightlyReport {
  readonly date: string;
  /** The worker that built it. */
  readonly worker: string;
  /** The fencing token of the lock it was built under (decimal string). */
  readonly fencingToken: string;
  readonly orders: number;
}

// Done markers outlive the lock by far (a late worker may fire minutes later), but this example
// should not leave keys behind in a shared Redis forever.
const DONE_MARKER_TTL_SECONDS = 24 * 60 * 60;

/**
 * Where the job's results live, in the same Redis: the published reports (a list, so that a
 * report published twice would show up twice) and one "done" marker per date.
 */
export class ReportStore {
  readonly #redis: Redis;
  readonly #namespace: string;

  constructor(redis: Redis, namespace: string) {
    this.#redis = redis;
    this.#namespace = namespace;
  }

  /** Who marked `date` done, or `undefined` if nobody did yet. */
  async doneBy(date: string): Promise<string | undefined> {
    return (await this.#redis.get(this.#doneKey(date))) ?? undefined;
  }

  /**
   * Publishes the report and marks its date done, in one MULTI so that a crash cannot leave one
   * without the other. `SET NX` keeps the first worker's marker if one was somehow there already.
   */
  async publish(report: NightlyReport): Promise<void> {
    await this.#redis
      .multi()
      .rpush(this.#reportsKey(), JSON.stringify(report))
      .set(this.#doneKey(report.date), report.worker, 'EX', DONE_MARKER_TTL_SECONDS, 'NX')
      .expire(this.#reportsKey(), DONE_MARKER_TTL_SECONDS)
      .exec();
  }

  /** Every report published so far, in publication order. */
  async published(): Promise<NightlyReport[]> {
    const entries = await this.#redis.lrange(this.#reportsKey(), 0, -1);
    return entries.map((entry) => JSON.parse(entry) as NightlyReport);
  }

  #doneKey(date: string): string {
    return `${this.#namespace}:done:${date}`;
  }

  #reportsKey(): string {
    return `${this.#namespace}:reports`;
  }
}
