import {
  DEFAULT_CLOCK_DRIFT_FACTOR,
  LockRangeError,
  LockTypeError,
  type LockProviderOptions,
  type RetryOptions,
  readAdapterOptions,
  validateDurationMs,
  validateRequestTimeoutMs,
  validateWaitMs,
} from '@fencelock/core/adapter';
import {
  assertSupportedClient,
  lockClientOf,
  resolveHandoff,
  type GlideStandaloneClient,
  type HandoffPolicy,
  type IoredisFamilyClient,
  type LockClient,
  type NodeRedisFamilyClient,
  type RedisConnectionOptions,
} from '@fencelock/redis-shared';
import { endpointOfUrl, normalizeEndpoint } from './endpoints.js';

/**
 * One master: a standalone client you created — ioredis 5 or 6, iovalkey, node-redis 5 or 6
 * (`createClient()` of `redis` / `@redis/client`) or a Valkey GLIDE 2 `GlideClient`, RESP2 or
 * RESP3; the provider uses it, connects it
 * if nobody did, and never closes it — or a `redis://host:port` URL / ioredis options object (the
 * provider creates an ioredis client, which must then be installed, owns it and closes it in
 * `close()`). Each master must be an independent server — not a replica, not a Cluster, not another
 * database of the same server.
 */
export type RedlockMaster = IoredisFamilyClient | NodeRedisFamilyClient | GlideStandaloneClient | string | RedlockMasterOptions;

/**
 * ioredis options for a master the provider opens, handed to ioredis as they are: `host`, `port`,
 * `path`, `username`, `password`, `tls` and the others of `KnownRedisConnectionOptions` are
 * type-checked, any other ioredis option passes through; a value of ioredis' own `RedisOptions`
 * type fits. Never a client object: one that is not a supported standalone client (a cluster client,
 * another library's) must not pass for options.
 */
export type RedlockMasterOptions = RedisConnectionOptions & { readonly sendCommand?: never; readonly on?: never; readonly customCommand?: never };

/** Options of {@link createRedlockLockProvider}. */
export interface RedlockLockProviderOptions extends LockProviderOptions {
  /**
   * The independent Redis masters: at least 3 and an odd number (3, 5, 7…), no endpoint twice.
   * They need not be reachable when the provider is made.
   */
  readonly masters: readonly RedlockMaster[];
  /** Prepended to every lock key (the Redis key is `keyPrefix + key`). @default '' (node-redlock's layout: the key is the resource name) */
  readonly keyPrefix?: string;
  /**
   * The clock drift allowed between this process and the masters, as a share of the TTL (core's one
   * drift rule): a lock is valid until `start + ttl − (⌈ttl × clockDriftFactor⌉ + 2 ms)`, counted from
   * the send time of the round a majority granted. From 0 to 0.5. (Formerly `driftFactor`, now
   * refused with a message naming this option.) @default 0.01
   */
  readonly clockDriftFactor?: number;
  /**
   * A fixed per-master timeout for every request, in ms; at most a third of `defaultTtlMs` (a larger
   * value is refused). Without it the timeout is proportional to each lock's TTL:
   * `ttl × requestTimeoutFactor`, kept within [50, 500] ms (50 ms for a 10 s TTL, 150 ms for 30 s),
   * as the Redlock description advises (a per-node timeout far below the TTL). (Formerly
   * `nodeTimeoutMs`, now refused with a message naming this option.)
   */
  readonly requestTimeoutMs?: number;
  /**
   * The per-master timeout as a share of the TTL, when `requestTimeoutMs` is not set. Above 0, at
   * most 1/3. (Formerly `nodeTimeoutFactor`.) @default 0.005
   */
  readonly requestTimeoutFactor?: number;
  /**
   * Backoff between acquire rounds, with jitter (a uniform draw in [cap/2, cap]).
   * @default { initialDelayMs: 10, maxDelayMs: 500, factor: 2 }
   */
  readonly retry?: Partial<RetryOptions>;
  /**
   * How long acquire keeps trying while a majority of masters is not connected (refused, closed),
   * in ms, before it fails with `LOCK_QUORUM_NOT_REACHED` — enough for clients to reconnect after a
   * blip, far less than a typical wait. Bounded by the acquire's own wait; `tryAcquire` fails at once.
   * `0` fails on the first such round. @default 1000
   */
  readonly unreachableGraceMs?: number;
  /**
   * ioredis options for the clients the provider creates (not for clients you pass in), handed to
   * ioredis as they are (see {@link RedlockMasterOptions}).
   */
  readonly redisOptions?: RedisConnectionOptions;
  /**
   * Who gets a released lock while clients wait for it: `'waiters-first'` reserves it on every
   * master for a moment for the clients already waiting (a client that was not in line is turned
   * away once), so nobody is starved; `'barging'` lets this provider's waiting attempts take a free
   * key at once, as node-redlock and redis-semaphore do — more acquisitions per second under
   * contention, and a client may wait until its `waitMs` runs out. See the README's "Hand-off" section.
   * @default 'waiters-first'
   */
  readonly handoff?: HandoffPolicy;
}

