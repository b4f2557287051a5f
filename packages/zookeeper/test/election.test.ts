/**
 * Elections on the shared ensemble beyond the conformance suite: the znode layout Curator's
 * `LeaderLatch` shares, a leader's session expiry and a deleted candidate node (each a loss, and the
 * next candidate leads with a greater term), and an observer whose own session ends (its watch moves
 * to the next session).
 */
import { randomUUID } from 'node:crypto';
import { abortedWithin, isPending, nextEvent, within } from '@fencelock/conformance';
import type { LeaderInfo } from '@fencelock/core';
import { topology } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { ELECTIONS_SEGMENT } from '../src/election-paths.js';
import { createZooKeeperLockProvider, encodeKeySegment } from '../src/index.js';
import { dropConnectionForTesting } from '../src/zookeeper-lock-provider.js';
import { childrenOf, rawClientForFile, syncWithLeader } from './znodes.js';

const { zkConnectionString } = topology();
const ROOT = '/fencelock-election';
const raw = rawClientForFile(zkConnectionString, `${ROOT}/${ELECTIONS_SEGMENT}`);

// Short sessions: a crashed leader's session expires within about 2 s.
function provider(sessionTimeoutMs = 2_000) {
  return createZooKeeperLockProvider({ connectionString: zkConnectionString, root: ROOT, sessionTimeoutMs });
}

function latchPath(name: string): string {
  return `${ROOT}/${ELECTIONS_SEGMENT}/${encodeKeySegment(name)}`;
}

function readData(path: string): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => raw().getData(path, (error, data) => (error ? reject(error) : resolve(data ?? undefined))));
}

function remove(path: string): Promise<void> {
  return new Promise((resolve, reject) => raw().remove(path, -1, (error) => (error ? reject(error) : resolve())));
}

/** Reads `iterator` until a state satisfies `wanted` (bounded); resolves that state. */
async function until(
  iterator: AsyncIterator<LeaderInfo | undefined>,
  wanted: (state: LeaderInfo | undefined) => boolean,
  what: string,
): Promise<LeaderInfo | undefined> {
  for (let read = 0; read < 20; read += 1) {
    const result = await within(iterator.next(), 15_000, `observe to report ${what}`);
    if (result.done === true) throw new Error(`the observation ended before it reported ${what}`);
    if (wanted(result.value)) return result.value;
  }
  throw new Error(`observe never reported ${what}`);
}

describe('zookeeper elections', () => {
  it("names candidates as Curator's LeaderLatch does, holding the value; a deleted leader node is a loss, and the next leads", async () => {
    const [a, b] = [provider(), provider()];
    const name = `elect/layout ${randomUUID()}`;
    try {
      const leader = await a.campaign(name, { value: 'host-a:8080' });
      const queued = nextEvent(b, 'contended', (e) => e.key === name, 10_000);
      const waiting = b.campaign(name, { value: '' });
      await queued;
      await syncWithLeader(raw());
      const candidates = await childrenOf(raw(), latchPath(name));
      expect(candidates).toHaveLength(2);
      const ours = candidates.find((child) => child.startsWith(`_c_${leader.ownerId}-latch-`));
      expect(ours).toMatch(/^_c_[0-9a-f-]{36}-latch-\d{10}$/);
      expect((await readData(`${latchPath(name)}/${ours}`))?.toString('utf8')).toBe('host-a:8080');
      // Nothing of it under the lock znode of the same name.
      expect(await childrenOf(raw(), `${ROOT}/${encodeKeySegment(name)}`)).toEqual([]);
      // An operator deletes the leader's node: leadership is lost at once, and the next candidate leads.
      await remove(`${latchPath(name)}/${ours}`);
      expect(await abortedWithin(leader.signal, 10_000, 'the leader to hear its node deleted')).toMatchObject({ code: 'LOCK_LOST', key: name });
      const next = await within(waiting, 10_000, 'the next candidate to lead');
      expect(next.term! > leader.term!).toBe(true);
      expect(await a.leader(name)).toEqual({ name, value: '', term: next.term });
      expect(await leader.resign()).toBe(false);
      expect(await next.resign()).toBe(true);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 30_000);

  it("a leader's session expiry is a loss; the waiting candidate leads with a greater term, and an observer sees it", async () => {
    const [crashing, b, watcher] = [provider(), provider(10_000), provider(10_000)];
    const name = `elect-expiry-${randomUUID()}`;
    const stop = new AbortController();
    try {
      const leader = await crashing.campaign(name, { value: 'crashing' });
      const iterator = watcher.observe(name, { signal: stop.signal })[Symbol.asyncIterator]();
      expect(await until(iterator, () => true, 'the current leader')).toEqual({ name, value: 'crashing', term: leader.term });
      const queued = nextEvent(b, 'contended', (e) => e.key === name, 10_000);
      const waiting = b.campaign(name, { value: 'next' });
      await queued;
      dropConnectionForTesting(crashing);
      expect(await abortedWithin(leader.signal, 10_000, 'the crashed leader to hear its loss')).toMatchObject({ code: 'LOCK_LOST', key: name });
      const next = await within(waiting, 15_000, "the waiting candidate after the leader's session expired");
      expect(next.term! > leader.term!).toBe(true);
      expect(await until(iterator, (state) => state?.value === 'next', 'the next leader')).toEqual({ name, value: 'next', term: next.term });
      expect(await next.resign()).toBe(true);
    } finally {
      stop.abort();
      await Promise.all([crashing.close(), b.close(), watcher.close()]);
    }
  }, 30_000);

  it("an observer whose own session ends keeps reporting changes (its watch moves to the provider's next session)", async () => {
    const [a, watching] = [provider(10_000), provider()];
    const name = `elect-observer-session-${randomUUID()}`;
    const stop = new AbortController();
    try {
      const iterator = watching.observe(name, { signal: stop.signal })[Symbol.asyncIterator]();
      expect(await until(iterator, () => true, 'the current state')).toBeUndefined();
      const first = await a.campaign(name, { value: 'first' });
      await until(iterator, (state) => state?.value === 'first', 'the first leader');
      // The observer's connection goes and never comes back: its session ends at its deadline.
      dropConnectionForTesting(watching);
      const pending = iterator.next();
      expect(await isPending(pending)).toBe(true);
      expect(await first.resign()).toBe(true);
      const second = await a.campaign(name, { value: 'second' });
      // Heard through the watch set in the next session (or the read that session's start makes).
      let state = (await within(pending, 15_000, 'observe to report a change after its session ended')).value;
      if (state?.value !== 'second') state = await until(iterator, (s) => s?.value === 'second', 'the second leader');
      expect(state).toEqual({ name, value: 'second', term: second.term });
      // And the watch now lives in the new session: a resignation is reported too.
      expect(await second.resign()).toBe(true);
      expect(await until(iterator, (s) => s === undefined, 'no leader after the resignation')).toBeUndefined();
    } finally {
      stop.abort();
      await Promise.all([a.close(), watching.close()]);
    }
  }, 30_000);
});
