import type pg from 'pg';

/** One row of the inventory. */
export interface StockRow {
  /** Units on hand. */
  readonly stock: number;
  /** The fencing token of the last write that was accepted (0 before the first). */
  readonly fenceToken: bigint;
}

// The table name goes into SQL text (identifiers cannot be bound as parameters): allow plain names only.
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * The protected resource: an inventory table in PostgreSQL whose rows remember the fencing token of
 * the last accepted write, and accept a new write only with a newer token.
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
    await this.#pool.query(
      `CREATE TABLE IF NOT EXISTS ${this.#table} (
         sku text PRIMARY KEY,
         stock integer NOT NULL CHECK (stock >= 0),
         fence_token bigint NOT NULL DEFAULT 0
       )`,
    );
  }

  /** Adds a product with `stock` units and no write seen yet (fence_token 0). */
  async addProduct(sku: string, stock: number): Promise<void> {
    await this.#pool.query(`INSERT INTO ${this.#table} (sku, stock) VALUES ($1, $2)`, [sku, stock]);
  }

  /** Reads a product's row. */
  async read(sku: string): Promise<StockRow> {
    const result = await this.#pool.query<{ stock: number; fence_token: string }>(
      `SELECT stock, fence_token FROM ${this.#table} WHERE sku = $1`,
      [sku],
    );
    const row = result.rows[0];
    if (row === undefined) throw new Error(`no product ${JSON.stringify(sku)} in ${this.#table}`);
    // pg returns bigint columns as strings: a JS number would lose precision above 2^53.
    return { stock: row.stock, fenceToken: BigInt(row.fence_token) };
  }

  /**
   * Writes the new stock level only if `token` is newer than the token of every write accepted so
   * far, and records it. Resolves false when the row refused the write (0 rows updated): a lock
   * holder with an older token — one that lost its lock — is writing late.
   *
   * The comparison is strict (`<`): each acquisition gets one write, so a stale holder can neither
   * overwrite a newer holder's write nor apply its own decrement twice.
   */
  async writeStock(sku: string, stock: number, token: bigint): Promise<boolean> {
    const result = await this.#pool.query(
      `UPDATE ${this.#table} SET stock = $2, fence_token = $3 WHERE sku = $1 AND fence_token < $3`,
      [sku, stock, token.toString()],
    );
    return result.rowCount === 1;
  }

  /** Drops the table (the smoke test's clean-up). */
  async drop(): Promise<void> {
    await this.#pool.query(`DROP TABLE IF EXISTS ${this.#table}`);
  }
}
