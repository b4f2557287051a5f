/**
 * What a lock key holds on each master. Without metadata it is the owner id alone (a random UUID),
 * the same shape as node-redlock's and redis-py's random token values. With metadata it is
 * `ownerId NUL metadata`: one string, so the owner-checked release and extend scripts
 * (`redlock-scripts.ts`, and `@fencelock/redis-shared`'s extend-many) compare it whole and metadata can never outlive or outrun its lock (no side key
 * to keep in step). The owner id is a UUID (no NUL), so the split at the first NUL is unambiguous.
 */

const SEPARATOR = '\u0000';

/** The value to store for `ownerId` with optional `metadata`. */
export function encodeLockValue(ownerId: string, metadata: string | undefined): string {
  return metadata === undefined ? ownerId : `${ownerId}${SEPARATOR}${metadata}`;
}

/** Splits a stored value; a foreign value (another library's token) is all owner id, no metadata. */
export function decodeLockValue(value: string): { ownerId: string; metadata: string | undefined } {
  const at = value.indexOf(SEPARATOR);
  if (at < 0) return { ownerId: value, metadata: undefined };
  return { ownerId: value.slice(0, at), metadata: value.slice(at + 1) };
}
