import { RequestDeadlines, retryCall } from '@fencelock/core/adapter';
import type { IKeyValue, IWatchResponse } from 'etcd3';

/**
 * How a holder's key stopped being the one it created: `deleted` (the key is gone), or `overwritten`
 * (it exists, but someone else wrote it since, or deleted and re-created it: it is theirs now).
 */
export type KeyTaken = 'deleted' | 'overwritten';

/** The part of an etcd3 `Watcher` a holder watch uses (a test can stand in for it). */
export interface KeyWatcher {
  on(event: 'data', handler: (response: IWatchResponse) => void): unknown;
  on(event: 'connected', handler: (response: IWatchResponse) => void): unknown;
  on(event: 'disconnected', handler: (error: Error) => void): unknown;
  on(event: 'error', handler: (error: Error) => void): unknown;
  cancel(): Promise<void>;
}

/** What a holder watch needs from etcd and from the lease its key lives on. */
export interface HolderWatchDeps {
  /** Opens a watch on every change of `key` from `fromRevision` on; etcd3 attaches it in the background. */
  watch(key: Buffer, fromRevision: bigint): KeyWatcher;
  /** Reads `key` linearizably: its key-value (if it exists) and the revision the read saw. */
  read(key: Buffer): Promise<{ readonly kv: IKeyValue | undefined; readonly revision: bigint }>;
  /** False once the lease is gone: its loss is reported by the lease, not here. */
  alive(): boolean;
}

/** What a holder watch reports to the grant it watches for. */
export interface HolderWatchEvents {
  taken(how: KeyTaken): void;
  uncertain(): void;
  recovered(): void;
}

/**
 * Whether a key read back (or seen in an event) is still the one we created at `createRevision`. We
 * never write our key again, so its mod revision stays its create revision: any put since (an
 * overwrite, a delete and re-create) moves it.
 */
export function keyTaken(kv: IKeyValue | undefined, createRevision: bigint): KeyTaken | undefined {
  if (kv === undefined) return 'deleted';
  return BigInt(kv.mod_revision) === createRevision ? undefined : 'overwritten';
}

// Bounds: re-reads while etcd cannot be reached (the lease's own keepalives end the hold sooner when
// it stays unreachable), and new watches after etcd cancelled ours (a compaction, a refusal).
const MAX_READS = 20;
const MAX_REWATCHES = 10;
const READ_RETRY = { initialDelayMs: 50, maxDelayMs: 2_000, factor: 2 };

/**
 * Tells a holder at once that its own key was deleted or overwritten behind its back: a watch on that
 * one key, multiplexed with the provider's other holders' watches on one stream, from the revision
 * right after the key's creation, so that a change made before etcd confirmed the watch is still
 * delivered. Nothing is awaited on the
 * acquire path. Where the watch cannot vouch for every revision (etcd cancelled it, say after a
 * compaction; or the stream broke before etcd had replayed what preceded the watch), the key is read
 * back once instead.
 */
export class HolderWatch {
  readonly #key: Buffer;
  readonly #createRevision: bigint;
  readonly #deps: HolderWatchDeps;
  readonly #events: HolderWatchEvents;
  #watcher: KeyWatcher | undefined;
  #stopped = false;
  #rewatches = 0;
  #reading: { rewatch: boolean } | undefined;
  #readAbort: AbortController | undefined;
  #awaitingOpen = false;

  /**
   * @param openings where the watch waits to be opened, a moment after the grant; `undefined`: it is
   * opened at once. It starts from the key's creation whenever it is opened, so a delay never loses a
   * change; it only spares a hold that ends sooner the cost of a watch (a create and a cancel on the
   * stream: about one read's worth of client CPU).
   */
  constructor(key: Buffer, createRevision: bigint, deps: HolderWatchDeps, events: HolderWatchEvents, openings: HolderWatchOpenings | undefined) {
    this.#key = key;
    this.#createRevision = createRevision;
    this.#deps = deps;
    this.#events = events;
    if (openings === undefined) {
      this.#open(createRevision + 1n);
      return;
    }
    this.#awaitingOpen = true;
    openings.schedule(this);
  }

  /** True while the watch waits for its delayed opening (not stopped, not opened yet). */
  get awaitingOpen(): boolean {
    return this.#awaitingOpen;
  }

