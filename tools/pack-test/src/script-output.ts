/**
 * Reads the `name=value` words a consumer script prints (`token=17 held=true`) into one record.
 * A name printed twice keeps its last value.
 */
export function parseScriptOutput(stdout: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const word of stdout.split(/\s+/)) {
    const equals = word.indexOf('=');
    if (equals > 0) values[word.slice(0, equals)] = word.slice(equals + 1);
  }
  return values;
}
