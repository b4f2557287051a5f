import {
  etcdKeyLayout,
  LAYOUT_SOURCES,
  postgresKeyLayout,
  redisKeyLayout,
  zooKeeperKeyLayout,
  type EtcdKeyLayout,
  type LayoutSource,
  type PostgresKeyLayout,
  type RedisKeyLayout,
  type ZooKeeperKeyLayout,
} from './key-layout.js';
import { type Access, resolveAccess } from './access.js';
import { UsageError } from './usage-error.js';

/** The backends `fencelock` can lock on. */
export type BackendName = 'redis' | 'redlock' | 'etcd' | 'zookeeper' | 'postgres';

/** Every backend, in the order help lists them. */
export const BACKEND_NAMES: readonly BackendName[] = ['redis', 'redlock', 'etcd', 'zookeeper', 'postgres'];

/**
 * Where to lock: a backend, its addresses and the key layout settings that were given, checked (no
 * connection made yet). A key layout setting that is absent is left to the adapter's default.
 */
export type BackendConfig =
  | ({ readonly backend: 'redis'; readonly url: string; readonly access?: Access } & RedisKeyLayout)
  | ({ readonly backend: 'redlock'; readonly urls: readonly string[]; readonly access?: Access } & RedisKeyLayout)
  | ({ readonly backend: 'etcd'; readonly endpoints: readonly string[]; readonly access?: Access } & EtcdKeyLayout)
  | ({ readonly backend: 'zookeeper'; readonly connectionString: string; readonly access?: Access } & ZooKeeperKeyLayout)
  | ({ readonly backend: 'postgres'; readonly url: string; readonly access?: Access } & PostgresKeyLayout);

/** The loopback defaults, used when neither a flag nor an environment variable gives an address. */
export const DEFAULT_ADDRESSES = {
  redis: 'redis://127.0.0.1:6379',
  redlock: [7001, 7002, 7003, 7004, 7005].map((port) => `redis://127.0.0.1:${port}`).join(','),
  etcd: 'http://127.0.0.1:2379',
  zookeeper: '127.0.0.1:2181',
  postgres: 'postgres://127.0.0.1:5432/postgres',
} as const satisfies Record<BackendName, string>;

/** The address flag of each backend, and its environment variable. */
const ADDRESS_SOURCES = {
  redis: { flag: 'redis-url', env: 'FENCELOCK_REDIS_URL' },
  redlock: { flag: 'redlock-urls', env: 'FENCELOCK_REDLOCK_URLS' },
  etcd: { flag: 'etcd-endpoints', env: 'FENCELOCK_ETCD_ENDPOINTS' },
  zookeeper: { flag: 'zk-hosts', env: 'FENCELOCK_ZK_HOSTS' },
  postgres: { flag: 'postgres-url', env: 'FENCELOCK_POSTGRES_URL' },
} as const satisfies Record<BackendName, { flag: string; env: string }>;

/** Every flag that belongs to `backend`: its address, and where it keeps its locks. */
function backendFlags(backend: BackendName): string[] {
  const layout: Readonly<Record<string, LayoutSource>> = LAYOUT_SOURCES[backend];
  return [ADDRESS_SOURCES[backend].flag, ...Object.values(layout).map((source) => source.flag)];
}

/** Parsed flag values, by flag name. */
export type Values = Readonly<Record<string, string | boolean | undefined>>;
/** Environment variables, as `process.env` holds them. */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Picks the backend, its addresses and its key layout: a flag wins over its `FENCELOCK_*` variable,
 * which wins over the loopback default (for addresses) or the adapter's default (for the key
 * layout). Checks every value's form; a flag of another backend is refused (a likely mistake), while
 * other backends' variables are ignored (one environment may describe all).
 * @throws UsageError on a bad backend name, a malformed address or a bad key layout setting.
 */
