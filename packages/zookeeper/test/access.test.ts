/**
 * Authentication and ACLs: the znodes a provider creates carry the ACL its `auth` implies, so an
 * identity outside it can read who holds a lock but can neither delete the holder's node (which would
 * hand the lock to the next waiter) nor queue; its attempts fail at once with LOCK_FORBIDDEN, never
 * after waiting. The credentials appear in no error and no event. Digest authentication needs no
 * server setting, so these run on the shared ensemble, each under a root of its own.
 */
import { randomUUID } from 'node:crypto';
import { ReportLog, describeLockProvider } from '@fencelock/conformance';
import { type LockError, LockErrorCode, isLockError } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { type ACL, type Client, Exception, Permission } from 'node-zookeeper-client';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ZooKeeperLockProvider,
  type ZooKeeperAclOption,
  type ZooKeeperLockProviderOptions,
  createZooKeeperLockProvider,
  encodeKeySegment,
  zooKeeperDigestId,
} from '../src/index.js';
import { dropConnectionForTesting } from '../src/zookeeper-lock-provider.js';
import { childrenOf, deleteHolders, rawClient, waitingContenders } from './znodes.js';

const connectionString = topology().zkConnectionString;
const run = randomUUID().slice(0, 8);
// Known secrets: the leak check below looks for them everywhere the provider reports anything.
const alice = { user: `alice-${run}`, password: `alice-secret-${randomUUID()}` };
const bob = { user: `bob-${run}`, password: `bob-secret-${randomUUID()}` };
const mallory = { user: `mallory-${run}`, password: `mallory-secret-${randomUUID()}` };
const SECRETS = [alice.password, bob.password, mallory.password];
const credentials = (who: { user: string; password: string }): string => `${who.user}:${who.password}`;

const providers: ZooKeeperLockProvider[] = [];
const clients: Client[] = [];
const roots: { root: string; owner: typeof alice }[] = [];
// Everything the providers reported: errors thrown and events emitted, with causes.
const reports = new ReportLog();

function provider(root: string, options: Partial<ZooKeeperLockProviderOptions>): ZooKeeperLockProvider {
  const made = reports.watch(createZooKeeperLockProvider({ connectionString, sessionTimeoutMs: 6_000, root, spinDelayMs: 50, ...options }));
  providers.push(made);
  return made;
}

function newRoot(owner: typeof alice): string {
  const root = `/fencelock-access-${run}-${roots.length}`;
  roots.push({ root, owner });
  return root;
}

async function raw(who?: typeof alice): Promise<Client> {
  const client = await rawClient(connectionString);
  if (who !== undefined) client.addAuthInfo('digest', Buffer.from(credentials(who)));
  clients.push(client);
  return client;
}

function call<T>(run: (done: (error: Error | Exception | null, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value))));
}

// `scheme:id:permissions` of each entry (the library's ACL objects name the bits `permission`, not
// `perms` as its type declarations say).
const aclOf = async (client: Client, path: string): Promise<string[]> => {
  const acls = await call<ACL[]>((done) => client.getACL(path, (error, list) => done(error, list)));
  return acls.map((acl) => `${acl.id.scheme}:${acl.id.id}:${(acl as unknown as { permission: number }).permission}`).sort();
};
const remove = (client: Client, path: string): Promise<null> => call<null>((done) => client.remove(path, -1, (error) => done(error, null)));
const setData = (client: Client, path: string): Promise<null> =>
  call<null>((done) => client.setData(path, Buffer.from('x'), -1, (error) => done(error, null)));

const rejection = (promise: Promise<unknown>): Promise<unknown> => reports.rejection(promise);

function codeOf(error: unknown): number | undefined {
  return error instanceof Exception ? error.getCode() : undefined;
}

// Deletes a tree, depth first, as the identity that may.
async function removeTree(client: Client, path: string): Promise<void> {
  for (const child of await childrenOf(client, path)) await removeTree(client, `${path}/${child}`);
  await remove(client, path).catch((error: unknown) => {
    if (codeOf(error) !== Exception.NO_NODE) throw error;
  });
}

afterAll(async () => {
  await Promise.allSettled(providers.map((made) => made.close()));
  for (const { root, owner } of roots) {
    const cleaner = await raw(owner);
    await removeTree(cleaner, root);
  }
  for (const client of clients) client.close();
}, 30_000);

