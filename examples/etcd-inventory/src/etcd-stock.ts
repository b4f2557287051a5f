import type { LockHandle } from '@fencelock/core';
import type { EtcdLockProvider } from '@fencelock/etcd';
import type { Etcd3 } from 'etcd3';

/** A write prepared while the lock was held; `commit()` sends it and resolves whether etcd applied it. */
export interface GuardedWrite {
  /** The comparison the transaction makes, for the timeline. */
  readonly guard: string;
  commit(): Promise<boolean>;
}

/**
 * The protected resource: a product's stock level, kept in etcd itself at `inventory/<sku>/stock`.
 * Writes go through one etcd transaction that compares on the lock holder's own key, so only the
 * current holder's write can commit.
 */
export class EtcdStock {
  /** The etcd key holding the stock level (a decimal string). */
  readonly key: string;
  readonly #client: Etcd3;

  constructor(client: Etcd3, sku: string) {
    this.#client = client;
    this.key = `inventory/${sku}/stock`;
  }

  /** Puts the initial stock level. */
  async add(stock: number): Promise<void> {
    await this.#client.put(this.key).value(String(stock));
  }

  /** Reads the stock level. */
  async read(): Promise<number> {
    const value = await this.#client.get(this.key).string();
    if (value === null) throw new Error(`no stock at ${this.key}`);
    return Number(value);
  }

  /**
   * Prepares `PUT <key> = stock` in one transaction guarded by `locks.ifOwner(lock)`: it commits only
   * if the holder's key still exists with the create revision it had when the lock was granted
   * (etcd's `CreateRevision(holderKey) == token`). Once the holder's lease has expired its key is
   * gone, so its late write cannot commit, whenever it arrives. Must be called while the lock is held.
   */
  prepareWrite(locks: EtcdLockProvider, lock: LockHandle, stock: number): GuardedWrite {
    const { etcdKey, createRevision } = locks.ownership(lock);
    const transaction = locks.ifOwner(lock, this.#client).then(this.#client.put(this.key).value(String(stock)));
    return {
      guard: `IF CreateRevision(${etcdKey}) == ${createRevision} THEN PUT ${this.key} = ${stock}`,
      commit: async () => (await transaction.commit()).succeeded,
    };
  }

  /** Deletes the stock key (the smoke test's clean-up). */
  async remove(): Promise<void> {
    await this.#client.delete().key(this.key);
  }
}
