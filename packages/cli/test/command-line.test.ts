import { describe, expect, it } from 'vitest';
import { DEFAULT_KILL_GRACE_MS, DEFAULT_WAIT_MS, parseCommandLine, parseDuration, resolveBackendConfig, UsageError, type HoldSettings, type Values } from '../src/index.js';

const NO_ENV = {};

function hold(argv: readonly string[], env: Record<string, string> = NO_ENV): HoldSettings {
  const invocation = parseCommandLine(argv, env);
  if (invocation.kind !== 'hold') throw new Error(`expected hold, got ${invocation.kind}`);
  return invocation.settings;
}

function usageError(run: () => unknown): UsageError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return error as UsageError;
  }
  throw new Error('expected a UsageError');
}

describe('durations', () => {
  it('reads ms, s, m, h and bare seconds, rounding fractions up to the ms', () => {
    expect(parseDuration('250ms', '--wait')).toBe(250);
    expect(parseDuration('1.5s', '--wait')).toBe(1_500);
    expect(parseDuration('2m', '--wait')).toBe(120_000);
    expect(parseDuration('1h', '--wait')).toBe(3_600_000);
    expect(parseDuration('10', '--wait')).toBe(10_000);
    expect(parseDuration('0.0001s', '--wait')).toBe(1);
    expect(parseDuration('0', '--wait', { allowZero: true })).toBe(0);
    expect(parseDuration('forever', '--wait', { allowForever: true })).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses malformed, negative, zero (unless allowed), endless (unless allowed) and overflowing values', () => {
    for (const text of ['', '5x', '-1s', '1e3', 's', '1 s s', 'NaN', '0', 'forever', '30d', '600h']) {
      usageError(() => parseDuration(text, '--ttl'));
    }
  });
});

describe('backend and addresses', () => {
  it('takes a flag over its FENCELOCK_* variable over the loopback default', () => {
    expect(resolveBackendConfig({}, {})).toEqual({ backend: 'redis', url: 'redis://127.0.0.1:6379' });
    const env = { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: 'http://127.0.0.1:2379,127.0.0.1:22379' };
    expect(resolveBackendConfig({}, env)).toEqual({ backend: 'etcd', endpoints: ['http://127.0.0.1:2379', 'http://127.0.0.1:22379'] });
    expect(resolveBackendConfig({ 'etcd-endpoints': 'http://127.0.0.1:32379' }, env)).toEqual({ backend: 'etcd', endpoints: ['http://127.0.0.1:32379'] });
    expect(resolveBackendConfig({ backend: 'zookeeper' }, env)).toEqual({ backend: 'zookeeper', connectionString: '127.0.0.1:2181' });
    expect(resolveBackendConfig({ backend: 'redlock' }, {})).toMatchObject({ backend: 'redlock', urls: expect.arrayContaining(['redis://127.0.0.1:7001']) });
    // Another backend's variable is ignored: one environment may describe every backend.
    expect(resolveBackendConfig({}, { FENCELOCK_ZK_HOSTS: '127.0.0.1:2182', FENCELOCK_REDIS_URL: 'redis://127.0.0.1:6380' })).toEqual({ backend: 'redis', url: 'redis://127.0.0.1:6380' });
  });

  it('refuses an unknown backend, malformed addresses, another backend\'s address flag, and an even Redlock', () => {
    usageError(() => resolveBackendConfig({ backend: 'mysql' }, {}));
    usageError(() => resolveBackendConfig({}, { FENCELOCK_BACKEND: 'consul' }));
    usageError(() => resolveBackendConfig({ 'redis-url': 'http://127.0.0.1:6379' }, {}));
    usageError(() => resolveBackendConfig({ 'redis-url': 'not a url' }, {}));
    usageError(() => resolveBackendConfig({ 'redis-url': 'redis://a:1,redis://b:1' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'etcd', 'redis-url': 'redis://127.0.0.1:6379' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'redlock', 'redlock-urls': 'redis://h:1,redis://h:2' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'redlock', 'redlock-urls': 'redis://h:1,redis://h:1,redis://h:2' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'zookeeper', 'zk-hosts': 'h:2181,,h:2182' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'zookeeper', 'zk-hosts': 'h:99999' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'etcd', 'etcd-endpoints': 'ftp://127.0.0.1:2379' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'postgres', 'postgres-url': 'mysql://127.0.0.1:3306/db' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'postgres', 'postgres-url': 'postgres://a:1/x,postgres://b:1/x' }, {}));
    usageError(() => resolveBackendConfig({ backend: 'redis', 'postgres-url': 'postgres://127.0.0.1:5432/postgres' }, {}));
  });

  it('points postgres at FENCELOCK_POSTGRES_URL or --postgres-url, and takes its namespace (an empty one counts)', () => {
    expect(resolveBackendConfig({ backend: 'postgres' }, {})).toEqual({ backend: 'postgres', url: 'postgres://127.0.0.1:5432/postgres' });
    const env = { FENCELOCK_BACKEND: 'postgres', FENCELOCK_POSTGRES_URL: 'postgresql://app@127.0.0.1:15432/app' };
    expect(resolveBackendConfig({}, env)).toEqual({ backend: 'postgres', url: 'postgresql://app@127.0.0.1:15432/app' });
    expect(resolveBackendConfig({ 'postgres-url': 'postgres://127.0.0.1:5433/x', 'postgres-namespace': '' }, env)).toEqual({ backend: 'postgres', url: 'postgres://127.0.0.1:5433/x', namespace: '' });
    expect(resolveBackendConfig({}, { ...env, FENCELOCK_POSTGRES_NAMESPACE: 'billing:' })).toMatchObject({ namespace: 'billing:' });
    usageError(() => resolveBackendConfig({ 'postgres-namespace': '\uD800' }, env));
  });
});

