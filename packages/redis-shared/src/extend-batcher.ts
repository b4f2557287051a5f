import { monotonicNow } from '@fencelock/core/adapter';
import { hashSlot } from './key-slot.js';

/** One lock to extend. */
export interface ExtendItem {
  readonly lockKey: string;
  /** The lock's metadata side key, extended with it; omit it for locks without one (Redlock). */
  readonly metaKey?: string;
  readonly ownerId: string;
  readonly ttlMs: number;
  /** How long the batch carrying this item may take (the batch gets the longest of its items'). */
  readonly timeoutMs?: number;
}

/** The outcome of one extension: whether the lock was still ours, and when its request was sent. */
export interface ExtendOutcome {
  readonly extended: boolean;
  readonly sent: number;
}

/**
 * Sends one batch: `keys` and `args` exactly as the extend-many script takes them (its ARGV[1], the
 * keys per lock, included in `args`); resolves the script's reply.
 */
export type ExtendManyCall = (keys: string[], args: (string | number)[], timeoutMs: number | undefined) => Promise<unknown>;

interface Pending {
  readonly item: ExtendItem;
  readonly resolve: (outcome: ExtendOutcome) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Most locks one extend-many call carries. Long scripts block the server for everyone: a few hundred
 * PEXPIREs take well under a millisecond.
 */
export const MAX_EXTEND_BATCH = 256;

/**
 * Shared by `@fencelock/redis` and `@fencelock/redlock`, whose masters run the same extend script.
 *
 * Gathers the extensions asked for in one turn of the event loop (core runs the renewals that are
 * due together in one turn) and sends them as few script calls as it can: one per {@link MAX_EXTEND_BATCH} locks
 * on a single server, one per hash slot on a cluster (a script's keys must share a slot there).
 */
export class ExtendBatcher {
  readonly #call: ExtendManyCall;
  readonly #bySlot: boolean;
  readonly #withMeta: boolean;
  #pending: Pending[] = [];

  /**
   * @param bySlot - group by hash slot (a cluster); otherwise one group.
   * @param withMeta - whether every item has a `metaKey` (all or none, per batcher).
   */
  constructor(call: ExtendManyCall, options: { readonly bySlot: boolean; readonly withMeta: boolean }) {
    this.#call = call;
    this.#bySlot = options.bySlot;
    this.#withMeta = options.withMeta;
  }

  extend(item: ExtendItem): Promise<ExtendOutcome> {
    return new Promise((resolve, reject) => {
      if (this.#pending.length === 0) setImmediate(() => this.#flush());
      this.#pending.push({ item, resolve, reject });
    });
  }

  #flush(): void {
    const pending = this.#pending;
    this.#pending = [];
    const groups = new Map<number, Pending[]>();
    for (const entry of pending) {
      const group = this.#bySlot ? hashSlot(entry.item.lockKey) : 0;
      let list = groups.get(group);
      if (list === undefined) {
        list = [];
        groups.set(group, list);
      }
      list.push(entry);
    }
    for (const list of groups.values()) {
      for (let start = 0; start < list.length; start += MAX_EXTEND_BATCH) void this.#send(list.slice(start, start + MAX_EXTEND_BATCH));
    }
  }

  async #send(batch: Pending[]): Promise<void> {
    const keys: string[] = [];
    const args: (string | number)[] = [this.#withMeta ? 2 : 1];
    let timeoutMs: number | undefined;
    for (const { item } of batch) {
      if (item.timeoutMs !== undefined) timeoutMs = Math.max(timeoutMs ?? 0, item.timeoutMs);
      keys.push(item.lockKey);
      if (this.#withMeta) keys.push(item.metaKey ?? item.lockKey);
      args.push(item.ownerId, item.ttlMs);
    }
    const sent = monotonicNow();
    let extended: boolean[];
    try {
      extended = extendReplyFlags(await this.#call(keys, args, timeoutMs), batch.length);
    } catch (error) {
      for (const entry of batch) entry.reject(error);
      return;
    }
    batch.forEach((entry, index) => entry.resolve({ extended: extended[index] === true, sent }));
  }
}

/**
 * The extend-many script's reply as one flag per lock (true: extended, still ours). Anything but an
 * array of one 0 or 1 per lock did not come from the extend-many script (a proxy in between, another
 * script registered under its name): it says nothing about the locks, so it throws, failing the
 * batch like a lost connection would — each extension fails and is retried — instead of declaring
 * every lock in it lost.
 */
export function extendReplyFlags(reply: unknown, count: number): boolean[] {
  const results = Array.isArray(reply) ? (reply as unknown[]) : undefined;
  if (results === undefined || results.length !== count || !results.every((result) => result === 0 || result === 1)) {
    throw new Error(`unexpected reply to a batched extension of ${count} lock(s): ${describeReply(reply)}`);
  }
  return results.map((result) => result === 1);
}

function describeReply(reply: unknown): string {
  const text = Array.isArray(reply) ? `an array of ${reply.length}` : JSON.stringify(reply) ?? String(reply);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
