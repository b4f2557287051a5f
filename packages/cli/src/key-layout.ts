import type { KeyEncoding } from '@fencelock/etcd';
import type { ContenderNaming } from '@fencelock/zookeeper';
import type { BackendName, Env, Values } from './backend-config.js';
import { UsageError } from './usage-error.js';

/**
 * Where a backend keeps its locks: the settings that decide which backend keys a lock key becomes.
 * Two clients exclude each other only when they agree on them, so they are what makes `hold` share
 * locks with `etcdctl lock`, Curator, kazoo, redis-py or node-redlock. Each is an adapter option,
 * passed on as it is; a setting nobody gave is left to the adapter's default.
 */

/** `keyEncoding` of `@fencelock/etcd`: `escape` (its default) or `as-is` (etcdctl's and Go's names). */
export type EtcdKeyEncoding = KeyEncoding;
/** `naming` of `@fencelock/zookeeper`: `curator` (its default), `curator-read-write` or `kazoo`. */
export type ZooKeeperNaming = ContenderNaming;

/** The key layout settings of Redis and Redlock. */
export interface RedisKeyLayout {
  /** `keyPrefix`: the Redis key of a lock is `keyPrefix + key`. */
  readonly keyPrefix?: string;
}

/** The key layout settings of etcd. */
export interface EtcdKeyLayout {
  /** `keyPrefix`: prepended to every lock name. */
  readonly keyPrefix?: string;
  /** `keyEncoding`: how a key becomes a lock name. */
  readonly keyEncoding?: EtcdKeyEncoding;
}

/** The key layout settings of ZooKeeper. */
export interface ZooKeeperKeyLayout {
  /** `root`: locks live at `<root>/<encoded key>`. */
  readonly root?: string;
  /** `naming`: how our contender nodes are named. */
  readonly naming?: ZooKeeperNaming;
}

/** The key layout settings of PostgreSQL. */
export interface PostgresKeyLayout {
  /** `namespace`: hashed in front of every key to make its advisory lock id. */
  readonly namespace?: string;
}

/** A key layout setting's flag and environment variable. */
export interface LayoutSource {
  /** The flag, without dashes. */
  readonly flag: string;
  /** The environment variable read when the flag is not given. */
  readonly env: string;
}

/** The key layout flags and variables of each backend. */
export const LAYOUT_SOURCES = {
  redis: { keyPrefix: { flag: 'redis-key-prefix', env: 'FENCELOCK_REDIS_KEY_PREFIX' } },
  redlock: { keyPrefix: { flag: 'redlock-key-prefix', env: 'FENCELOCK_REDLOCK_KEY_PREFIX' } },
  etcd: {
    keyPrefix: { flag: 'etcd-key-prefix', env: 'FENCELOCK_ETCD_KEY_PREFIX' },
    keyEncoding: { flag: 'etcd-key-encoding', env: 'FENCELOCK_ETCD_KEY_ENCODING' },
  },
  zookeeper: {
    root: { flag: 'zk-root', env: 'FENCELOCK_ZK_ROOT' },
    naming: { flag: 'zk-naming', env: 'FENCELOCK_ZK_NAMING' },
  },
  postgres: { namespace: { flag: 'postgres-namespace', env: 'FENCELOCK_POSTGRES_NAMESPACE' } },
} as const satisfies Record<BackendName, Record<string, LayoutSource>>;

// Records, not arrays: the compiler then insists that every value the adapter accepts is listed,
// and nothing else, so the CLI cannot drift from the adapters' option types.
const ETCD_KEY_ENCODINGS: Readonly<Record<EtcdKeyEncoding, true>> = { escape: true, 'as-is': true };
const ZOOKEEPER_NAMINGS: Readonly<Record<ZooKeeperNaming, true>> = { curator: true, 'curator-read-write': true, kazoo: true };

/** The values `--etcd-key-encoding` takes, in the order help lists them. */
export const ETCD_KEY_ENCODING_NAMES = Object.keys(ETCD_KEY_ENCODINGS) as readonly EtcdKeyEncoding[];
/** The values `--zk-naming` takes, in the order help lists them. */
export const ZOOKEEPER_NAMING_NAMES = Object.keys(ZOOKEEPER_NAMINGS) as readonly ZooKeeperNaming[];

// Full Redis keys of this form hold fencelock's side keys (fence counters, metadata, waiters), and
// both Redis adapters refuse them (RESERVED_KEY_PATTERN of @fencelock/redis). A prefix of this form
// would make every key refused. Repeated here so that parsing flags does not load the adapter.
const RESERVED_REDIS_KEY = /^\{[0-9a-z]+\}fencelock:/;
// What ZooKeeper refuses in a path (PathUtils.validatePath), as @fencelock/zookeeper checks `root`.
const BAD_ZOOKEEPER_PATH_CHARS = /[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff]/u;