// The suite as alice, under the ACL her auth implies; the operator's powers as alice too (an identity
// outside the ACL could not delete a holder's node: see below). The sections that create every kind
// of znode (lock, read-write, semaphore and election nodes) and delete them behind a holder's back;
// the rest runs in conformance.test.ts without an identity.
const SUITE_ROOT = newRoot(alice);
describeLockProvider({
  name: 'zookeeper with digest authentication and the creator-all-world-read ACL',
  sections: ['basics', 'read-write', 'faults', 'semaphore', 'election'],
  // Short sessions keep the expiry cases quick. The request timeout is raised from its default (a
  // third of the session timeout, 1 s), which also bounds a try's wait for a new provider's first
  // connection: with the digest handshake on top, that took longer than 1 s on a loaded CI machine.
  createProvider: () =>
    provider(SUITE_ROOT, { sessionTimeoutMs: 3_000, requestTimeoutMs: 2_000, auth: { scheme: 'digest', credentials: credentials(alice) } }),
  expectCapabilities: { fencing: 'global', lossDetection: true, notify: true, fifo: true, readWrite: true, expiry: 'session', deletionNotice: 'watch' },
  harness: {
    backendWaiters: async (key) => waitingContenders(await raw(), SUITE_ROOT, key),
    deleteLock: async (key) => {
      await deleteHolders(await raw(alice), SUITE_ROOT, key);
    },
    crashProvider: async (made) => {
      if (!(made instanceof ZooKeeperLockProvider)) throw new Error('not a ZooKeeperLockProvider');
      dropConnectionForTesting(made);
    },
  },
});

describe('ZooKeeper: nodes carry the ACL of the provider identity', () => {
  it("creates the root, the lock znode and its contender with 'creator-all-world-read' under auth", async () => {
    const root = newRoot(alice);
    const holder = provider(root, { auth: { scheme: 'digest', credentials: credentials(alice) } });
    await using lock = await holder.acquire('acl-shape');
    // As alice: the server shows a digest id's hash only to a reader with ADMIN on the node ("x" to others).
    const operator = await raw(alice);
    const lockPath = `${root}/${encodeKeySegment('acl-shape')}`;
    const [child] = await childrenOf(operator, lockPath);
    if (child === undefined) throw new Error('no contender node');
    const aliceId = zooKeeperDigestId(alice.user, alice.password);
    for (const path of [root, lockPath, `${lockPath}/${child}`]) {
      expect(await aclOf(operator, path), path).toEqual([`digest:${aliceId}:${Permission.ALL}`, `world:anyone:${Permission.READ}`].sort());
    }
    expect(lock.isHeld()).toBe(true);
  });

  it("keeps ZooKeeper's open ACL when the provider has no identity", async () => {
    const root = newRoot(alice);
    const open = provider(root, {});
    await using _lock = await open.acquire('open');
    const operator = await raw();
    expect(await aclOf(operator, `${root}/${encodeKeySegment('open')}`)).toEqual([`world:anyone:${Permission.ALL}`]);
  });
});

