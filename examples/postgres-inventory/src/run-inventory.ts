import { randomUUID } from 'node:crypto';
import { EventEmitter, once } from 'node:events';
import { isLockError, type LockHandle } from '@fencelock/core';
import { type PostgresLockProvider, createPostgresLockProvider, guardedWrite } from '@fencelock/postgres';
import pg from 'pg';
import { InventoryTable } from './inventory-table.js';
import { Timeline } from './timeline.js';
import { within } from './within.js';

/** Options of {@link runInventory}. */
export interface InventoryOptions {
  /** The PostgreSQL that holds the locks and the inventory, e.g. `postgres://postgres@127.0.0.1:15432/postgres`. */
  readonly postgresUrl: string;
  /** The table, created if missing. @default 'inventory' */
  readonly table?: string;
  /** Units on hand at the start. @default 10 */
  readonly initialStock?: number;
  /** Orders of one unit each, shared by three workers. @default 6 */
  readonly orders?: number;
  /** Where the timeline goes. @default console.log */
  readonly print?: (line: string) => void;
}

/** What the run found, for the smoke test and the exit code. */
export interface InventoryResult {
  readonly sku: string;
  readonly initialStock: number;
  /** Stock in the database at the end. */
  readonly finalStock: number;
  /** Writes the database accepted (one per unit sold). */
  readonly acceptedWrites: number;
  /** Writes the database refused because their fencing token was stale. */
  readonly refusedWrites: number;
  readonly timeline: Timeline;
}

/** The lock sessions' TTL, ms: how long the server keeps a silent worker's session (and its locks). */
const SESSION_TTL_MS = 3_000;
/** Bound of every wait: for the lock, for the stall to end, for the takeover. */
const WAIT_MS = 15_000;
/** A refused order is sold again under a new lock, a bounded number of times. */
const MAX_ATTEMPTS = 3;

type Outcome = 'sold' | 'refused' | 'sold-out';

interface Worker {
  readonly name: string;
  readonly locks: PostgresLockProvider;
}

