/**
 * The environment of a user's shell, rebuilt from ours: without what pnpm and turbo add for a
 * package script (`npm_package_*`, `npm_lifecycle_*`, pnpm's own `npm_config_*` settings) and
 * without `NODE_OPTIONS`, which could carry `--conditions=@fencelock/source` and make Node load
 * TypeScript sources instead of the published build. The user's npm settings (registry, proxy,
 * cache) stay.
 */
export function consumerEnv(source: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (!isScriptVariable(name)) env[name] = value;
  }
  return env;
}

// Set by the script runner, not by the user.
const PNPM_CONFIG_VARIABLES = new Set(['npm_config_user_agent', 'npm_config_verify_deps_before_run']);

function isScriptVariable(name: string): boolean {
  const lower = name.toLowerCase();
  if (lower === 'node_options' || lower === 'vitest' || lower.startsWith('vitest_')) return true;
  if (lower.startsWith('pnpm_') || PNPM_CONFIG_VARIABLES.has(lower)) return true;
  return lower.startsWith('npm_') && !lower.startsWith('npm_config_');
}
