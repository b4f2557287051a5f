import type pg from 'pg';

// The table name goes into SQL text (identifiers cannot be bound as parameters): allow plain names only.
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The protected data: an inventory table in PostgreSQL. It holds no token column of its own: the
 * fencing check lives in `guardedWrite`'s fence table, in the same transaction as every write.
 */
export class InventoryTable {
  readonly #pool: pg.Pool;
  readonly #table: string;

  /** @param table a plain lower-case SQL name, e.g. `inventory`. */
  constructor(pool: pg.Pool, table: string) {
    if (!TABLE_NAME.test(table)) throw new RangeError(`table must match ${TABLE_NAME}, got ${JSON.stringify(table)}`);
    this.#pool = pool;
    this.#table = `"${table}"`;
  }

  /** Creates the table if it does not exist yet. */
  async createIfMissing(): Promise<void> {
    await this.#pool.query(`CREATE TABLE IF NOT EXISTS ${this.#table} (sku text PRIMARY KEY, stock integer NOT NULL CHECK (stock >= 0))`);
  }

  /** Adds a product with `stock` units. */
  async addProduct(sku: string, stock: number): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#table} (sku, stock) VALUES ($1, $2)`, [sku, stock]);
  }

  /** Reads a product's stock (through `db`: the pool, or a guarded write's transaction). */
  async readStock(sku: string, db: pg.ClientBase | pg.Pool = this.#pool): Promise<number> {
    const result = await db.query<{ stock: number }>(`SELECT stock FROM ${this.#table} WHERE sku = $1`, [sku]);
    const row = result.rows[0];
    if (row === undefined) throw new Error(`no product ${JSON.stringify(sku)} in ${this.#table}`);
    return row.stock;
  }

  /** Writes a product's stock inside `tx`, the transaction of a guarded write. */
  async writeStock(tx: pg.ClientBase, sku: string, stock: number): Promise<void> {
    await tx.query(`UPDATE ${this.#table} SET stock = $2 WHERE sku = $1`, [sku, stock]);
  }

  /** Drops the table (the smoke test's clean-up). */
  async drop(): Promise<void> {
    await this.#pool.query(`DROP TABLE IF EXISTS ${this.#table}`);
  }
}
