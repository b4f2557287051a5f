import { createRequire } from 'node:module';
import { encodeKeySegment } from '@fencelock/zookeeper';
import { topology, withTimeout } from '@fencelock/test-infra';
import { describeElectEndToEnd } from './support/elect-suite.js';

// ZooKeeper: a candidate is an ephemeral sequential znode under `/fencelock/#elections/<encoded
// name>` (Curator's LeaderLatch layout); deleting the leader's from outside loses the leadership
// while its session lives on.
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

describeElectEndToEnd('zookeeper', async () => {
  const { zkConnectionString } = topology();
  const client = createClient(zkConnectionString, { sessionTimeout: 10_000, spinDelay: 200 });
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  await withTimeout(connected, 10_000, 'a ZooKeeper connection');
  return {
    env: { FENCELOCK_BACKEND: 'zookeeper', FENCELOCK_ZK_HOSTS: zkConnectionString },
    shortLifetime: ['--ttl', '2s'],
    removeLeader: async (name) => {
      const parent = `/fencelock/#elections/${encodeKeySegment(name)}`;
      const children = await call<string[]>((done) => client.getChildren(parent, done));
      if (children.length !== 1) throw new Error(`expected one candidate under ${parent}, found ${children.length}`);
      await call<void>((done) => client.remove(`${parent}/${children[0]}`, -1, (error) => done(error, undefined)));
    },
    close: async () => {
      client.close();
    },
  };
});

function call<T>(request: (done: (error: Error | null | undefined, value: T) => void) => void): Promise<T> {
  return withTimeout(
    new Promise<T>((resolve, reject) => request((error, value) => (error ? reject(error) : resolve(value)))),
    10_000,
    'a ZooKeeper request',
  );
}
