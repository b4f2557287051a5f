import { ETCD_KEY_ENCODING_NAMES, LAYOUT_SOURCES, ZOOKEEPER_NAMING_NAMES, type LayoutSource } from './key-layout.js';

/** The commands `fencelock` runs. */
export type CommandName = 'hold' | 'elect' | 'inspect';

/** Every command, in the order help lists them. */
export const COMMAND_NAMES: readonly CommandName[] = ['hold', 'elect', 'inspect'];

/** One command-line flag: how `parseArgs` reads it and how `--help` shows it. */
export interface OptionSpec {
  /** The long name, without dashes: `wait` for `--wait`. */
  readonly name: string;
  /** `string` takes a value; `boolean` is a switch. */
  readonly type: 'string' | 'boolean';
  /** A one-letter alias, e.g. `w` for `-w`. */
  readonly short?: string;
  /** How help shows the value, e.g. `<duration>`. */
  readonly valueName?: string;
  /** One line for `--help`. */
  readonly description: string;
  /** The environment variable read when the flag is not given. */
  readonly env?: string;
}

/** A key layout flag: its name and variable come from the one table the parser reads too. */
function layoutOption(source: LayoutSource, valueName: string, description: string): OptionSpec {
  return { name: source.flag, type: 'string', valueName, env: source.env, description };
}

/** Flags every command takes: the backend, its addresses, where it keeps its locks, and output control. */
export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { name: 'backend', type: 'string', short: 'b', valueName: '<name>', env: 'FENCELOCK_BACKEND', description: 'redis, redlock, etcd, zookeeper or postgres (default: redis)' },
  { name: 'redis-url', type: 'string', valueName: '<url>', env: 'FENCELOCK_REDIS_URL', description: 'the Redis server (default: redis://127.0.0.1:6379)' },
  { name: 'redlock-urls', type: 'string', valueName: '<url,url,…>', env: 'FENCELOCK_REDLOCK_URLS', description: 'the independent Redlock masters, 3 or more, an odd number (default: redis://127.0.0.1:7001 … 7005)' },
  { name: 'etcd-endpoints', type: 'string', valueName: '<url,url,…>', env: 'FENCELOCK_ETCD_ENDPOINTS', description: 'the etcd cluster (default: http://127.0.0.1:2379)' },
  { name: 'zk-hosts', type: 'string', valueName: '<host:port,…[/chroot]>', env: 'FENCELOCK_ZK_HOSTS', description: 'the ZooKeeper connection string (default: 127.0.0.1:2181)' },
  { name: 'postgres-url', type: 'string', valueName: '<url>', env: 'FENCELOCK_POSTGRES_URL', description: 'the PostgreSQL database, connected directly or through a session-mode pooler (default: postgres://127.0.0.1:5432/postgres)' },
  layoutOption(LAYOUT_SOURCES.redis.keyPrefix, '<prefix>', 'the Redis key of a lock is <prefix><key>; keep it empty to share locks with redis-py\'s Lock and node-redlock (default: "")'),
  layoutOption(LAYOUT_SOURCES.redlock.keyPrefix, '<prefix>', 'the key of a lock on every master is <prefix><key>; keep it empty to share locks with node-redlock (default: "")'),
  layoutOption(LAYOUT_SOURCES.etcd.keyPrefix, '<prefix>', 'prepended to every lock name; "" with --etcd-key-encoding as-is names locks as etcdctl lock does (default: fencelock/)'),
  layoutOption(LAYOUT_SOURCES.etcd.keyEncoding, `<${ETCD_KEY_ENCODING_NAMES.join('|')}>`, 'escape: %, / and control characters in the key become %XX; as-is: the key unchanged, as etcdctl lock and Go\'s concurrency.Mutex use it (default: escape)'),
  layoutOption(LAYOUT_SOURCES.zookeeper.root, '<path>', 'locks live at <path>/<encoded key>, inside the chroot if --zk-hosts has one (default: /fencelock)'),
  layoutOption(LAYOUT_SOURCES.zookeeper.naming, `<${ZOOKEEPER_NAMING_NAMES.join('|')}>`, 'how our lock nodes are named, so that peers see them: curator (Curator\'s InterProcessMutex; kazoo\'s Lock with extra_lock_patterns), curator-read-write (InterProcessReadWriteLock), kazoo (kazoo\'s Lock, ReadLock, WriteLock) (default: curator)'),
  layoutOption(LAYOUT_SOURCES.postgres.namespace, '<text>', 'hashed in front of every key to make its advisory lock id; keep it equal across programs that share locks (default: fencelock:)'),
  { name: 'user', type: 'string', valueName: '<name>', env: 'FENCELOCK_USER', description: 'the user to authenticate as (Redis ACL user, etcd user, PostgreSQL role, ZooKeeper digest user); needs a password from --password-file or FENCELOCK_PASSWORD' },
  { name: 'password-file', type: 'string', valueName: '<path>', env: 'FENCELOCK_PASSWORD_FILE', description: 'a file holding the password (one trailing newline is ignored); there is no --password flag: a command line is visible to every user' },
  { name: 'tls-ca', type: 'string', valueName: '<path>', env: 'FENCELOCK_TLS_CA', description: 'the PEM CA certificate that signed the server\'s certificate (addresses must be rediss:// or https://; not zookeeper)' },
  { name: 'tls-cert', type: 'string', valueName: '<path>', env: 'FENCELOCK_TLS_CERT', description: 'the PEM client certificate (with --tls-key and --tls-ca)' },
  { name: 'tls-key', type: 'string', valueName: '<path>', env: 'FENCELOCK_TLS_KEY', description: 'the PEM private key of the client certificate' },
  { name: 'verbose', type: 'boolean', short: 'v', description: 'say what happens on stderr (waiting, acquired, token, released)' },
  { name: 'debug', type: 'boolean', description: 'print stack traces and causes of errors' },
  { name: 'help', type: 'boolean', short: 'h', description: 'show help (also: fencelock help <command>)' },
  { name: 'version', type: 'boolean', description: 'print the version' },
];

