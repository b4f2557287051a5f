import { link, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A nightly report as the job produces it. */
export interface NightlyReport {
  readonly date: string;
  /** The worker that built it. */
  readonly worker: string;
  readonly orders: number;
}

/**
 * The published reports, one file per date — and the file is the idempotency record: it appears
 * under its name with `link(2)`, which fails if the name exists, so of two workers writing the same
 * date exactly one succeeds, whatever the lock said (and nobody ever reads a half-written report). In a database this is a unique key on the date:
 * `INSERT INTO reports (date, …) VALUES ($1, …) ON CONFLICT (date) DO NOTHING`, then check the row count.
 */
export class ReportFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** The report of `date` if it was written, else `undefined`. */
  async read(date: string): Promise<NightlyReport | undefined> {
    try {
      return JSON.parse(await readFile(this.#path(date), 'utf8')) as NightlyReport;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** Writes the report unless one exists: `written`, or `exists` (then nothing was changed). */
  async writeOnce(report: NightlyReport): Promise<'written' | 'exists'> {
    const path = this.#path(report.date);
    const draft = `${path}.${report.worker}.${process.pid}.tmp`;
    await writeFile(draft, JSON.stringify(report));
    try {
      await link(draft, path);
      return 'written';
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'exists';
      throw error;
    } finally {
      await rm(draft, { force: true });
    }
  }

  #path(date: string): string {
    // Dates come from the scheduler as YYYY-MM-DD; refuse anything else rather than build odd paths.
    if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new RangeError(`not a date: ${JSON.stringify(date)}`);
    return join(this.#dir, `report-${date}.json`);
  }
}