export function resolveBackendConfig(values: Values, env: Env): BackendConfig {
  const backendText = stringValue(values.backend) ?? nonEmpty(env.FENCELOCK_BACKEND) ?? 'redis';
  const backend = BACKEND_NAMES.find((name) => name === backendText.trim().toLowerCase());
  if (backend === undefined) {
    const from = values.backend === undefined ? 'FENCELOCK_BACKEND' : '--backend';
    throw new UsageError(`${from} must be one of ${BACKEND_NAMES.join(', ')}, got ${JSON.stringify(backendText)}`);
  }
  for (const name of BACKEND_NAMES) {
    const foreign = name === backend ? undefined : backendFlags(name).find((flag) => values[flag] !== undefined);
    if (foreign !== undefined) throw new UsageError(`--${foreign} is for --backend ${name}, but the backend is ${backend}`);
  }
  const access = resolveAccess(backend, values, env);
  const { flag, env: variable } = ADDRESS_SOURCES[backend];
  const given = stringValue(values[flag]);
  const raw = given ?? nonEmpty(env[variable]) ?? DEFAULT_ADDRESSES[backend];
  const origin = given !== undefined ? `--${flag}` : nonEmpty(env[variable]) !== undefined ? variable : 'the default address';
  switch (backend) {
    case 'redis': {
      const urls = parseUrls(raw, origin, ['redis:', 'rediss:'], 'redis://127.0.0.1:6379');
      if (urls.length !== 1) throw new UsageError(`${origin} must be one Redis URL, got ${urls.length}`);
      requireTlsScheme(urls, access, origin, 'rediss://');
      return { backend, url: urls[0] as string, ...redisKeyLayout(backend, values, env), ...(access === undefined ? {} : { access }) };
    }
    case 'redlock': {
      const urls = parseUrls(raw, origin, ['redis:', 'rediss:'], 'redis://127.0.0.1:7001');
      if (urls.length < 3 || urls.length % 2 === 0) {
        throw new UsageError(`${origin} must list an odd number of independent Redis masters, at least 3; got ${urls.length}`);
      }
      requireTlsScheme(urls, access, origin, 'rediss://');
      return { backend, urls, ...redisKeyLayout(backend, values, env), ...(access === undefined ? {} : { access }) };
    }
    case 'etcd': {
      // etcd endpoints are often written without a scheme; etcd's own default is plain http.
      const withScheme = splitList(raw, origin).map((item) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(item) ? item : `http://${item}`));
      const endpoints = parseUrls(withScheme.join(','), origin, ['http:', 'https:'], 'http://127.0.0.1:2379');
      requireTlsScheme(endpoints, access, origin, 'https://');
      return { backend, endpoints, ...etcdKeyLayout(values, env), ...(access === undefined ? {} : { access }) };
    }
    case 'zookeeper':
      return { backend, connectionString: parseZooKeeperHosts(raw, origin), ...zooKeeperKeyLayout(values, env), ...(access === undefined ? {} : { access }) };
    case 'postgres': {
      const urls = parseUrls(raw, origin, ['postgres:', 'postgresql:'], 'postgres://user@127.0.0.1:5432/db');
      if (urls.length !== 1) throw new UsageError(`${origin} must be one PostgreSQL URL, got ${urls.length}`);
      return { backend, url: urls[0] as string, ...postgresKeyLayout(values, env), ...(access === undefined ? {} : { access }) };
    }
  }
}

/** The backend and its addresses in one line for messages, with any password hidden. */
export function describeBackend(config: BackendConfig): string {
  switch (config.backend) {
    case 'redis':
      return `redis at ${redact(config.url)}`;
    case 'redlock':
      return `redlock over ${config.urls.map(redact).join(', ')}`;
    case 'etcd':
      return `etcd at ${config.endpoints.map(redact).join(', ')}`;
    case 'zookeeper':
      return `zookeeper at ${config.connectionString}`;
    case 'postgres':
      return `postgres at ${redact(config.url)}`;
  }
}

