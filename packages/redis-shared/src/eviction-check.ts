import type { BackendWarning } from '@fencelock/core/adapter';

/** The code of the warning {@link evictionPolicyWarning} gives. */
export const EVICTION_POLICY_WARNING = 'redis-eviction-policy';

/** Sends one command to one server and resolves its reply. */
export type ServerCommand = (args: readonly string[]) => Promise<unknown>;

/**
 * Reads `maxmemory-policy` from one server and resolves a warning unless it is `noeviction`: lock keys
 * carry a TTL, so a `volatile-*` policy evicts exactly them under memory pressure, and an `allkeys-*`
 * policy may evict them or the fence counters. Resolves `undefined` when the policy is safe or the
 * server will not tell (`CONFIG` renamed, disabled or not permitted, as on managed servers); rejects
 * when the server cannot be reached.
 */
export async function evictionPolicyWarning(send: ServerCommand, server: string): Promise<BackendWarning | undefined> {
  let reply: unknown;
  try {
    reply = await send(['CONFIG', 'GET', 'maxmemory-policy']);
  } catch (error) {
    if (isServerRefusal(error)) return undefined;
    throw error;
  }
  const policy = policyOf(reply);
  if (policy === undefined || policy === 'noeviction') return undefined;
  return {
    code: EVICTION_POLICY_WARNING,
    message:
      `Redis ${server} runs maxmemory-policy "${policy}": under memory pressure it may evict a held lock's key ` +
      `(or its fence counter), and another client is then granted the lock while its holder still believes it ` +
      `holds it. Only "noeviction" keeps locks safe.`,
  };
}

// RESP2 answers [name, value]; RESP3 a map (a Map or a plain object, depending on the client).
function policyOf(reply: unknown): string | undefined {
  let value: unknown;
  if (Array.isArray(reply)) value = reply[1];
  else if (reply instanceof Map) value = reply.get('maxmemory-policy');
  else if (typeof reply === 'object' && reply !== null) value = (reply as Record<string, unknown>)['maxmemory-policy'];
  if (value instanceof Uint8Array) return Buffer.from(value).toString('utf8');
  return typeof value === 'string' ? value : undefined;
}

// An error reply from the server (the command exists but is refused, or is unknown) rather than a
// failure to reach it: ioredis' ReplyError, node-redis' ErrorReply, Valkey GLIDE's RequestError
// (whose subclasses name the failures to reach the server: ConnectionError, TimeoutError).
const REFUSALS = new Set(['ReplyError', 'ErrorReply', 'RequestError']);
function isServerRefusal(error: unknown): boolean {
  return error instanceof Error && REFUSALS.has(error.name);
}

/**
 * One warning for several servers (a cluster's masters, Redlock's masters): the first server's
 * message and how many more share the risk; none when no server warned.
 */
export function mergeEvictionWarnings(found: readonly (BackendWarning | undefined)[]): BackendWarning[] {
  const warnings = found.filter((warning) => warning !== undefined);
  const [first] = warnings;
  if (first === undefined) return [];
  if (warnings.length === 1) return [first];
  return [{ ...first, message: `${first.message} (${warnings.length - 1} more server(s) too)` }];
}
