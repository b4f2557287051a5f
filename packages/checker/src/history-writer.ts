import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { type HistoryEvent, type ParseHistoryOptions, parseHistory, serializeEvent } from './history.js';
import { monotonicNs } from './mono-clock.js';

/** An event as a recorder hands it over: the writer adds `run` and `seq`, and `t` when it is missing. */
export type HistoryEventInput = DistributiveInput<HistoryEvent>;

// Omit over each member of the union, so that client and nemesis events keep their own field types.
type DistributiveInput<E> = E extends unknown ? Omit<E, 'run' | 'seq' | 't'> & { readonly t?: number } : never;

/** Options of {@link createHistoryWriter}. */
export interface HistoryWriterOptions {
  /** The JSONL file; created if missing, always appended to. */
  readonly path: string;
  /** The run id written on every line. */
  readonly run: string;
  /** The first `seq` to hand out. Give each process its own range, or merge with {@link mergeHistories}. @default 0 */
  readonly firstSeq?: number;
  /** The clock for `t`, in ns. @default {@link monotonicNs} */
  readonly now?: () => number;
}

/** An append-only JSONL history file. */
export interface HistoryWriter {
  /** Appends one event as one line and returns the full record. */
  record(event: HistoryEventInput): HistoryEvent;
  /** How many events were written. */
  readonly count: number;
  /** Closes the file. Idempotent. */
  close(): void;
}

/**
 * Opens an append-only history. Each event is written with one synchronous `write` call of a whole
 * line, so a `kill -9` loses at most the line being written (the reader drops such a torn tail) and
 * lines of one process are never reordered.
 */
export function createHistoryWriter(options: HistoryWriterOptions): HistoryWriter {
  const now = options.now ?? monotonicNs;
  let descriptor: number | undefined = openSync(options.path, 'a');
  let seq = options.firstSeq ?? 0;
  let count = 0;
  return {
    record(input) {
      if (descriptor === undefined) throw new Error(`history ${options.path} is closed`);
      const event = { ...input, run: options.run, seq, t: input.t ?? now() } as HistoryEvent;
      writeSync(descriptor, `${serializeEvent(event)}\n`);
      seq += 1;
      count += 1;
      return event;
    },
    get count() {
      return count;
    },
    close() {
      if (descriptor === undefined) return;
      closeSync(descriptor);
      descriptor = undefined;
    },
  };
}

/** Reads and validates a JSONL history file. @throws {@link HistoryFormatError} */
export function readHistoryFile(path: string, options?: ParseHistoryOptions): HistoryEvent[] {
  return parseHistory(readFileSync(path, 'utf8'), options);
}

/**
 * Merges histories written by several processes into one, ordered by `t` (ties keep each file's
 * order), and renumbers `seq` from 0 so that it is unique again. The per-file `seq` is not kept.
 */
export function mergeHistories(histories: readonly (readonly HistoryEvent[])[]): HistoryEvent[] {
  const tagged = histories.flatMap((events, file) => events.map((event, index) => ({ event, file, index })));
  tagged.sort((a, b) => a.event.t - b.event.t || a.file - b.file || a.index - b.index);
  return tagged.map(({ event }, seq) => ({ ...event, seq }));
}