/** Resolves when the lock is known lost: its signal aborts once its session is known ended. */
function lost(lock: LockHandle): Promise<void> {
  if (lock.signal.aborted) return Promise.resolve();
  return new Promise((resolve) => lock.signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * Three workers sell units of one product, each sale a read-modify-write of the stock row under a
 * PostgreSQL lock, the write made with `guardedWrite` (one transaction with the fencing check).
 * worker-1 stalls while holding the lock until the server has ended its session; worker-2 or
 * worker-3 takes over and sells; worker-1 then sends the write it had prepared, and its transaction
 * is refused (`LOCK_STALE_TOKEN`, nothing committed). worker-1 sells that order again under a new
 * lock, and the final stock is exactly the initial stock minus the orders.
 */
export async function runInventory(options: InventoryOptions): Promise<InventoryResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const initialStock = options.initialStock ?? 10;
  const orders = Array.from({ length: options.orders ?? 6 }, (_, index) => index + 1);
  const timeline = new Timeline(print);
  const pool = new pg.Pool({ connectionString: options.postgresUrl, max: 4 });
  const table = new InventoryTable(pool, options.table ?? 'inventory');
  const sku = `widget-${randomUUID().slice(0, 8)}`;
  const lockKey = `inventory:${options.table ?? 'inventory'}:${sku}`;
  // 'sold' after every accepted write: the stalled worker waits for a takeover, not for a time.
  const sales = new EventEmitter();
  const stalled = new EventEmitter();
  let acceptedWrites = 0;
  let refusedWrites = 0;

  const workers: Worker[] = ['worker-1', 'worker-2', 'worker-3'].map((name) => ({
    name,
    locks: createPostgresLockProvider({ connection: options.postgresUrl, sessionTtlMs: SESSION_TTL_MS }),
  }));

  /** Sells one unit for `order` while holding the product's lock. */
  async function sellOne(worker: Worker, order: number, stall: boolean): Promise<Outcome> {
    await using lock = await worker.locks.acquire(lockKey, { waitMs: WAIT_MS });
    // PostgreSQL gives per-key fencing tokens (a durable counter), so this is always set.
    const token = lock.fencingToken ?? 0n;
    const stock = await table.readStock(sku);
    if (stock < 1) {
      timeline.log(worker.name, `order #${order}: sold out`);
      return 'sold-out';
    }
    if (stall) {
      timeline.log(worker.name, `order #${order}: holds the lock with token ${token}, read stock ${stock}, will write ${stock - 1}`);
      timeline.log(worker.name, `STALLS while holding the lock (a GC pause): its session falls silent`);
      const takeover = once(sales, 'sold');
      stalled.emit('stalled');
      // What the server does to a session silent for longer than its idle_session_timeout (the
      // provider's sessionTtlMs), done at once so the run does not wait for it: end the session.
      await pool.query('SELECT pg_terminate_backend($1, 5000)', [worker.locks.backendPid]);
      await within(lost(lock), WAIT_MS, `${worker.name}'s lock to be lost`);
      const reason: unknown = lock.signal.reason;
      timeline.log(worker.name, `(still stalled) the server ended its session: isHeld() ${lock.isHeld()}, signal aborted with ${isLockError(reason) ? reason.code : String(reason)}`);
      await within(takeover, WAIT_MS, 'another worker to take over and sell');
      timeline.log(worker.name, `wakes up and sends its write: stock=${stock - 1} with token ${token}`);
    }
    try {
      // No `signal: lock.signal` for the stalled worker: a paused process has not heard of its loss
      // yet, and the fence alone must refuse it. The others pass it, as real code should.
      await guardedWrite(pool, { resource: lockKey, token, signal: stall ? undefined : lock.signal }, (tx) => table.writeStock(tx, sku, stock - 1));
    } catch (error) {
      if (!isLockError(error, 'LOCK_STALE_TOKEN')) throw error;
      refusedWrites += 1;
      timeline.log(worker.name, `REFUSED by PostgreSQL: ${error.message} (stock stays ${await table.readStock(sku)})`);
      return 'refused';
    }
    acceptedWrites += 1;
    timeline.log(worker.name, `order #${order}: token ${token}, stock ${stock} -> ${stock - 1}, accepted`);
    sales.emit('sold');
    return 'sold';
  }

  /** Takes orders off the shared queue until it is empty; `stallFirst` makes the first sale stall. */
  async function work(worker: Worker, stallFirst: boolean): Promise<void> {
    let stall = stallFirst;
    // Bounded by the number of orders.
    for (let order = orders.shift(); order !== undefined; order = orders.shift()) {
      // A refused write changed nothing: sell the same order again under a new lock.
      let outcome: Outcome = 'refused';
      for (let attempt = 1; attempt <= MAX_ATTEMPTS && outcome === 'refused'; attempt += 1) {
        outcome = await sellOne(worker, order, stall);
        stall = false;
        if (outcome === 'refused') timeline.log(worker.name, `order #${order}: tries again under a new lock`);
      }
      if (outcome === 'refused') throw new Error(`order #${order} was refused ${MAX_ATTEMPTS} times`);
    }
  }

  try {
    await table.createIfMissing();
    await table.addProduct(sku, initialStock);
    print(`Inventory: product ${sku} in table "${options.table ?? 'inventory'}", stock ${initialStock}, ${orders.length} orders, 3 workers`);
    print(`Locks: PostgreSQL advisory lock "${lockKey}", session TTL ${SESSION_TTL_MS} ms; writes: guardedWrite (fence checked in the write's transaction)`);
    print('');
    const [first, ...others] = workers as [Worker, ...Worker[]];
    // worker-1 goes first and stalls holding the lock; the others start while it is stalled.
    const stalling = once(stalled, 'stalled');
    const firstDone = work(first, true);
    // Awaited below; this only keeps an early failure from being reported as unhandled meanwhile.
    firstDone.catch(() => undefined);
    await within(Promise.race([stalling, firstDone]), WAIT_MS, `${first.name} to take the lock`);
    await Promise.all([firstDone, ...others.map((worker) => work(worker, false))]);
    const finalStock = await table.readStock(sku);
    print('');
    print(`Final stock ${finalStock} (started with ${initialStock}); writes accepted ${acceptedWrites}, refused ${refusedWrites}.`);
    print(
      refusedWrites > 0
        ? 'The stalled worker believed it held the lock; its token was older than the last accepted write, so its ' +
            'transaction was refused and rolled back. Without the fence that write would have put a sold unit back into stock.'
        : 'No write was refused.',
    );
    return { sku, initialStock, finalStock, acceptedWrites, refusedWrites, timeline };
  } finally {
    await Promise.all(workers.map((worker) => worker.locks.close()));
    await pool.end();
  }
}