/** The checked options; `masters` resolved to endpoints. */
export interface ResolvedRedlockOptions {
  readonly masters: readonly { readonly endpoint: string; readonly source: RedlockMaster; readonly client: LockClient | undefined }[];
  readonly keyPrefix: string;
  readonly clockDriftFactor: number;
  readonly requestTimeoutMs: number | undefined;
  readonly requestTimeoutFactor: number;
  readonly retry: Partial<RetryOptions> | undefined;
  readonly unreachableGraceMs: number;
  readonly redisOptions: RedisConnectionOptions | undefined;
  readonly handoff: HandoffPolicy;
}

/** Per-master timeout bounds when it is derived from the TTL, in ms. */
export const REQUEST_TIMEOUT_FLOOR_MS = 50;
export const REQUEST_TIMEOUT_CEILING_MS = 500;
/** The smallest TTL the provider accepts, in ms: below it the drift margin and one round leave nothing. */
export const REDLOCK_MIN_TTL_MS = 10;

const DEFAULT_REQUEST_TIMEOUT_FACTOR = 0.005;
const DEFAULT_UNREACHABLE_GRACE_MS = 1_000;
// core's default TTL (LockProviderOptions.defaultTtlMs), which a fixed request timeout must fit.
const CORE_DEFAULT_TTL_MS = 30_000;
const KNOWN_OPTIONS: readonly (keyof RedlockLockProviderOptions & string)[] = [
  'masters', 'keyPrefix', 'clockDriftFactor', 'requestTimeoutMs', 'requestTimeoutFactor', 'retry', 'unreachableGraceMs',
  'redisOptions', 'handoff', 'defaultTtlMs', 'defaultWaitMs',
];
// Options that are gone, with what to use instead. A count of extensions bounded holds by the TTL
// they happened to use (1,000 extensions of a 30 s lock end it after a few hours); holds are
// bounded in time only. The others were renamed to the names every fencelock adapter uses.
const REMOVED_OPTIONS: ReadonlyMap<string, string> = new Map([
  ['maxExtensions', "bound a hold in time with the acquire option maxHoldMs (core's), not in extensions"],
  ['driftFactor', 'it was renamed clockDriftFactor'],
  ['nodeTimeoutMs', 'it was renamed requestTimeoutMs'],
  ['nodeTimeoutFactor', 'it was renamed requestTimeoutFactor'],
]);

/** The per-master timeout for a request about a lock of `ttlMs`. */
export function requestTimeoutFor(options: Pick<ResolvedRedlockOptions, 'requestTimeoutMs' | 'requestTimeoutFactor'>, ttlMs: number): number {
  if (options.requestTimeoutMs !== undefined) return options.requestTimeoutMs;
  return Math.min(REQUEST_TIMEOUT_CEILING_MS, Math.max(REQUEST_TIMEOUT_FLOOR_MS, Math.ceil(ttlMs * options.requestTimeoutFactor)));
}

