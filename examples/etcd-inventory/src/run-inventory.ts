import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { isLockError, type LockHandle } from '@fencelock/core';
import { createEtcdLockProvider, type EtcdLockProvider } from '@fencelock/etcd';
import { Etcd3 } from 'etcd3';
import { EtcdStock } from './etcd-stock.js';
import { Timeline } from './timeline.js';
import { within } from './within.js';

/** Options of {@link runInventory}. */
export interface InventoryOptions {
  /** etcd client endpoints, e.g. `['http://127.0.0.1:2379']`. */
  readonly endpoints: readonly string[];
  /** The product; its stock lives at `inventory/<sku>/stock`. @default `widget-<random>`, new every run */
  readonly sku?: string;
  /** Units on hand at the start. @default 10 */
  readonly initialStock?: number;
  /** Orders of one unit each, shared by three workers. @default 6 */
  readonly orders?: number;
  /** Delete the stock key at the end (the smoke test does). @default false */
  readonly cleanUp?: boolean;
  /** Where the timeline goes. @default console.log */
  readonly print?: (line: string) => void;
}

/** What the run found, for the smoke test and the exit code. */
export interface InventoryResult {
  readonly sku: string;
  readonly initialStock: number;
  /** Stock in etcd at the end. */
  readonly finalStock: number;
  /** Transactions etcd committed (one per unit sold). */
  readonly acceptedWrites: number;
  /** Transactions whose ownership comparison failed: a stale holder's writes. */
  readonly refusedWrites: number;
  readonly timeline: Timeline;
}

/** The lease TTL of every worker's lock session, ms (etcd's minimum here is 2 s). */
const SESSION_TTL_MS = 2_000;
/** Bound of every wait: for the lock, for the stall to end, for the takeover. */
const WAIT_MS = 15_000;
/** A refused order is sold again under a new lock, a bounded number of times. */
const MAX_ATTEMPTS = 3;

type Outcome = 'sold' | 'refused' | 'sold-out';

/** One worker: its own connection to etcd and its own lock session (lease), as a separate process has. */
class Worker {
  client: Etcd3;
  locks: EtcdLockProvider;

  constructor(
    readonly name: string,
    private readonly endpoints: readonly string[],
  ) {
    this.client = new Etcd3({ hosts: [...endpoints] });
    this.locks = createEtcdLockProvider({ client: this.client, sessionTtlMs: SESSION_TTL_MS });
  }

  /** A fresh connection and session, as a process that lost its connection opens. */
  async reconnect(): Promise<void> {
    await this.close();
    this.client = new Etcd3({ hosts: [...this.endpoints] });
    this.locks = createEtcdLockProvider({ client: this.client, sessionTtlMs: SESSION_TTL_MS });
  }

  async close(): Promise<void> {
    await this.locks.close();
    this.client.close();
  }
}

