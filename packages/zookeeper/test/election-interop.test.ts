/**
 * Elections shared with Apache Curator's `LeaderLatch` on the same latch path, both ways, against the
 * shared ensemble: Curator peers run as child processes (see @fencelock/test-infra's
 * zookeeper-lock-peers), each a participant whose id is its node's data. The two cases run at once,
 * so that their JVMs start together.
 */
import { randomUUID } from 'node:crypto';
import { isPending, nextEvent, within } from '@fencelock/conformance';
import type { LeaderInfo } from '@fencelock/core';
import { type ZooKeeperLeaderPeer, startCuratorLeaderPeer, topology } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { ELECTIONS_SEGMENT } from '../src/election-paths.js';
import { createZooKeeperLockProvider } from '../src/index.js';
import { childrenOf, rawClientForFile, untilChildren } from './znodes.js';

// One server for everyone (our providers, the peers, the raw client): reads then see every write in order.
const zkConnectionString = topology().zkConnectionString.split(',')[0] ?? '127.0.0.1:2181';
const ROOT = '/fencelock-election-interop';
const CANDIDATE = /^_c_[0-9a-f-]{36}-latch-\d{10}$/;
const raw = rawClientForFile(zkConnectionString, `${ROOT}/${ELECTIONS_SEGMENT}`);

function provider() {
  return createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs: 10_000 });
}

/** The latch path as Curator is given it (the README's mapping: `<root>/#elections/<name>`). */
function latchPath(name: string): string {
  return `${ROOT}/${ELECTIONS_SEGMENT}/${name}`;
}

describe("interoperability with Curator's LeaderLatch", () => {
  it.concurrent('Curator leads and our campaign waits; Curator closes its latch: we lead, and Curator sees our value as the leader', async () => {
    const a = provider();
    const name = `elect-interop-${randomUUID()}`;
    let peer: ZooKeeperLeaderPeer | undefined;
    try {
      peer = await startCuratorLeaderPeer({ connectionString: zkConnectionString, path: latchPath(name), id: 'curator participant 1' });
      await peer.held;
      // Curator's participant id is its node's data: our leader() reads it.
      const curator = await a.leader(name);
      expect(curator).toMatchObject({ name, value: 'curator participant 1' });
      const queued = nextEvent(a, 'contended', (e) => e.key === name, 10_000);
      const waiting = a.campaign(name, { value: 'ours é 1', waitMs: 30_000 });
      await queued;
      expect(await isPending(waiting)).toBe(true);
      // One line of candidates, named alike: Curator sorts ours with its own.
      const candidates = await childrenOf(raw(), latchPath(name));
      expect(candidates).toHaveLength(2);
      for (const candidate of candidates) expect(candidate).toMatch(CANDIDATE);
      // Curator's view while it leads: itself.
      expect(await peer.leader()).toBe('curator participant 1');
      await peer.resign();
      const ours = await within(waiting, 30_000, 'our campaign after Curator closed its latch');
      expect(ours.term! > curator!.term!, `${String(ours.term)} > ${String(curator!.term)}`).toBe(true);
      expect(await a.leader(name)).toEqual({ name, value: 'ours é 1', term: ours.term });
      // Curator reads our node's data as the leader's participant id.
      expect(await peer.leader()).toBe('ours é 1');
      expect(await ours.resign()).toBe(true);
      expect(await peer.leader()).toBe('');
    } finally {
      await peer?.release().catch(() => peer?.kill());
      await a.close();
    }
  }, 60_000);

  it.concurrent('we lead and Curator waits; we resign: Curator leads, and our observer reports its participant id', async () => {
    const [a, watcher] = [provider(), provider()];
    const name = `elect-interop-${randomUUID()}`;
    const stop = new AbortController();
    let peer: ZooKeeperLeaderPeer | undefined;
    try {
      const ours = await a.campaign(name, { value: 'ours 2' });
      const iterator = watcher.observe(name, { signal: stop.signal })[Symbol.asyncIterator]();
      const seen: (LeaderInfo | undefined)[] = [];
      const next = async (what: string): Promise<LeaderInfo | undefined> => {
        const result = await within(iterator.next(), 30_000, what);
        if (result.done === true) throw new Error(`the observation ended before ${what}`);
        seen.push(result.value);
        return result.value;
      };
      expect(await next('the current leader')).toEqual({ name, value: 'ours 2', term: ours.term });
      peer = await startCuratorLeaderPeer({ connectionString: zkConnectionString, path: latchPath(name), id: 'curator participant 2' });
      // Curator's candidate is in line behind ours: it waits, and sees us lead.
      await untilChildren(raw(), latchPath(name), 2);
      expect(await peer.leader()).toBe('ours 2');
      expect(peer.isHolding).toBe(false);
      await ours.resign();
      await peer.held;
      // A candidate joining changes no leader: the next state reported is Curator's leadership.
      const curator = await next("Curator's leadership");
      expect(curator).toMatchObject({ name, value: 'curator participant 2' });
      expect(curator!.term! > ours.term!).toBe(true);
      expect(await a.leader(name)).toEqual(curator);
      await peer.release();
      expect(await next('no leader once Curator closed')).toBeUndefined();
      expect(seen).toHaveLength(3);
    } finally {
      stop.abort();
      peer?.kill();
      await Promise.all([a.close(), watcher.close()]);
    }
  }, 60_000);
});

// kazoo's Election is not interoperable: it is built on kazoo's Lock (`<uuid hex>__lock__<seq>`
// contenders, leader = lock holder), not on Curator's `latch-` candidates (see the README).