describe('where each backend keeps its locks (key prefix, key encoding, root, naming)', () => {
  const etcd = { backend: 'etcd', endpoints: ['http://127.0.0.1:2379'] };
  const zookeeper = { backend: 'zookeeper', connectionString: '127.0.0.1:2181' };

  it('leaves every setting to the adapter unless a flag or its FENCELOCK_* variable gives it', () => {
    expect(resolveBackendConfig({ backend: 'etcd' }, {})).toEqual(etcd);
    expect(resolveBackendConfig({ backend: 'zookeeper' }, {})).toEqual(zookeeper);
    // toEqual ignores undefined properties: the fields must be absent, not undefined.
    for (const backend of ['redis', 'redlock', 'etcd', 'zookeeper', 'postgres']) {
      const config = resolveBackendConfig({ backend }, {});
      for (const field of ['keyPrefix', 'keyEncoding', 'root', 'naming', 'namespace']) expect(Object.hasOwn(config, field), `${backend} ${field}`).toBe(false);
    }
  });

  it("takes etcdctl's names from flags, or from variables where an empty prefix counts", () => {
    expect(resolveBackendConfig({ backend: 'etcd', 'etcd-key-prefix': '', 'etcd-key-encoding': 'as-is' }, {})).toEqual({ ...etcd, keyPrefix: '', keyEncoding: 'as-is' });
    const env = { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_KEY_PREFIX: '', FENCELOCK_ETCD_KEY_ENCODING: 'AS-IS ' };
    expect(resolveBackendConfig({}, env)).toEqual({ ...etcd, keyPrefix: '', keyEncoding: 'as-is' });
    expect(resolveBackendConfig({ 'etcd-key-prefix': 'locks/', 'etcd-key-encoding': 'escape' }, env)).toEqual({ ...etcd, keyPrefix: 'locks/', keyEncoding: 'escape' });
  });

  it("takes kazoo's and Curator's names and the root from flags or variables", () => {
    expect(resolveBackendConfig({ backend: 'zookeeper', 'zk-root': '/services/locks', 'zk-naming': 'kazoo' }, {})).toEqual({ ...zookeeper, root: '/services/locks', naming: 'kazoo' });
    const env = { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_ZK_ROOT: '/locks', FENCELOCK_ZK_NAMING: 'curator-read-write' };
    expect(resolveBackendConfig({}, env)).toEqual({ ...zookeeper, root: '/locks', naming: 'curator-read-write' });
    expect(resolveBackendConfig({ 'zk-naming': 'Curator' }, env)).toEqual({ ...zookeeper, root: '/locks', naming: 'curator' });
    // An empty root or naming variable is unset, like an empty address variable.
    expect(resolveBackendConfig({}, { ...env, FENCELOCK_ZK_ROOT: '', FENCELOCK_ZK_NAMING: ' ' })).toEqual(zookeeper);
  });

  it('takes the Redis and Redlock key prefixes from flags or variables', () => {
    expect(resolveBackendConfig({ 'redis-key-prefix': 'app:' }, {})).toEqual({ backend: 'redis', url: 'redis://127.0.0.1:6379', keyPrefix: 'app:' });
    expect(resolveBackendConfig({}, { FENCELOCK_REDIS_KEY_PREFIX: 'env:' })).toMatchObject({ backend: 'redis', keyPrefix: 'env:' });
    expect(resolveBackendConfig({ backend: 'redlock' }, { FENCELOCK_REDLOCK_KEY_PREFIX: 'rl:' })).toMatchObject({ backend: 'redlock', keyPrefix: 'rl:' });
    expect(resolveBackendConfig({ backend: 'redlock', 'redlock-key-prefix': '' }, {})).toMatchObject({ backend: 'redlock', keyPrefix: '' });
    // Another backend's variables are ignored, as its addresses are.
    const all = { FENCELOCK_ZK_ROOT: '/x', FENCELOCK_ZK_NAMING: 'kazoo', FENCELOCK_ETCD_KEY_PREFIX: '', FENCELOCK_ETCD_KEY_ENCODING: 'as-is', FENCELOCK_REDLOCK_KEY_PREFIX: 'rl:' };
    expect(resolveBackendConfig({}, all)).toEqual({ backend: 'redis', url: 'redis://127.0.0.1:6379' });
  });

  it('refuses a bad value, naming the flag or the variable that gave it', () => {
    const cases: [Values, Record<string, string>, RegExp][] = [
      [{ backend: 'etcd', 'etcd-key-encoding': 'base64' }, {}, /^--etcd-key-encoding must be escape or as-is, got "base64"/],
      [{ backend: 'etcd' }, { FENCELOCK_ETCD_KEY_ENCODING: 'raw' }, /^FENCELOCK_ETCD_KEY_ENCODING must be escape or as-is/],
      [{ backend: 'zookeeper', 'zk-naming': 'zookeeper' }, {}, /^--zk-naming must be curator, curator-read-write or kazoo, got "zookeeper"/],
      [{ backend: 'zookeeper' }, { FENCELOCK_ZK_NAMING: 'go' }, /^FENCELOCK_ZK_NAMING must be/],
      [{ backend: 'zookeeper' }, { FENCELOCK_ZK_ROOT: 'locks' }, /^FENCELOCK_ZK_ROOT must be an absolute ZooKeeper path/],
      [{ 'redis-key-prefix': '{x}fencelock:' }, {}, /^--redis-key-prefix .*reserved/],
      [{ backend: 'redlock' }, { FENCELOCK_REDLOCK_KEY_PREFIX: '{0}fencelock:a' }, /^FENCELOCK_REDLOCK_KEY_PREFIX .*reserved/],
    ];
    for (const [values, env, message] of cases) expect(usageError(() => resolveBackendConfig(values, env)).message).toMatch(message);
    for (const root of ['', 'locks', '/', '/locks/', '/a//b', '/a/./b', '/a/../b', '/zookeeper', '/zookeeper/locks', '/a\u0000b', '/a\u007fb']) {
      expect(usageError(() => resolveBackendConfig({ backend: 'zookeeper', 'zk-root': root }, {})).message, JSON.stringify(root)).toMatch(/^--zk-root /);
    }
  });

  it("refuses another backend's flag, naming both backends", () => {
    const cases: [Values, string, string][] = [
      [{ backend: 'etcd', 'zk-root': '/locks' }, '--zk-root', 'etcd'],
      [{ backend: 'etcd', 'zk-naming': 'kazoo' }, '--zk-naming', 'etcd'],
      [{ backend: 'zookeeper', 'etcd-key-prefix': '' }, '--etcd-key-prefix', 'zookeeper'],
      [{ backend: 'redis', 'etcd-key-encoding': 'as-is' }, '--etcd-key-encoding', 'redis'],
      [{ backend: 'redlock', 'redis-key-prefix': 'a:' }, '--redis-key-prefix', 'redlock'],
      [{ 'redlock-key-prefix': 'a:' }, '--redlock-key-prefix', 'redis'],
    ];
    for (const [values, flag, backend] of cases) {
      const owner = flag.startsWith('--zk-') ? 'zookeeper' : flag.slice(2).split('-')[0];
      expect(usageError(() => resolveBackendConfig(values, {})).message).toBe(`${flag} is for --backend ${owner}, but the backend is ${backend}`);
    }
  });

  it('applies to hold and to inspect alike', () => {
    const argv = ['-b', 'zookeeper', '--zk-root', '/locks', '--zk-naming', 'kazoo'];
    expect(hold(['hold', ...argv, 'deploy', '--', 'true']).backend).toEqual({ ...zookeeper, root: '/locks', naming: 'kazoo' });
    expect(parseCommandLine(['inspect', 'deploy', ...argv], NO_ENV)).toMatchObject({ kind: 'inspect', settings: { backend: { ...zookeeper, root: '/locks', naming: 'kazoo' } } });
    const etcdArgv = ['inspect', 'deploy', '-b', 'etcd', '--etcd-key-prefix=', '--etcd-key-encoding', 'as-is'];
    expect(parseCommandLine(etcdArgv, NO_ENV)).toMatchObject({ kind: 'inspect', settings: { backend: { ...etcd, keyPrefix: '', keyEncoding: 'as-is' } } });
    // Another backend's flag is refused on hold as on inspect.
    expect(usageError(() => parseCommandLine(['hold', 'k', '-b', 'etcd', '--zk-naming', 'kazoo', '--', 'true'], NO_ENV)).message).toMatch(/^--zk-naming is for/);
  });
});