/**
 * The per-master timeout of an extension round of a lock of `ttlMs`: the request timeout, but at
 * least a tenth of the TTL (core retries a failed renewal a tenth of the TTL later). An extension
 * counts from its send time and is worth having whenever it lands within the current validity, so
 * the acquire-sized timeout (tens of ms) would only turn a reply delayed by a busy client — ten
 * thousand locks renewed at once, a loaded machine — into a failed round and a retry.
 */
export function extendTimeoutFor(options: Pick<ResolvedRedlockOptions, 'requestTimeoutMs' | 'requestTimeoutFactor'>, ttlMs: number): number {
  return Math.max(requestTimeoutFor(options, ttlMs), Math.ceil(ttlMs / 10));
}

// Something with methods is a client (and must be a supported one); a plain object is ioredis options.
function looksLikeClient(value: object): boolean {
  const candidate = value as Record<string, unknown>;
  return ['on', 'sendCommand', 'connect', 'duplicate', 'customCommand'].some((name) => typeof candidate[name] === 'function');
}

function fraction(value: unknown, argument: string, fallback: number, maximum: number, allowZero: boolean): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new LockTypeError(argument, `${argument} must be a number, got ${typeof value}`);
  if (!Number.isFinite(value) || value > maximum || value < 0 || (!allowZero && value === 0)) {
    throw new LockRangeError(argument, `${argument} must be ${allowZero ? 'from 0' : 'above 0'} to ${maximum === 1 / 3 ? '1/3' : maximum}, got ${String(value)}`);
  }
  return value;
}

function resolveMaster(master: unknown, index: number): { endpoint: string; source: RedlockMaster; client: LockClient | undefined } {
  const argument = `masters[${index}]`;
  if (typeof master === 'string') return { endpoint: endpointOfUrl(master, argument), source: master, client: undefined };
  if (typeof master === 'object' && master !== null && looksLikeClient(master)) {
    assertSupportedClient(master, argument);
    const client = lockClientOf(master, argument);
    if (client.isCluster) {
      throw new LockTypeError(argument, `${argument} is a Redis Cluster client; Redlock needs independent masters (one client each)`);
    }
    const { host, port, path } = client.endpoint ?? {};
    return { endpoint: normalizeEndpoint(host, port, path), source: master as RedlockMaster, client };
  }
  if (typeof master === 'object' && master !== null && !Array.isArray(master)) {
    const { host, port, path } = master as RedisConnectionOptions;
    return { endpoint: normalizeEndpoint(host, port, path ?? undefined), source: master as RedlockMasterOptions, client: undefined };
  }
  throw new LockTypeError(argument, `${argument} must be a Redis client (ioredis, iovalkey, node-redis, Valkey GLIDE), a redis:// URL or ioredis options`);
}

/**
 * Checks every option before anything is connected. Throws `LockTypeError` / `LockRangeError`
 * (code `LOCK_INVALID_ARGUMENT`). A reachable majority is not required.
 */
