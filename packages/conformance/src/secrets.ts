/**
 * For the "secrets never leak" checks of an adapter's security tests: everything a provider reported
 * (errors with their causes, event payloads) as one text, searched for known secrets.
 */

/** Every string reachable from `value`: an error's name, message and stack, its cause, and every own property, depth first, each object once. */
function reachableText(value: unknown, seen: WeakSet<object>): string {
  if (typeof value !== 'object' || value === null) return String(value);
  if (seen.has(value)) return '';
  seen.add(value);
  const own = value instanceof Error ? `${value.name} ${value.message} ${value.stack ?? ''} ${reachableText(value.cause, seen)}` : '';
  return `${own} ${Object.values(value).map((entry) => reachableText(entry, seen)).join(' ')}`;
}

/**
 * The secrets (passwords, lines of private keys) that appear anywhere in `reported`: empty when none
 * leaked. A test asserts `toEqual([])`, so a failure names what leaked only by its index in `secrets`.
 */
export function leakedSecrets(reported: readonly unknown[], secrets: readonly string[]): number[] {
  const seen = new WeakSet<object>();
  const text = reported.map((value) => reachableText(value, seen)).join('\n');
  return secrets.flatMap((secret, index) => (secret !== '' && text.includes(secret) ? [index] : []));
}
