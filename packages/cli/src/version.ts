import { readFileSync } from 'node:fs';

/**
 * This package's version, read from its package.json. The sources (src/) and the builds (dist/)
 * both sit one level below the package root, so the same relative path works for both.
 */
export function cliVersion(): string {
  try {
    const text = readFileSync(new URL('../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}
