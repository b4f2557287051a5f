/** The SQLSTATE of a server error (`42P01`, …), or undefined for an error that carries none (a socket's, a timeout). */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

// `CREATE TABLE IF NOT EXISTS` is not atomic against itself: a session that does not see the other's
// uncommitted table goes on to insert the same catalog rows, and fails with whichever it meets
// first: the relation (42P07), the row type's name (42710) or the catalog's unique index (23505).
const CREATE_RACE = new Set(['42P07', '42710', '23505']);

/** True when `error` is another session having created the same table at the same time. */
export function isCreateRace(error: unknown): boolean {
  const code = sqlState(error);
  return code !== undefined && CREATE_RACE.has(code);
}

/** Runs one statement on a session, bounded (the caller's). */
export type RunStatement = <R extends Record<string, unknown>>(text: string, values: unknown[], what: string) => Promise<R[]>;

/** The statements that make tables exist: `exists` answers `present` for its `names`; `creates` make them. */
export interface TableCreation {
  readonly exists: string;
  readonly names: readonly string[];
  readonly creates: readonly string[];
  /** What the tables are, for errors ("the token tables"). */
  readonly what: string;
}

/**
 * Makes sure tables exist, creating what is missing; another session creating them at the same time
 * is not a failure. Throws if they are still missing afterwards (a name taken by another kind of
 * object, say), rather than leaving each later statement to fail on its own.
 */
export async function ensureTables(run: RunStatement, tables: TableCreation): Promise<void> {
  const present = async (): Promise<boolean> =>
    (await run<{ present: boolean }>(tables.exists, [...tables.names], `looking for ${tables.what}`))[0]?.present === true;
  if (await present()) return;
  let raced = false;
  for (const create of tables.creates) {
    try {
      await run(create, [], `creating ${tables.what}`);
    } catch (error) {
      if (!isCreateRace(error)) throw error;
      raced = true;
    }
  }
  if (raced && !(await present())) throw new Error(`${tables.what} (${tables.names.join(', ')}) are still missing after creating them`);
}