/**
 * The backend, its addresses and any key layout setting that was given, for `--verbose` and
 * `inspect`: says where fencelock looked, so a lock held under another layout is not a mystery.
 */
export function describeLocation(config: BackendConfig): string {
  const settings: string[] = [];
  switch (config.backend) {
    case 'redis':
    case 'redlock':
      if (config.keyPrefix !== undefined) settings.push(`key prefix ${JSON.stringify(config.keyPrefix)}`);
      break;
    case 'etcd':
      if (config.keyPrefix !== undefined) settings.push(`key prefix ${JSON.stringify(config.keyPrefix)}`);
      if (config.keyEncoding !== undefined) settings.push(`key encoding ${config.keyEncoding}`);
      break;
    case 'zookeeper':
      if (config.root !== undefined) settings.push(`root ${config.root}`);
      if (config.naming !== undefined) settings.push(`${config.naming} naming`);
      break;
    case 'postgres':
      if (config.namespace !== undefined) settings.push(`namespace ${JSON.stringify(config.namespace)}`);
      break;
  }
  return [describeBackend(config), ...settings].join(', ');
}

/** The flag and variable that set the addresses of `backend`, for hints. */
export function addressSource(backend: BackendName): { readonly flag: string; readonly env: string } {
  return ADDRESS_SOURCES[backend];
}

function redact(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString().replace(/\/$/, '');
  } catch {
    return url;
  }
}

/** TLS material means TLS: an address that says otherwise is a mistake worth saying before connecting. */
function requireTlsScheme(urls: readonly string[], access: Access | undefined, origin: string, scheme: string): void {
  if (access?.tls !== undefined && urls.some((url) => !url.startsWith(scheme))) {
    throw new UsageError(`${origin}: TLS material was given, so every address must be ${scheme}`);
  }
}

function stringValue(value: string | boolean | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function splitList(raw: string, origin: string): string[] {
  const items = raw.split(',').map((item) => item.trim());
  if (items.some((item) => item === '')) throw new UsageError(`${origin} has an empty entry: ${JSON.stringify(raw)}`);
  return items;
}

function parseUrls(raw: string, origin: string, protocols: readonly string[], example: string): string[] {
  const urls = splitList(raw, origin).map((item) => {
    let url: URL;
    try {
      url = new URL(item);
    } catch {
      throw new UsageError(`${origin}: ${JSON.stringify(item)} is not a URL (e.g. ${example})`);
    }
    if (!protocols.includes(url.protocol) || url.hostname === '') {
      throw new UsageError(`${origin}: ${JSON.stringify(item)} must be a ${protocols.join(' or ')}// URL with a host (e.g. ${example})`);
    }
    return item.replace(/\/+$/, '');
  });
  const seen = new Set<string>();
  for (const url of urls) {
    const { hostname, port } = new URL(url);
    const where = `${hostname.toLowerCase()}:${port}`;
    // The same server twice would count twice toward a Redlock majority.
    if (seen.has(where)) throw new UsageError(`${origin} lists ${hostname}:${port || 'default port'} twice`);
    seen.add(where);
  }
  return urls;
}

function parseZooKeeperHosts(raw: string, origin: string): string {
  const trimmed = raw.trim();
  // A chroot may follow the last server: "h1:2181,h2:2181/app".
  const slash = trimmed.indexOf('/');
  const servers = slash >= 0 ? trimmed.slice(0, slash) : trimmed;
  for (const item of splitList(servers, origin)) {
    const match = /^(\[[^\]]+\]|[^:/\s]+)(?::(\d{1,5}))?$/.exec(item);
    const port = match?.[2] === undefined ? 2181 : Number(match[2]);
    if (match === null || port < 1 || port > 65_535) {
      throw new UsageError(`${origin}: ${JSON.stringify(item)} is not host:port (e.g. 127.0.0.1:2181)`);
    }
  }
  return trimmed;
}