/** Flags of `fencelock hold`. */
export const HOLD_OPTIONS: readonly OptionSpec[] = [
  { name: 'wait', type: 'string', short: 'w', valueName: '<duration>', description: 'how long to wait for the lock: 10s, 500ms, 2m, 0 (try once) or forever (default: 30s)' },
  { name: 'no-wait', type: 'boolean', short: 'n', description: 'fail at once if the lock is held (same as --wait 0)' },
  { name: 'ttl', type: 'string', short: 't', valueName: '<duration>', description: 'how long the lock outlives fencelock if it dies or hangs; the session timeout on etcd, zookeeper and postgres (default: the backend\'s, 30s; etcd and postgres 10s)' },
  { name: 'kill-grace', type: 'string', valueName: '<duration>', description: 'after SIGTERM on lock loss, wait this long before SIGKILL (default: 2s)' },
  { name: 'max-hold', type: 'string', valueName: '<duration>', description: 'release the lock and stop the command after this long (default: no limit)' },
  { name: 'shared', type: 'boolean', short: 's', description: 'take a shared (read) lock; etcd, zookeeper and postgres only' },
  { name: 'permits', type: 'string', short: 'p', valueName: '<n>', description: 'hold a permit of the counting semaphore <key> of n permits instead of the lock: up to n holds run at once (every holder must give the same n); needs a backend with semaphores' },
  { name: 'take', type: 'string', valueName: '<k>', description: 'with --permits: take k of the n permits at once, all or none (default: 1); k above 1 needs a backend with multi-permit semaphores' },
  { name: 'metadata', type: 'string', short: 'm', valueName: '<text>', description: 'stored with the lock, shown by inspect (default: host, pid and program name)' },
  { name: 'conflict-exit-code', type: 'string', short: 'E', valueName: '<n>', description: 'exit status when the lock is not acquired (default: 75)' },
  { name: 'foreground', type: 'boolean', description: 'keep the command in fencelock\'s process group, so it can use the terminal; signals then reach only the command itself, not its children' },
];

/**
 * Flags of `fencelock elect`: hold's that make sense for a leadership (no `--shared`, `--permits`,
 * `--metadata`: a leader stands with its `--value`), with a wait that is unbounded by default.
 */
export const ELECT_OPTIONS: readonly OptionSpec[] = [
  { name: 'value', type: 'string', valueName: '<text>', description: 'who this campaigner is, shown by inspect --election and given to the command as FENCELOCK_LEADER_VALUE; at most 1024 UTF-8 bytes (default: <hostname>:<pid>)' },
  { name: 'wait', type: 'string', short: 'w', valueName: '<duration>', description: 'how long to wait until elected: 10s, 500ms, 2m, 0 (try once) or forever (default: forever)' },
  { name: 'no-wait', type: 'boolean', short: 'n', description: 'fail at once if another campaigner leads (same as --wait 0)' },
  ...HOLD_OPTIONS.filter((option) => ['ttl', 'kill-grace', 'max-hold', 'conflict-exit-code', 'foreground'].includes(option.name)),
];

/** Flags of `fencelock inspect`. */
export const INSPECT_OPTIONS: readonly OptionSpec[] = [
  { name: 'json', type: 'boolean', description: 'print one JSON object (tokens as decimal strings)' },
  { name: 'semaphore', type: 'boolean', description: 'show the counting semaphore <key> (its limit and the permits each holder has) instead of the lock' },
  { name: 'election', type: 'boolean', description: 'show the leader of the election <key> (its value and term) instead of the lock; needs a backend with elections' },
];

/** The flags a command takes besides the global ones. */
export const COMMAND_OPTIONS: Readonly<Record<CommandName, readonly OptionSpec[]>> = {
  hold: HOLD_OPTIONS,
  elect: ELECT_OPTIONS,
  inspect: INSPECT_OPTIONS,
};