describe('ZooKeeper: another identity cannot break a lock', () => {
  it("cannot delete or overwrite the holder's node; the holder keeps its lock", async () => {
    const root = newRoot(alice);
    const holder = provider(root, { auth: { scheme: 'digest', credentials: credentials(alice) } });
    await using lock = await holder.acquire('guarded');
    const lockPath = `${root}/${encodeKeySegment('guarded')}`;
    const [child] = await childrenOf(await raw(), lockPath);
    if (child === undefined) throw new Error('no contender node');
    for (const intruder of [await raw(mallory), await raw()]) {
      expect(codeOf(await rejection(remove(intruder, `${lockPath}/${child}`)))).toBe(Exception.NO_AUTH);
      expect(codeOf(await rejection(setData(intruder, `${lockPath}/${child}`)))).toBe(Exception.NO_AUTH);
      expect(codeOf(await rejection(remove(intruder, lockPath)))).toBe(Exception.NO_AUTH);
    }
    // The node is still there and the holder still holds: the server refused every change.
    expect(await childrenOf(await raw(), lockPath)).toEqual([child]);
    expect(lock.isHeld()).toBe(true);
    expect(lock.signal.aborted).toBe(false);
    expect((await holder.inspect('guarded'))?.holders.map((h) => h.ownerId)).toEqual([lock.ownerId]);
  });

  it('refuses another identity at once with LOCK_FORBIDDEN, and lets it read who holds the lock', async () => {
    const root = newRoot(alice);
    const holder = provider(root, { auth: { scheme: 'digest', credentials: credentials(alice) } });
    await using lock = await holder.acquire('refused');
    // Waits far longer than the test's own timeout: only a refusal can settle the call in time.
    for (const outsider of [provider(root, { auth: { scheme: 'digest', credentials: credentials(mallory) } }), provider(root, {})]) {
      const error = await rejection(outsider.acquire('refused', { waitMs: 600_000 }));
      expect(isLockError(error, LockErrorCode.FORBIDDEN), String(error)).toBe(true);
      expect((error as LockError).message).toMatch(/^ZooKeeper refused creating the contender node: permission denied/);
      const info = await outsider.inspect('refused');
      expect(info?.holders.map((h) => h.ownerId)).toEqual([lock.ownerId]);
      // A new key under a root it may not write to: refused as well, at the lock znode's creation.
      const other = await rejection(outsider.tryAcquire('new-key'));
      expect(isLockError(other, LockErrorCode.FORBIDDEN), String(other)).toBe(true);
    }
    expect(lock.isHeld()).toBe(true);
  }, 20_000);

  it("refuses another identity's campaign at once with LOCK_FORBIDDEN, and lets it read the leader", async () => {
    const root = newRoot(alice);
    const elected = provider(root, { auth: { scheme: 'digest', credentials: credentials(alice) } });
    await using leader = await elected.campaign('elected', { value: 'alice' });
    for (const outsider of [provider(root, { auth: { scheme: 'digest', credentials: credentials(mallory) } }), provider(root, {})]) {
      // A campaign waits without bound by default: only a refusal can settle it in time.
      const error = await rejection(outsider.campaign('elected', { value: 'intruder' }));
      expect(isLockError(error, LockErrorCode.FORBIDDEN), String(error)).toBe(true);
      expect(await outsider.leader('elected')).toEqual({ name: 'elected', value: 'alice', term: leader.term });
    }
    expect(leader.isHeld()).toBe(true);
  }, 20_000);

  it('lets every identity named in an explicit ACL share the locks', async () => {
    const root = newRoot(alice);
    const acl: ZooKeeperAclOption = [
      { scheme: 'digest', id: zooKeeperDigestId(alice.user, alice.password), permissions: ['all'] },
      { scheme: 'digest', id: zooKeeperDigestId(bob.user, bob.password), permissions: ['read', 'create', 'delete', 'write'] },
      { scheme: 'world', id: 'anyone', permissions: ['read'] },
    ];
    const first = provider(root, { auth: { scheme: 'digest', credentials: credentials(alice) }, acl });
    const second = provider(root, { auth: { scheme: 'digest', credentials: credentials(bob) }, acl });
    const held = await first.acquire('shared');
    const waiting = second.acquire('shared', { waitMs: 10_000 });
    const contended = new Promise<void>((resolve) => second.on('contended', () => resolve()));
    await contended;
    await held.release();
    await using next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken ?? 0n);
    const outsider = provider(root, { auth: { scheme: 'digest', credentials: credentials(mallory) }, acl });
    const error = await rejection(outsider.tryAcquire('shared'));
    expect(isLockError(error, LockErrorCode.FORBIDDEN), String(error)).toBe(true);
  }, 20_000);
});

describe('ZooKeeper: auth and acl options', () => {
  const bad: [string, Partial<ZooKeeperLockProviderOptions> | Record<string, unknown>][] = [
    ['credentials without a password', { auth: { scheme: 'digest', credentials: `${alice.user}:` } }],
    ['credentials without a user', { auth: { scheme: 'digest', credentials: `:${alice.password}` } }],
    ['credentials without a colon', { auth: { scheme: 'digest', credentials: alice.password } }],
    ['an unknown scheme', { auth: { scheme: 'sasl', credentials: credentials(alice) } }],
    ["'creator-all-world-read' without an identity", { acl: 'creator-all-world-read' }],
    ['an empty ACL', { acl: [] }],
    ['an unknown permission', { acl: [{ scheme: 'world', id: 'anyone', permissions: ['everything'] }] }],
    ['an unknown ACL shape', { acl: 'closed' }],
  ];
  it.each(bad)('refuses %s with LOCK_INVALID_ARGUMENT, naming no secret', (_what, options) => {
    let error: unknown;
    try {
      createZooKeeperLockProvider({ connectionString, ...(options as ZooKeeperLockProviderOptions) });
    } catch (caught) {
      error = caught;
      reports.record(caught);
    }
    expect(isLockError(error, LockErrorCode.INVALID_ARGUMENT), String(error)).toBe(true);
  });

  it('refuses auth with a client passed in (the client is authenticated by its owner)', async () => {
    const client = await raw();
    expect(() => createZooKeeperLockProvider({ client, auth: { scheme: 'digest', credentials: credentials(alice) } })).toThrow(
      expect.objectContaining({ code: LockErrorCode.INVALID_ARGUMENT }),
    );
  });
});

describe('ZooKeeper: credentials never leak', () => {
  it('appear in no error, cause or event reported by the tests above', () => {
    expect(reports.items.length).toBeGreaterThan(10);
    expect(reports.leaked(SECRETS)).toEqual([]);
  });
});