describe('fencelock hold <key> [options] -- <command…>', () => {
  it('has bounded, documented defaults', () => {
    const settings = hold(['hold', 'jobs:nightly', '--', './run.sh', '--fast']);
    expect(settings).toMatchObject({
      key: 'jobs:nightly',
      command: ['./run.sh', '--fast'],
      waitMs: DEFAULT_WAIT_MS,
      ttlMs: undefined,
      killGraceMs: DEFAULT_KILL_GRACE_MS,
      maxHoldMs: undefined,
      mode: 'exclusive',
      conflictExitCode: 75,
      foreground: false,
      verbose: false,
      backend: { backend: 'redis', url: 'redis://127.0.0.1:6379' },
    });
    expect(DEFAULT_WAIT_MS).toBe(30_000);
    expect(settings.metadata).toContain(`pid=${process.pid}`);
    expect(settings.metadata).toContain('cmd=./run.sh');
    // Arguments may carry secrets: they are not stored where anyone can inspect them.
    expect(settings.metadata).not.toContain('--fast');
    expect(hold(['hold', 'k', '--', 'x'.repeat(5_000)]).metadata).toMatch(/…$/);
  });

  it('reads every flag, before or after the key, and keeps everything after -- for the command', () => {
    const settings = hold([
      '-b', 'etcd', 'hold', '--wait', '2m', 'deploy', '--ttl=5s', '--kill-grace', '0', '--max-hold', '1h', '-s', '-m', 'who', '-E', '9', '--foreground', '-v',
      '--', 'sh', '-c', 'echo "$FENCELOCK_TOKEN" --wait 0', '--', '--help',
    ]);
    expect(settings).toMatchObject({
      key: 'deploy',
      command: ['sh', '-c', 'echo "$FENCELOCK_TOKEN" --wait 0', '--', '--help'],
      waitMs: 120_000,
      ttlMs: 5_000,
      killGraceMs: 0,
      maxHoldMs: 3_600_000,
      mode: 'shared',
      metadata: 'who',
      conflictExitCode: 9,
      foreground: true,
      verbose: true,
      backend: { backend: 'etcd', endpoints: ['http://127.0.0.1:2379'] },
    });
    expect(hold(['hold', 'k', '-n', '--', 'true']).waitMs).toBe(0);
    expect(hold(['hold', 'k', '--wait', '0', '--', 'true']).waitMs).toBe(0);
    expect(hold(['hold', 'k', '-w', 'forever', '--', 'true']).waitMs).toBe(Number.POSITIVE_INFINITY);
  });

  it('refuses bad usage with the hold command named, before anything is contacted', () => {
    const cases: (readonly string[])[] = [
      ['hold', 'k'], // no --
      ['hold', 'k', '--'], // no command
      ['hold', 'k', '--', ''], // empty program
      ['hold', '--', 'true'], // no key
      ['hold', '', '--', 'true'], // empty key
      ['hold', '\ud800', '--', 'true'], // malformed key
      ['hold', 'x'.repeat(513), '--', 'true'], // too long a key
      ['hold', 'k', 'extra', '--', 'true'],
      ['hold', 'k', '--wait', 'soon', '--', 'true'],
      ['hold', 'k', '--ttl', '0', '--', 'true'],
      ['hold', 'k', '--ttl', 'forever', '--', 'true'],
      ['hold', 'k', '--wait', '1s', '--no-wait', '--', 'true'],
      ['hold', 'k', '-E', '256', '--', 'true'],
      ['hold', 'k', '-E', 'one', '--', 'true'],
      ['hold', 'k', '--json', '--', 'true'], // an inspect flag
      ['hold', 'k', '--bogus', '--', 'true'],
      ['hold', 'k', '--wait', '--', 'true'],
      ['hold', 'k', '--metadata', 'x'.repeat(1025), '--', 'true'],
    ];
    for (const argv of cases) {
      const error = usageError(() => parseCommandLine(argv, NO_ENV));
      expect(error.command, argv.join(' ')).toBe('hold');
    }
  });
});