/** The key prefix of Redis or Redlock, from its flag or variable. @throws UsageError on a reserved prefix. */
export function redisKeyLayout(backend: 'redis' | 'redlock', values: Values, env: Env): RedisKeyLayout {
  const prefix = given(values, env, LAYOUT_SOURCES[backend].keyPrefix, { emptyCounts: true });
  if (prefix === undefined) return {};
  checkWellFormed(prefix);
  if (RESERVED_REDIS_KEY.test(prefix.raw)) {
    throw new UsageError(`${prefix.origin} ${JSON.stringify(prefix.raw)} is reserved: Redis keys starting {<tag>}fencelock: hold fencelock's fence counters and metadata`);
  }
  return { keyPrefix: prefix.raw };
}

/** The key prefix and key encoding of etcd, from their flags or variables. @throws UsageError on a bad encoding. */
export function etcdKeyLayout(values: Values, env: Env): EtcdKeyLayout {
  const { keyPrefix, keyEncoding } = LAYOUT_SOURCES.etcd;
  const prefix = given(values, env, keyPrefix, { emptyCounts: true });
  const encoding = given(values, env, keyEncoding, { emptyCounts: false });
  if (prefix !== undefined) checkWellFormed(prefix);
  return {
    ...(prefix === undefined ? {} : { keyPrefix: prefix.raw }),
    ...(encoding === undefined ? {} : { keyEncoding: oneOf(encoding, ETCD_KEY_ENCODING_NAMES) }),
  };
}

/** The root and contender naming of ZooKeeper, from their flags or variables. @throws UsageError on a bad value. */
export function zooKeeperKeyLayout(values: Values, env: Env): ZooKeeperKeyLayout {
  const root = given(values, env, LAYOUT_SOURCES.zookeeper.root, { emptyCounts: false });
  const naming = given(values, env, LAYOUT_SOURCES.zookeeper.naming, { emptyCounts: false });
  return {
    ...(root === undefined ? {} : { root: checkRoot(root) }),
    ...(naming === undefined ? {} : { naming: oneOf(naming, ZOOKEEPER_NAMING_NAMES) }),
  };
}

/** The namespace of PostgreSQL's lock ids, from its flag or variable (the empty namespace is a real value). */
export function postgresKeyLayout(values: Values, env: Env): PostgresKeyLayout {
  const namespace = given(values, env, LAYOUT_SOURCES.postgres.namespace, { emptyCounts: true });
  if (namespace === undefined) return {};
  checkWellFormed(namespace);
  return { namespace: namespace.raw };
}

/** A value and where it came from (`--flag` or the variable's name), for messages. */
interface Given {
  readonly raw: string;
  readonly origin: string;
}

/**
 * The flag's value, else the variable's. An empty variable is unset, as for the addresses, except
 * for key prefixes: there the empty prefix is a real value (the one etcdctl's names need).
 */
function given(values: Values, env: Env, source: LayoutSource, rules: { emptyCounts: boolean }): Given | undefined {
  const flagValue = values[source.flag];
  if (typeof flagValue === 'string') return { raw: flagValue, origin: `--${source.flag}` };
  const variable = env[source.env];
  if (variable === undefined || (!rules.emptyCounts && variable.trim() === '')) return undefined;
  return { raw: variable, origin: source.env };
}

function checkWellFormed(value: Given): void {
  if (!value.raw.isWellFormed()) throw new UsageError(`${value.origin} must be well-formed text`);
}

/** One of `names`, matched like `--backend`: surrounding spaces and case do not matter. */
function oneOf<Name extends string>(value: Given, names: readonly Name[]): Name {
  const found = names.find((name) => name === value.raw.trim().toLowerCase());
  if (found === undefined) throw new UsageError(`${value.origin} must be ${alternatives(names)}, got ${JSON.stringify(value.raw)}`);
  return found;
}

/** `a, b or c`. */
function alternatives(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1) ?? ''}`;
}

/** The rule @fencelock/zookeeper applies to `root`, said in terms of the flag. */
function checkRoot(value: Given): string {
  const root = value.raw;
  const segments = root.split('/').slice(1);
  if (
    !root.startsWith('/') ||
    root === '/' ||
    root.endsWith('/') ||
    segments.some((segment) => segment === '' || segment === '.' || segment === '..') ||
    BAD_ZOOKEEPER_PATH_CHARS.test(root)
  ) {
    throw new UsageError(
      `${value.origin} must be an absolute ZooKeeper path such as /fencelock: not "/", no trailing "/", no empty, "." or ".." parts, no control characters; got ${JSON.stringify(root)}`,
    );
  }
  if (segments[0] === 'zookeeper') throw new UsageError(`${value.origin} must not be inside /zookeeper, which ZooKeeper reserves`);
  return root;
}
