import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** One line the critical-section fixture wrote. */
export interface LogEntry {
  readonly name: string;
  readonly event: string;
  readonly token: string | undefined;
  readonly ownerId: string | undefined;
  readonly key: string | undefined;
}

/** A scratch directory with the shared log of one test and its gate files. */
export class LockLog {
  readonly dir = mkdtempSync(join(tmpdir(), 'fencelock-cli-'));
  readonly path = join(this.dir, 'log');

  /** The entries so far, in the order they were written. */
  entries(): LogEntry[] {
    if (!existsSync(this.path)) return [];
    return readFileSync(this.path, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => {
        const [name = '', event = '', token, ownerId, key] = line.split(' ');
        return { name, event, token: token === '-' ? undefined : token, ownerId: ownerId === '-' ? undefined : ownerId, key: key === '-' ? undefined : key };
      });
  }

  /** The entries as `name event` strings, for order checks. */
  events(): string[] {
    return this.entries().map((entry) => `${entry.name} ${entry.event}`);
  }

  /** The path of a gate file (not yet open). */
  gate(name: string): string {
    return join(this.dir, `gate-${name}`);
  }

  /** Opens a gate: the fixture waiting on it leaves its critical section. */
  open(name: string): void {
    writeFileSync(this.gate(name), '');
  }

  /** Deletes the directory. */
  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}
