/** The single network rule: only loopback. */
import { isIP } from 'node:net';

/** True for `localhost`, 127.0.0.0/8 and `::1` (with or without brackets). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (bare.toLowerCase() === 'localhost') return true;
  if (isIP(bare) === 4) return bare.split('.')[0] === '127';
  if (isIP(bare) === 6) return bare === '::1' || bare === '0:0:0:0:0:0:0:1';
  return false;
}

/** Throws a RangeError naming `what` when `host` is not a loopback address. */
export function assertLoopbackHost(host: string, what: string): void {
  if (!isLoopbackHost(host)) {
    throw new RangeError(
      `${what}: host ${JSON.stringify(host)} is not a loopback address; test-infra only talks to 127.0.0.1/localhost/::1`,
    );
  }
}