describe('fencelock inspect <key>', () => {
  it('reads the key and --json', () => {
    expect(parseCommandLine(['inspect', 'k', '--json', '-b', 'zookeeper'], NO_ENV)).toMatchObject({
      kind: 'inspect',
      settings: { key: 'k', json: true, backend: { backend: 'zookeeper' } },
    });
  });

  it('refuses hold flags, a command, extra words and a missing key', () => {
    for (const argv of [['inspect', 'k', '--wait', '1s'], ['inspect', 'k', '--', 'ls'], ['inspect', 'k', 'l'], ['inspect'], ['inspect', '']]) {
      expect(usageError(() => parseCommandLine(argv, NO_ENV)).command, argv.join(' ')).toBe('inspect');
    }
  });
});

describe('the command line as a whole', () => {
  it('answers --help, -h, help <command> and --version before anything else', () => {
    expect(parseCommandLine(['--help'], NO_ENV)).toEqual({ kind: 'help', command: undefined });
    expect(parseCommandLine(['hold', '-h', '--bogus'], NO_ENV)).toEqual({ kind: 'help', command: 'hold' });
    expect(parseCommandLine(['help', 'inspect'], NO_ENV)).toEqual({ kind: 'help', command: 'inspect' });
    expect(parseCommandLine(['--version'], NO_ENV)).toEqual({ kind: 'version' });
    // After --, --help belongs to the command.
    expect(parseCommandLine(['hold', 'k', '--', 'ls', '--help'], NO_ENV).kind).toBe('hold');
  });

  it('refuses no command and unknown commands', () => {
    usageError(() => parseCommandLine([], NO_ENV));
    usageError(() => parseCommandLine(['lock', 'k'], NO_ENV));
    usageError(() => parseCommandLine(['--verbose'], NO_ENV));
  });
});