  /** Its delay passed: opens the watch, unless it was stopped meanwhile. */
  openNow(): void {
    if (!this.#awaitingOpen) return;
    this.#awaitingOpen = false;
    this.#open(this.#createRevision + 1n);
  }

  /** Stops reporting at once and cancels the watch. Idempotent. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#awaitingOpen = false;
    this.#readAbort?.abort();
    const watcher = this.#watcher;
    this.#watcher = undefined;
    // Never awaited: a release must not wait for etcd to confirm the cancellation.
    if (watcher !== undefined) void watcher.cancel().catch(() => undefined);
  }

  #open(fromRevision: bigint): void {
    let watcher: KeyWatcher;
    try {
      watcher = this.#deps.watch(this.#key, fromRevision);
    } catch {
      // etcd3 reports trouble as watcher events; should it ever throw instead, the grant must still
      // stand (its key exists): the hold then goes on without the watch, as before it had one.
      this.#watcher = undefined;
      return;
    }
    this.#watcher = watcher;
    const current = (): boolean => this.#watcher === watcher && !this.#stopped;
    // etcd3 resumes a broken stream from one past the last revision it heard of, and on creation it
    // hears of the revision etcd was at then, although etcd replays the changes from `fromRevision`
    // up to it a little later. A break in between would skip them: `replayed` is false meanwhile.
    let resumeFrom = fromRevision;
    let replayed = true;
    let broken = false;
    watcher.on('data', (response) => {
      resumeFrom = BigInt(response.header.revision) + 1n;
      replayed = true;
      if (!current()) return;
      for (const event of response.events) {
        const how = event.type === 'Delete' ? 'deleted' : keyTaken(event.kv, this.#createRevision);
        if (how !== undefined) {
          this.#taken(how);
          return;
        }
      }
    });
    watcher.on('connected', (response) => {
      const at = BigInt(response.header.revision);
      const skipped = broken && !replayed;
      broken = false;
      replayed = at < resumeFrom;
      resumeFrom = at + 1n;
      if (skipped && current()) void this.#read(false);
    });
    watcher.on('disconnected', () => {
      broken = true;
    });
    // etcd cancelled the watch (a compaction past the revision to resume from, a refusal): etcd3
    // has dropped it. Until the key is read back, nobody can say whether it is still ours.
    watcher.on('error', () => {
      if (!current()) return;
      this.#watcher = undefined;
      this.#events.uncertain();
      void this.#read(true);
    });
  }

  #taken(how: KeyTaken): void {
    if (this.#stopped) return;
    this.stop();
    this.#events.taken(how);
  }

  /** Reads the key back (one read at a time); with `rewatch`, then watches it again from that read. */
  async #read(rewatch: boolean): Promise<void> {
    if (this.#reading !== undefined) {
      this.#reading.rewatch ||= rewatch;
      return;
    }
    const reading = { rewatch };
    this.#reading = reading;
    try {
      this.#readAbort ??= new AbortController();
      const read = await retryCall(() => this.#deps.read(this.#key), {
        attempts: MAX_READS,
        retry: READ_RETRY,
        signal: this.#readAbort.signal,
        proceed: () => !this.#stopped && this.#deps.alive(),
      });
      if (read === undefined || this.#stopped) return;
      const how = keyTaken(read.value.kv, this.#createRevision);
      if (how !== undefined) {
        this.#taken(how);
        return;
      }
      if (reading.rewatch) {
        // The read covers every revision up to its own; the new watch takes over from the next one.
        if (this.#rewatches < MAX_REWATCHES) {
          this.#rewatches += 1;
          this.#open(read.value.revision + 1n);
        }
        this.#events.recovered();
      }
    } finally {
      this.#reading = undefined;
    }
  }
}

/**
 * The delayed openings of a provider's holder watches, behind one timer (core's `RequestDeadlines`):
 * a watch waits `delayMs` after its grant, and a lock released sooner never opens one. A timer armed
 * and cleared per grant would cost more than that bookkeeping. The timer is unref'd: a held lock alone
 * does not keep a process alive.
 */
export class HolderWatchOpenings {
  readonly #ring: RequestDeadlines<HolderWatch>;

  constructor(delayMs: number) {
    this.#ring = new RequestDeadlines<HolderWatch>(delayMs, {
      settled: (watch) => !watch.awaitingOpen,
      expire: (watch) => watch.openNow(),
    });
  }

  /** Opens `watch` once the delay has passed (unless it was stopped by then). */
  schedule(watch: HolderWatch): void {
    this.#ring.add(watch);
  }

  /** Forgets every pending opening (the provider closed). */
  clear(): void {
    this.#ring.clear();
  }
}
