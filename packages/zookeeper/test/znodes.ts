// Test helper: a raw node-zookeeper-client client to look at the tree the provider leaves behind.
import { waitFor, withTimeout } from '@fencelock/test-infra';
import { type Client, type Option, State, createClient } from 'node-zookeeper-client';
import { afterAll, beforeAll } from 'vitest';
import { holdersOf, sortedContenders } from '../src/contender-names.js';
import { encodeKeySegment } from '../src/key-encoding.js';

/** A connected raw client (by default a 10 s session); close it when done. */
export async function rawClient(connectionString: string, options: Partial<Option> = {}): Promise<Client> {
  const client = createClient(connectionString, { sessionTimeout: 10_000, spinDelay: 200, ...options });
  const connected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
  client.connect();
  await withTimeout(connected, 10_000, 'a ZooKeeper connection');
  return client;
}

/** The children of `path` (empty when it does not exist). */
export function childrenOf(client: Client, path: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    client.getChildren(path, (error, list) => {
      if (error === null) resolve(list);
      else if ((error as { code?: number }).code === -101) resolve([]);
      else reject(error);
    });
  });
}

/**
 * Waits (≤ `timeoutMs`) until `path` has no children left but `kept`: no orphan lock znodes (FAULTS.md L3).
 */
export async function expectNoOrphans(client: Client, path: string, timeoutMs: number, kept: readonly string[] = []): Promise<void> {
  let left: string[] = [];
  const orphans = async (): Promise<string[]> => (await childrenOf(client, path)).filter((child) => !kept.includes(child));
  await waitFor(async () => ((left = await orphans()).length === 0 ? true : undefined), {
    what: `no lock znodes left under ${path}`,
    timeoutMs,
    intervalMs: 100,
    describe: () => `left: ${left.join(', ')}`,
  });
}

/**
 * How many contenders wait under `key`'s lock znode (`<root>/<encoded key>`), holders not counted:
 * the conformance harness's `backendWaiters`.
 */
export async function waitingContenders(client: Client, root: string, key: string): Promise<number> {
  const contenders = sortedContenders(await childrenOf(client, `${root}/${encodeKeySegment(key)}`));
  return contenders.length - holdersOf(contenders).length;
}

/**
 * Brings the client's server up to date with the leader: node-zookeeper-client has no sync(); a
 * multi with one check goes through the leader like a write, and is answered after our server has
 * applied everything before it.
 */
export function syncWithLeader(client: Client): Promise<void> {
  return new Promise((resolve, reject) =>
    client
      .transaction()
      .check('/', -1)
      .commit((error) => (error ? reject(error) : resolve())),
  );
}

/**
 * Deletes the current holder node(s) of `key` behind their owners' backs, as an operator would
 * (the conformance harness's `deleteLock`); resolves once the ensemble applied every delete.
 * Resolves the deleted paths.
 */
export async function deleteHolders(client: Client, root: string, key: string): Promise<string[]> {
  const lockPath = `${root}/${encodeKeySegment(key)}`;
  await syncWithLeader(client);
  const holders = holdersOf(sortedContenders(await childrenOf(client, lockPath)));
  if (holders.length === 0) throw new Error(`no holder of ${lockPath} to delete`);
  const paths = holders.map((holder) => `${lockPath}/${holder.name}`);
  await Promise.all(
    paths.map((path) => new Promise<void>((resolve, reject) => client.remove(path, -1, (error) => (error ? reject(error) : resolve())))),
  );
  return paths;
}

/** A raw client made on first use and made again once its session is gone. Close it when done. */
export class RawClientSlot {
  #client: Promise<Client> | undefined;
  constructor(private readonly connectionString: () => string) {}

  async get(): Promise<Client> {
    const current = await this.#client?.catch(() => undefined);
    const state = current?.getState();
    if (current === undefined || state === State.EXPIRED || state === State.AUTH_FAILED) {
      current?.close();
      this.#client = rawClient(this.connectionString());
      return this.#client;
    }
    return current;
  }

  async close(): Promise<void> {
    (await this.#client?.catch(() => undefined))?.close();
    this.#client = undefined;
  }
}

/**
 * A raw client for one test file: connected before its tests; after them, it checks (≤ 15 s) that
 * `emptyAfter` has no children left, and closes. Returns the getter (throws before `beforeAll` ran).
 */
export function rawClientForFile(connectionString: string, emptyAfter: string): () => Client {
  let client: Client | undefined;
  beforeAll(async () => {
    client = await rawClient(connectionString);
  });
  afterAll(async () => {
    try {
      if (client !== undefined) await expectNoOrphans(client, emptyAfter, 15_000);
    } finally {
      client?.close();
    }
  }, 30_000);
  return () => {
    if (client === undefined) throw new Error('the raw client is not connected yet');
    return client;
  };
}

/** Waits (≤ 30 s) until `path` has at least `count` children, e.g. until another client's node is there; resolves them. */
export async function untilChildren(client: Client, path: string, count: number): Promise<string[]> {
  let seen: string[] = [];
  await waitFor(async () => ((seen = await childrenOf(client, path)).length >= count ? true : undefined), {
    what: `${count} children under ${path}`,
    timeoutMs: 30_000,
    intervalMs: 20,
    describe: () => `children: ${seen.join(', ')}`,
  });
  return seen;
}