/** Resolves when the lock is known lost: its signal aborts when the lease is gone or runs out. */
function lost(lock: LockHandle): Promise<void> {
  if (lock.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * Three workers sell units of one product whose stock is kept in etcd. Each sale reads the stock
 * while holding an etcd lock and writes `stock − 1` in one transaction guarded by the holder's own
 * key (`ifOwner`). worker-1 prepares its transaction, then stalls: its connection goes silent, so its
 * lease expires and etcd deletes its key; worker-2 or worker-3 takes over and sells; worker-1's
 * transaction then arrives and fails its comparison. worker-1 reconnects and sells that order
 * again, and the final stock is exactly the initial stock minus the orders.
 */
export async function runInventory(options: InventoryOptions): Promise<InventoryResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const initialStock = options.initialStock ?? 10;
  const orders = Array.from({ length: options.orders ?? 6 }, (_, index) => index + 1);
  const timeline = new Timeline(print);
  const sku = options.sku ?? `widget-${randomUUID().slice(0, 8)}`;
  const lockKey = `inventory:${sku}`;
  // The inventory service's own connection, for the stock reads and writes.
  const data = new Etcd3({ hosts: [...options.endpoints] });
  const stock = new EtcdStock(data, sku);
  // 'sold' after every committed write: the stalled worker waits for a takeover, not for a time.
  const sales = new EventEmitter();
  const stalled = new EventEmitter();
  let acceptedWrites = 0;
  let refusedWrites = 0;
  const workers = ['worker-1', 'worker-2', 'worker-3'].map((name) => new Worker(name, options.endpoints));

  /** Sells one unit for `order` while holding the product's lock. */
  async function sellOne(worker: Worker, order: number, stall: boolean): Promise<Outcome> {
    await using lock = await worker.locks.acquire(lockKey, { waitMs: WAIT_MS });
    const current = await stock.read();
    if (current < 1) {
      timeline.log(worker.name, `order #${order}: sold out`);
      return 'sold-out';
    }
    // Prepared while the lock is held; sent now, or — for the stalled worker — much later.
    const write = stock.prepareWrite(worker.locks, lock, current - 1);
    if (stall) {
      timeline.log(worker.name, `order #${order}: holds the lock with token ${lock.fencingToken}, read stock ${current}`);
      timeline.log(worker.name, `prepared: ${write.guard}`);
      timeline.log(worker.name, 'STALLS holding the lock: its connection goes silent, no keepalive reaches etcd');
      const takeover = once(sales, 'sold');
      // From etcd's side a paused process and a cut connection look the same: keepalives stop.
      worker.client.close();
      stalled.emit('stalled');
      await within(lost(lock), WAIT_MS, `${worker.name}'s lease to run out`);
      const reason: unknown = lock.signal.reason;
      timeline.log(worker.name, `(still stalled) lease gone: isHeld() ${lock.isHeld()}, signal aborted with ${isLockError(reason) ? `${reason.code} (${reason.reason ?? ''})` : String(reason)}`);
      await within(takeover, WAIT_MS, 'another worker to take over and sell');
      timeline.log(worker.name, `wakes up and commits its prepared transaction (token ${lock.fencingToken})`);
    }
    if (!(await write.commit())) {
      refusedWrites += 1;
      timeline.log(worker.name, `REFUSED by etcd: the comparison failed (its key is gone), stock stays ${await stock.read()}`);
      return 'refused';
    }
    acceptedWrites += 1;
    timeline.log(worker.name, `order #${order}: token ${lock.fencingToken}, stock ${current} -> ${current - 1}, committed`);
    sales.emit('sold');
    return 'sold';
  }

  /** Takes orders off the shared queue until it is empty; `stallFirst` makes the first sale stall. */
  async function work(worker: Worker, stallFirst: boolean): Promise<void> {
    let stall = stallFirst;
    // Bounded by the number of orders.
    for (let order = orders.shift(); order !== undefined; order = orders.shift()) {
      // A refused transaction changed nothing: sell the same order again under a new lock.
      let outcome: Outcome = 'refused';
      for (let attempt = 1; attempt <= MAX_ATTEMPTS && outcome === 'refused'; attempt += 1) {
        const stalledNow = stall;
        outcome = await sellOne(worker, order, stall);
        stall = false;
        if (outcome === 'refused') {
          if (stalledNow) await worker.reconnect();
          timeline.log(worker.name, `order #${order}: tries again under a new lock${stalledNow ? ' (new connection)' : ''}`);
        }
      }
      if (outcome === 'refused') throw new Error(`order #${order} was refused ${MAX_ATTEMPTS} times`);
    }
  }

  try {
    await stock.add(initialStock);
    print(`Inventory: stock of ${sku} in etcd at "${stock.key}": ${initialStock}, ${orders.length} orders, 3 workers`);
    print(`Locks: etcd lock "${lockKey}", session lease ${SESSION_TTL_MS} ms; writes: one transaction guarded by the holder's key`);
    print('');
    const [first, ...others] = workers as [Worker, ...Worker[]];
    // worker-1 goes first and stalls holding the lock; the others start while it is stalled.
    const stalling = once(stalled, 'stalled');
    const firstDone = work(first, true);
    // Awaited below; this only keeps an early failure from being reported as unhandled meanwhile.
    firstDone.catch(() => undefined);
    await within(Promise.race([stalling, firstDone]), WAIT_MS, `${first.name} to take the lock`);
    await Promise.all([firstDone, ...others.map((worker) => work(worker, false))]);
    const finalStock = await stock.read();
    print('');
    print(`Final stock ${finalStock} (started with ${initialStock}); transactions committed ${acceptedWrites}, refused ${refusedWrites}.`);
    print(
      refusedWrites > 0
        ? 'The stalled worker believed it held the lock; its lease had expired and its key was gone, so its transaction ' +
            'could not commit. Without the comparison that write would have put a sold unit back into stock.'
        : 'No write was refused.',
    );
    return { sku, initialStock, finalStock, acceptedWrites, refusedWrites, timeline };
  } finally {
    await Promise.all(workers.map((worker) => worker.close()));
    if (options.cleanUp) await stock.remove();
    data.close();
  }
}
