import { LockTypeError } from '@fencelock/core/adapter';
import { GlideLockClient, type GlideInternals } from './glide-lock-client.js';
import { IoredisLockClient, type IoredisInternals } from './ioredis-lock-client.js';
import type { LockClient } from './lock-client.js';
import { NodeRedisClusterLockClient, NodeRedisLockClient, type NodeRedisClientInternals, type NodeRedisClusterInternals } from './node-redis-lock-client.js';
import { describeValue, type SupportedRedisClient } from './supported-client.js';

/** The clients {@link lockClientOf} accepts, in words (for error messages and docs). */
export const SUPPORTED_CLIENTS =
  'an ioredis 5 or 6 Redis or Cluster, an iovalkey Redis or Cluster, a node-redis 5 or 6 client (createClient or createCluster of redis / @redis/client), or a Valkey GLIDE 2 GlideClient or GlideClusterClient';

type Shape = Record<string, unknown>;

const functions = (value: Shape, names: readonly string[]): boolean => names.every((name) => typeof value[name] === 'function');

// By shape, never with `instanceof`: a client made by a second copy of its package (another version
// in the user's tree, or a fork such as iovalkey) is just as good.
function isIoredisFamily(value: Shape): boolean {
  return (
    typeof value.status === 'string' &&
    typeof value.isCluster === 'boolean' &&
    functions(value, ['eval', 'evalsha', 'call', 'sendCommand', 'duplicate', 'on', 'off', 'quit', 'disconnect'])
  );
}

function isNodeRedisCluster(value: Shape): boolean {
  return typeof value.isOpen === 'boolean' && Array.isArray(value.masters) && functions(value, ['sendCommand', 'nodeClient', 'duplicate', 'connect', 'subscribe', 'on', 'destroy']);
}

function isNodeRedisClient(value: Shape): boolean {
  return (
    typeof value.isOpen === 'boolean' &&
    typeof value.isReady === 'boolean' &&
    typeof value.isWatching === 'boolean' &&
    functions(value, ['sendCommand', 'duplicate', 'connect', 'subscribe', 'pSubscribe', 'on', 'destroy'])
  );
}

// GLIDE's own pair: a command by its words, and a script object (no other supported client has either).
function isGlide(value: Shape): boolean {
  return functions(value, ['customCommand', 'invokeScript', 'close']);
}

/** Whether `value` is a client of a supported family (see {@link lockClientOf}); anything else is not. */
export function isSupportedClient(value: unknown): value is SupportedRedisClient {
  if (typeof value !== 'object' || value === null) return false;
  const shape = value as Shape;
  return isIoredisFamily(shape) || isNodeRedisCluster(shape) || isNodeRedisClient(shape) || isGlide(shape);
}

/** Throws `LOCK_INVALID_ARGUMENT` (`LockTypeError`) naming `argument` and what was passed unless `value` is a supported client. */
export function assertSupportedClient(value: unknown, argument: string): asserts value is SupportedRedisClient {
  if (!isSupportedClient(value)) throw new LockTypeError(argument, `${argument} must be ${SUPPORTED_CLIENTS}; got ${describeValue(value)}`);
}

/**
 * The seam over a client the user handed in, by its family. Throws `LOCK_INVALID_ARGUMENT`
 * (`LockTypeError`) naming `argument` and what was passed for anything else — before any request.
 */
export function lockClientOf(value: unknown, argument: string): LockClient {
  assertSupportedClient(value, argument);
  const shape = value as unknown as Shape;
  if (isIoredisFamily(shape)) return new IoredisLockClient(value as unknown as IoredisInternals);
  if (isGlide(shape)) return new GlideLockClient(value as unknown as GlideInternals);
  if (isNodeRedisCluster(shape)) return new NodeRedisClusterLockClient(value as unknown as NodeRedisClusterInternals);
  return new NodeRedisLockClient(value as unknown as NodeRedisClientInternals);
}
