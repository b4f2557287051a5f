import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createZooKeeperLockProvider, encodeKeySegment, type ContenderNaming, type ZooKeeperLockProvider } from '@fencelock/zookeeper';
import { startKazooLockPeer, topology, waitFor, withTimeout, type ZooKeeperLockPeer } from '@fencelock/test-infra';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/index.js';
import { CRITICAL_SECTION, killRunningFencelocks, runFencelock, startFencelock } from './support/fencelock-process.js';
import { describeHoldEndToEnd } from './support/hold-suite.js';
import { LockLog } from './support/lock-log.js';

// ZooKeeper: the holder is an ephemeral contender znode under `/fencelock/<encoded key>`; deleting it
// from outside loses the lock while the session lives on.
// The few calls of node-zookeeper-client this test makes. Loaded with require: its types are a
// dev dependency of @fencelock/zookeeper, not of this package.
interface Client {
  once(event: 'connected', listener: () => void): void;
  connect(): void;
  close(): void;
  getChildren(path: string, callback: (error: Error | null, children: string[]) => void): void;
  remove(path: string, version: number, callback: (error: Error | null) => void): void;
}
const { createClient } = createRequire(import.meta.url)('node-zookeeper-client') as {
  createClient(connectionString: string, options: { sessionTimeout: number; spinDelay: number }): Client;
};

describeHoldEndToEnd(
  'zookeeper',
  async () => {
    const { zkConnectionString } = topology();
    const client = createClient(zkConnectionString, { sessionTimeout: 10_000, spinDelay: 200 });
    const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
    client.connect();
    await withTimeout(connected, 10_000, 'a ZooKeeper connection');
    return {
      env: { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_ZK_HOSTS: zkConnectionString },
      shortLifetime: ['--ttl', '2s'],
      removeLock: async (key) => {
        const parent = `/fencelock/${encodeKeySegment(key)}`;
        const children = await call<string[]>((done) => client.getChildren(parent, done));
        if (children.length !== 1) throw new Error(`expected one contender under ${parent}, found ${children.length}`);
        await call<void>((done) => client.remove(`${parent}/${children[0]}`, -1, (error) => done(error, undefined)));
      },
      close: async () => {
        client.close();
      },
    };
  },
  { fencing: 'global', full: true, readWrite: true },
);

function call<T>(request: (done: (error: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return withTimeout(
    new Promise<T>((resolve, reject) => request((error, value) => (error ? reject(error) : resolve(value)))),
    10_000,
    'a ZooKeeper request',
  );
}

// The CLI with kazoo's names under another root (`--zk-root … --zk-naming kazoo`) against the real
// kazoo `Lock` and a library provider configured the same way: each excludes the other on the same
// path, and a provider with the default root does not see the hold, so both flags take effect.
describe("fencelock on zookeeper with kazoo's names under another root", () => {
  // One server for the CLI, the peers and the test's reads, so that reads see every write in order.
  const server = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
  const env = { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_ZK_HOSTS: server };
  const root = '/fencelock-cli-interop';
  const kazooNames = ['--zk-root', root, '--zk-naming', 'kazoo'];
  const kazooContender = /^[0-9a-f]{32}__lock__\d{10}$/;
  let client: Client;
  const logs: LockLog[] = [];
  const peers: ZooKeeperLockPeer[] = [];
  const providers: ZooKeeperLockProvider[] = [];
  const paths: string[] = [];
  const section = (log: LockLog, who: string, ...extra: string[]): string[] => [process.execPath, CRITICAL_SECTION, log.path, who, ...extra];
  const provider = (options: { root?: string; naming?: ContenderNaming }): ZooKeeperLockProvider => {
    const made = createZooKeeperLockProvider({ connectionString: server, sessionTimeoutMs: 10_000, ...options });
    providers.push(made);
    return made;
  };
  const children = (path: string): Promise<string[]> => call<string[]>((done) => client.getChildren(path, done));
  const untilChildren = async (path: string, count: number): Promise<string[]> => {
    let seen: string[] = [];
    await waitFor(async () => ((seen = await children(path).catch(() => [])).length === count ? true : undefined), {
      what: `${count} contenders under ${path}`,
      timeoutMs: 20_000,
      intervalMs: 25,
      describe: () => `children: ${seen.join(', ')}`,
    });
    return seen;
  };

  beforeAll(async () => {
    client = createClient(server, { sessionTimeout: 10_000, spinDelay: 200 });
    const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
    client.connect();
    await withTimeout(connected, 10_000, 'a ZooKeeper connection');
  });
  afterEach(async () => {
    await killRunningFencelocks();
    for (const peer of peers.splice(0)) peer.kill();
    await Promise.allSettled(providers.splice(0).map((made) => made.close()));
    for (const log of logs.splice(0)) log.remove();
    // kazoo leaves the lock's znode behind; remove it once it is empty (best effort).
    for (const path of paths.splice(0)) await call<void>((done) => client.remove(path, -1, (error) => done(error, undefined))).catch(() => undefined);
  });
  afterAll(() => {
    client?.close();
  });

  it("excludes kazoo's Lock and a kazoo-named provider on <root>/<key>, and is not seen from another root", async () => {
    const log = new LockLog();
    logs.push(log);
    const key = `job-${randomUUID()}`;
    const path = `${root}/${key}`;
    paths.push(path);
    const holder = startFencelock(['hold', key, ...kazooNames, '--', ...section(log, 'A', '--gate', log.gate('A'))], env);
    await holder.waitForStdout('ready A');
    const [ours] = await untilChildren(path, 1);
    expect(ours).toMatch(kazooContender);

    expect(await provider({ root, naming: 'kazoo' }).tryAcquire(key)).toBeUndefined();
    // Under the default root the key is another znode: the hold does not exclude it.
    const elsewhere = await provider({}).tryAcquire(key);
    expect(elsewhere).toBeDefined();
    expect(await elsewhere?.release()).toBe(true);

    // kazoo's Lock queues behind the hold and takes the lock once the command has ended.
    const peer = startKazooLockPeer({ connectionString: server, path });
    peers.push(peer);
    await untilChildren(path, 2);
    expect(peer.isHolding).toBe(false);
    log.open('A');
    expect((await holder.exited).code).toBe(0);
    await peer.held;

    // kazoo holds: a hold with the same names from the variables fails at once; inspect shows kazoo.
    const kazooEnv = { ...env, FENCELOCK_ZK_ROOT: root, FENCELOCK_ZK_NAMING: 'kazoo' };
    const refused = await runFencelock(['hold', key, '--no-wait', '--', ...section(log, 'B')], kazooEnv);
    expect(refused.code, refused.stderr).toBe(ExitCode.NOT_ACQUIRED);
    const shown = await runFencelock(['inspect', key, '--json'], kazooEnv);
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ state: 'held', holders: [{ mode: 'exclusive' }] });
    await peer.release();
    expect(log.events()).toEqual(['A start', 'A end']);
  });
});
