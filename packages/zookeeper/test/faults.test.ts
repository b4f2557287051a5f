/**
 * Fault cases on a dedicated 3-node ensemble (tickTime 500): the conformance suite with every harness
 * power (its providers reach the ensemble through one TCP proxy per member, so that their links can
 * be blackholed), a holder process stopped past its session timeout, the leader killed under a held
 * lock, and two of three servers paused.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { abortedWithin, describeLockProvider, freezeThread, nextEvent, within } from '@fencelock/conformance';
import { type LockProvider, monotonicNow } from '@fencelock/core';
import { type TcpProxy, type ZooKeeperEnsemble, startTcpProxy, startZooKeeperEnsemble, waitFor } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';
import { dropConnectionForTesting } from '../src/zookeeper-lock-provider.js';
import { RawClientSlot, childrenOf, deleteHolders, rawClient, waitingContenders } from './znodes.js';

const SESSION_TIMEOUT_MS = 3_000;
// The suite's providers outlive every outage of its release cases (the longest: every member killed
// and restarted, about 3 s here), so that their sessions stay alive and only core's retried release
// can free the key in time; the expiry cases then take this long.
const SUITE_SESSION_TIMEOUT_MS = 8_000;
const ROOT = '/fencelock-faults';
let ensemble: ZooKeeperEnsemble | undefined;
let proxies: TcpProxy[] = [];
// For backendWaiters: straight to the ensemble (not through the proxies), made again after a restart.
const inspector = new RawClientSlot(() => zk().connectionString);

function zk(): ZooKeeperEnsemble {
  if (ensemble === undefined) throw new Error('the ensemble did not start');
  return ensemble;
}

const providers: LockProvider[] = [];
function provider(options: { sessionTimeoutMs?: number; connectionString?: string } = {}): ZooKeeperLockProvider {
  const made = createZooKeeperLockProvider({
    connectionString: options.connectionString ?? zk().connectionString,
    sessionTimeoutMs: options.sessionTimeoutMs ?? SESSION_TIMEOUT_MS,
    root: ROOT,
  });
  providers.push(made);
  return made;
}

beforeAll(async () => {
  ensemble = await startZooKeeperEnsemble({ size: 3, tickTime: 500, maxSessionTimeout: 20_000 });
  proxies = await Promise.all(ensemble.nodes.map((node) => startTcpProxy({ targetPort: node.port })));
}, 60_000);

afterAll(async () => {
  await Promise.allSettled(providers.map((p) => p.close()));
  await inspector.close();
  await Promise.allSettled(proxies.map((proxy) => proxy.close()));
  await ensemble?.stop();
}, 30_000);

const allMembers = (act: (node: ZooKeeperEnsemble['nodes'][number]) => Promise<void>): Promise<unknown> => Promise.all(zk().nodes.map(act));
const serving = async (): Promise<void> => {
  await zk().leaderIndex({ timeoutMs: 30_000 });
};

describeLockProvider({
  name: 'zookeeper (dedicated ensemble, every harness power)',
  // The sections that use the outage, pause, restart and crash powers; the others run on the shared
  // ensemble (conformance.test.ts).
  sections: ['expiry', 'load', 'faults', 'release', 'semaphore'],
  createProvider: () =>
    provider({ sessionTimeoutMs: SUITE_SESSION_TIMEOUT_MS, connectionString: proxies.map((proxy) => `127.0.0.1:${proxy.port}`).join(',') }),
  harness: {
    outages: {
      // Requests a stopped member received are applied on SIGCONT: a delete sent during the pause
      // may land late by itself. Kill and blackhole are where core's retry does the work.
      pause: async () => {
        await allMembers((node) => node.pause());
        return async () => {
          await allMembers((node) => node.resume());
          await serving();
        };
      },
      // Every member at once, restarted on its own data dir: sessions and their nodes survive.
      kill: async () => {
        await allMembers((node) => node.kill());
        return async () => {
          await allMembers((node) => node.restart());
          await serving();
        };
      },
      // The members keep running; only the providers' links carry nothing (the proxies hold the bytes).
      blackhole: async () => {
        for (const proxy of proxies) proxy.setMode('blackhole');
        return async () => {
          for (const proxy of proxies) proxy.setMode('pass');
        };
      },
      // The providers' connections drop and new ones are refused until healed; the sessions survive.
      reset: async () => {
        for (const proxy of proxies) proxy.setMode('reset');
        return async () => {
          for (const proxy of proxies) proxy.setMode('pass');
        };
      },
    },
    backendWaiters: async (key) => waitingContenders(await inspector.get(), ROOT, key),
    // An operator deleting the holder's znode, through a client of its own (made now: earlier cases
    // restarted every member, and a client from before may be gone for good).
    async deleteLock(key) {
      const client = await rawClient(zk().connectionString);
      try {
        await deleteHolders(client, ROOT, key);
      } finally {
        client.close();
      }
    },
    async pauseBackend(ms) {
      const nodes = zk().nodes;
      await Promise.all(nodes.map((node) => node.pause()));
      await new Promise((resolve) => setTimeout(resolve, ms));
      await Promise.all(nodes.map((node) => node.resume()));
    },
    async restartBackend() {
      const nodes = zk().nodes;
      await Promise.all(nodes.map((node) => node.kill()));
      await Promise.all(nodes.map((node) => node.restart()));
      await zk().leaderIndex({ timeoutMs: 30_000 });
    },
    async crashProvider(crashed) {
      if (!(crashed instanceof ZooKeeperLockProvider)) throw new Error('not a ZooKeeperLockProvider');
      dropConnectionForTesting(crashed);
    },
  },
});

/** A holder in a child process (see fixtures/holder-process.ts), so it can be stopped with SIGSTOP. */
function startHolderProcess(key: string): { child: ChildProcess; lines: AsyncIterator<string> } {
  const script = fileURLToPath(new URL('./fixtures/holder-process.ts', import.meta.url));
  const child = spawn(
    process.execPath,
    ['--conditions=@fencelock/source', '--import', 'tsx', script, zk().connectionString, ROOT, key, String(SESSION_TIMEOUT_MS)],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return { child, lines };
}

async function nextLine(lines: AsyncIterator<string>, ms: number, what: string): Promise<string> {
  const next = await within(lines.next(), ms, what);
  if (next.done === true) throw new Error(`the holder process ended before ${what}`);
  return next.value;
}

describe('zookeeper faults (dedicated ensemble)', () => {
  it('a holder process stopped past its session timeout: another client takes the lock with a larger czxid, and the stopped one learns it lost on resume', async () => {
    const key = `stopped-holder:${crypto.randomUUID()}`;
    const { child, lines } = startHolderProcess(key);
    try {
      const held = await nextLine(lines, 30_000, 'the holder to acquire');
      expect(held).toMatch(/^held \d+$/);
      const holderToken = BigInt(held.slice('held '.length));
      child.kill('SIGSTOP');
      const other = provider();
      const next = await other.acquire(key, { waitMs: SESSION_TIMEOUT_MS * 3 + 5_000 });
      expect(next.fencingToken! > holderToken).toBe(true);
      child.kill('SIGCONT');
      // On resume its deadline has passed: the signal aborts before anything else can happen.
      expect(await nextLine(lines, 5_000, 'the resumed holder to report the loss')).toBe('lost LOCK_LOST');
      expect((await other.inspect(key))?.holders[0]?.ownerId).toBe(next.ownerId);
      await next.release();
    } finally {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
    }
  }, 60_000);

  it('a waiter paused past its session timeout re-queues in a new session, and acquires only after the holder left (F4)', async () => {
    const key = `paused-waiter:${crypto.randomUUID()}`;
    const path = `${ROOT}/${key}`;
    const raw = await rawClient(zk().connectionString);
    const { child, lines } = startHolderProcess(key);
    try {
      const held = await nextLine(lines, 30_000, 'the holder to acquire');
      const holderToken = BigInt(held.slice('held '.length));
      const waiter = provider();
      const queued = nextEvent(waiter, 'contended', (e) => e.key === key, 10_000);
      let settled = false;
      // Kept for the failure message: a waiter that gave up and one that never woke look alike from outside.
      let failure: unknown;
      const waiting = waiter.acquire(key, { waitMs: 60_000 }).finally(() => {
        settled = true;
      });
      waiting.catch((error: unknown) => {
        failure = error;
      });
      await queued;
      // The raw client's server may lag behind the waiter's: wait until it shows both nodes.
      let before: string[] = [];
      await waitFor(async () => ((before = await childrenOf(raw, path)).length === 2 ? true : undefined), {
        what: 'both contenders to be visible',
        timeoutMs: 10_000,
        intervalMs: 20,
      });
      // getChildren does not sort: the waiter's node is the one with the higher sequence.
      const waiterNode = [...before].sort((x, y) => x.slice(-10).localeCompare(y.slice(-10)))[1] ?? '';
      // A GC pause of the waiter longer than its session: the server expires it and drops its node.
      freezeThread(SESSION_TIMEOUT_MS + 1_500);
      let now: string[] = [];
      await waitFor(async () => ((now = await childrenOf(raw, path)).length === 2 && !now.includes(waiterNode) ? true : undefined), {
        what: 'the waiter to queue again from a new session',
        timeoutMs: 20_000,
        intervalMs: 50,
        describe: () =>
          `before: ${before.join(', ')}; now: ${now.join(', ')}; the acquire ${settled ? `settled (${failure instanceof Error ? failure.stack : String(failure)})` : 'is still waiting'}`,
      });
      expect(settled).toBe(false);
      child.stdin?.end(); // the holder releases
      const lock = await within(waiting, 20_000, 'the waiter after the holder released');
      expect(lock.isHeld()).toBe(true);
      expect(lock.fencingToken! > holderToken).toBe(true);
      expect((await waiter.inspect(key))?.holders[0]?.ownerId).toBe(lock.ownerId);
      expect(await lock.release()).toBe(true);
    } finally {
      child.kill('SIGKILL');
      raw.close();
    }
  }, 60_000);

  it('a holder paused for a third of its session keeps the lock, and renewals resume (F3)', async () => {
    const holder = provider();
    const other = provider();
    const key = `short-pause:${crypto.randomUUID()}`;
    const lock = await holder.acquire(key);
    const token = lock.fencingToken;
    freezeThread(SESSION_TIMEOUT_MS / 3);
    expect(lock.isHeld()).toBe(true);
    expect(lock.state).toBe('held');
    const after = lock.validUntil;
    await waitFor(async () => (lock.validUntil > after ? true : undefined), { what: 'a renewal after the pause', timeoutMs: SESSION_TIMEOUT_MS, intervalMs: 20 });
    expect(lock.signal.aborted).toBe(false);
    expect(lock.fencingToken).toBe(token);
    expect(await other.tryAcquire(key)).toBeUndefined();
    expect(await lock.release()).toBe(true);
  }, 30_000);

  it('the leader killed while a lock is held: the lock survives, the handle goes uncertain and then recovers', async () => {
    // A longer session than an election takes, so the session survives the failover.
    const holder = provider({ sessionTimeoutMs: 10_000 });
    const other = provider();
    const key = `leader-kill:${crypto.randomUUID()}`;
    const lock = await holder.acquire(key);
    const seen: string[] = [];
    const uncertain = new Promise<void>((resolve) =>
      holder.on('uncertain', (event) => {
        if (event.ownerId === lock.ownerId) {
          seen.push('uncertain');
          resolve();
        }
      }),
    );
    const recovered = new Promise<void>((resolve) =>
      holder.on('recovered', (event) => {
        if (event.ownerId === lock.ownerId) {
          seen.push('recovered');
          resolve();
        }
      }),
    );
    const leader = zk().nodes[await zk().leaderIndex()];
    if (leader === undefined) throw new Error('no leader');
    await leader.kill();
    try {
      await within(uncertain, 10_000, 'the uncertain event');
      await within(recovered, 20_000, 'the recovered event');
      expect(seen).toEqual(['uncertain', 'recovered']);
      expect(lock.state).toBe('held');
      expect(lock.signal.aborted).toBe(false);
      expect(await other.tryAcquire(key)).toBeUndefined();
      expect((await other.inspect(key))?.holders[0]?.fencingToken).toBe(lock.fencingToken);
    } finally {
      await leader.restart();
    }
    expect(await lock.release()).toBe(true);
    await zk().leaderIndex({ timeoutMs: 30_000 });
  }, 60_000);

  it('two of three servers paused: nobody acquires, the holder loses the lock by its own deadline, and the lock is usable after resume', async () => {
    const nodes = zk().nodes;
    const [first, second] = [nodes[0], nodes[1]];
    if (first === undefined || second === undefined) throw new Error('ensemble too small');
    // The holder only knows a server that will be paused: its connection goes silent (no event at all).
    const holder = provider({ connectionString: `127.0.0.1:${first.port}` });
    const other = provider();
    const key = `minority:${crypto.randomUUID()}`;
    const lock = await holder.acquire(key);
    await other.inspect(key);
    const deadline = lock.validUntil;
    await Promise.all([first.pause(), second.pause()]);
    try {
      const reason = await abortedWithin(lock.signal, SESSION_TIMEOUT_MS + 1_000, 'the loss by the holder\'s own deadline');
      expect(reason).toMatchObject({ code: 'LOCK_LOST' });
      expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
      // The minority side (the one running server) serves nobody.
      await expect(other.acquire(key, { waitMs: 1_000 })).rejects.toMatchObject({ code: expect.stringMatching(/^LOCK_/) });
    } finally {
      await Promise.all([first.resume(), second.resume()]);
    }
    await zk().leaderIndex({ timeoutMs: 30_000 });
    const next = await other.acquire(key, { waitMs: 30_000 });
    expect(next.fencingToken! > lock.fencingToken!).toBe(true);
    await next.release();
  }, 90_000);
});
