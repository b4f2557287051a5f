/**
 * The bench commands' settings from the environment: every number is checked before anything runs,
 * so that a typo fails at once instead of after minutes of measuring.
 */

/** A positive number from `name` (`fallback` when unset), or a RangeError naming the variable. */
export function positiveSetting(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  return setting(name, fallback, false, env);
}

/** A number ≥ 0 from `name` (`fallback` when unset), or a RangeError naming the variable. */
export function nonNegativeSetting(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  return setting(name, fallback, true, env);
}

function setting(name: string, fallback: number, allowZero: boolean, env: NodeJS.ProcessEnv): number {
  const value = Number(env[name] ?? fallback);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !allowZero)) {
    throw new RangeError(`${name} must be a ${allowZero ? 'non-negative' : 'positive'} number`);
  }
  return value;
}

/** The comma-separated items of `name`, empty ones dropped (none when unset). */
export function listSetting(name: string, env: NodeJS.ProcessEnv = process.env): string[] {
  return (env[name] ?? '').split(',').filter((part) => part !== '');
}

/**
 * A filter from the comma-separated substrings in `name` (such as `BENCH_ONLY=redis/,memory/`): it
 * keeps an id that contains one of them, and every id when the variable is unset or empty.
 */
export function idFilter(name: string, env: NodeJS.ProcessEnv = process.env): { readonly all: boolean; matches(...ids: readonly string[]): boolean } {
  const parts = listSetting(name, env);
  return {
    all: parts.length === 0,
    matches: (...ids) => parts.length === 0 || parts.some((part) => ids.some((id) => id.includes(part))),
  };
}
