import { LockTypeError } from '@fencelock/core/adapter';

/**
 * Endpoint identity of a master, for duplicate detection. Two entries that reach the same server
 * would count twice toward the majority, so the check must see through spellings: `localhost`,
 * `127.0.0.1` and `[::1]` style variants, a missing port (6379), letter case, and the database number
 * (two databases of one server are one failure domain, so one master).
 */
export function normalizeEndpoint(host: string | undefined, port: number | string | undefined, path?: string): string {
  if (path !== undefined && path !== '') return `unix:${path}`;
  let name = (host ?? '127.0.0.1').trim().toLowerCase();
  if (name.startsWith('[') && name.endsWith(']')) name = name.slice(1, -1);
  // Loopback spellings are one host: they reach the same listening socket on this machine.
  if (name === 'localhost' || name === '::1' || name === '0:0:0:0:0:0:0:1' || name === '::ffff:127.0.0.1') {
    name = '127.0.0.1';
  }
  const portNumber = port === undefined || port === '' ? 6379 : Number(port);
  return name.includes(':') ? `[${name}]:${portNumber}` : `${name}:${portNumber}`;
}

/** The endpoint of a `redis://` / `rediss://` URL. */
export function endpointOfUrl(url: string, argument: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new LockTypeError(argument, `${argument} is not a valid URL: ${JSON.stringify(url.slice(0, 80))}`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new LockTypeError(argument, `${argument} must be a redis:// or rediss:// URL, got ${JSON.stringify(parsed.protocol)}`);
  }
  return normalizeEndpoint(parsed.hostname, parsed.port);
}