export function resolveRedlockOptions(options: RedlockLockProviderOptions): ResolvedRedlockOptions {
  if (typeof options !== 'object' || options === null) {
    throw new LockTypeError('options', 'options must be an object with a masters array');
  }
  for (const [name, instead] of REMOVED_OPTIONS) {
    if (Object.hasOwn(options, name)) throw new LockTypeError(`options.${name}`, `unknown option "${name}": ${instead}`);
  }
  readAdapterOptions(options, KNOWN_OPTIONS);
  if (!Array.isArray(options.masters)) throw new LockTypeError('options.masters', 'options.masters must be an array');
  const count = options.masters.length;
  // Even N buys nothing: 4 masters tolerate one failure, like 3, and split votes 2–2 need a retry.
  if (count < 3 || count % 2 === 0) {
    throw new LockRangeError('options.masters', `Redlock needs an odd number of at least 3 masters, got ${count}`);
  }
  const masters = options.masters.map((m, i) => resolveMaster(m, i));
  const seen = new Map<string, number>();
  masters.forEach((m, i) => {
    const first = seen.get(m.endpoint);
    if (first !== undefined) {
      throw new LockRangeError('options.masters', `masters[${first}] and masters[${i}] are the same server (${m.endpoint}); it would count twice toward the majority`);
    }
    seen.set(m.endpoint, i);
  });
  const clients = masters.flatMap((m) => (m.client === undefined ? [] : [m.source]));
  if (new Set(clients).size !== clients.length) throw new LockRangeError('options.masters', 'the same client is given twice');

  const keyPrefix = options.keyPrefix ?? '';
  if (typeof keyPrefix !== 'string') throw new LockTypeError('options.keyPrefix', 'options.keyPrefix must be a string');
  if (!keyPrefix.isWellFormed()) throw new LockRangeError('options.keyPrefix', 'options.keyPrefix must be well-formed Unicode');
  // Core checks defaultTtlMs again (and its minimum); here it is the TTL a fixed request timeout must fit.
  const defaultTtlMs = options.defaultTtlMs === undefined ? CORE_DEFAULT_TTL_MS : validateDurationMs(options.defaultTtlMs, 'defaultTtlMs', REDLOCK_MIN_TTL_MS);
  const requestTimeoutMs =
    options.requestTimeoutMs === undefined ? undefined : validateRequestTimeoutMs(options.requestTimeoutMs, defaultTtlMs, 'defaultTtlMs');
  const retry = options.retry;
  if (retry !== undefined) {
    if (typeof retry !== 'object' || retry === null) throw new LockTypeError('options.retry', 'options.retry must be an object');
    for (const name of ['initialDelayMs', 'maxDelayMs'] as const) {
      if (retry[name] !== undefined) validateDurationMs(retry[name], `options.retry.${name}`);
    }
    if (retry.factor !== undefined) {
      if (typeof retry.factor !== 'number') throw new LockTypeError('options.retry.factor', 'options.retry.factor must be a number');
      if (!Number.isFinite(retry.factor) || retry.factor < 1 || retry.factor > 16) {
        throw new LockRangeError('options.retry.factor', `options.retry.factor must be from 1 to 16, got ${retry.factor}`);
      }
    }
  }
  if (options.redisOptions !== undefined && (typeof options.redisOptions !== 'object' || options.redisOptions === null)) {
    throw new LockTypeError('options.redisOptions', 'options.redisOptions must be an object');
  }
  // Core checks this too; checking it here first means no client is created for options it would refuse.
  if (options.defaultWaitMs !== undefined) validateWaitMs(options.defaultWaitMs, 'defaultWaitMs');
  return {
    masters,
    keyPrefix,
    clockDriftFactor: fraction(options.clockDriftFactor, 'options.clockDriftFactor', DEFAULT_CLOCK_DRIFT_FACTOR, 0.5, true),
    requestTimeoutMs,
    // At most a third, as a fixed requestTimeoutMs: a renewal's reply must come before the lock runs out.
    requestTimeoutFactor: fraction(options.requestTimeoutFactor, 'options.requestTimeoutFactor', DEFAULT_REQUEST_TIMEOUT_FACTOR, 1 / 3, false),
    retry,
    unreachableGraceMs:
      options.unreachableGraceMs === undefined || options.unreachableGraceMs === 0
        ? (options.unreachableGraceMs ?? DEFAULT_UNREACHABLE_GRACE_MS)
        : validateDurationMs(options.unreachableGraceMs, 'options.unreachableGraceMs'),
    redisOptions: options.redisOptions,
    handoff: resolveHandoff(options.handoff),
  };
}
