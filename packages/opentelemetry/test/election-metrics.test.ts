import { randomUUID } from 'node:crypto';
import { MemoryElections, MemoryLockProvider, MemoryLockStore, isLockError } from '@fencelock/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const LEADER = { [AttributeName.BACKEND]: 'memory', [AttributeName.MODE]: 'leader' };

function uniqueName(name: string): string {
  return `otel-election:${name}:${randomUUID()}`;
}

describe('instrumentLockProvider on leader elections (MemoryLockProvider)', () => {
  let otel: OtelHarness;
  let store: MemoryLockStore;
  let locks: MemoryLockProvider;
  let rival: MemoryLockProvider;

  beforeEach(() => {
    otel = new OtelHarness();
    store = new MemoryLockStore();
    // Two providers on one store: two processes campaigning in the same elections.
    locks = new MemoryLockProvider({ store });
    rival = new MemoryLockProvider({ store });
  });

  afterEach(async () => {
    await Promise.all([locks.close(), rival.close()]);
    await otel.shutdown();
  });

  it('counts a leadership won, a campaign waiting behind it, the hand-over on resign, and the changes', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const name = uniqueName('handover');
    const first = await locks.campaign(name, { value: 'host-a' });
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT, { ...LEADER, [AttributeName.STATE]: 'held' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { ...LEADER, [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(1);
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(0);

    // A second campaigner of this process waits in line behind the first.
    const contended = nextEvent(locks, 'contended', (event) => event.key === name);
    const second = locks.campaign(name, { value: 'host-b' });
    await contended;
    // A lock and a semaphore waiting on the same name are not campaigns.
    const lockHolder = await locks.acquire(name);
    const lockContended = nextEvent(locks, 'contended', (event) => event.key === name && event.mode === 'exclusive');
    const lockWaiter = locks.acquire(name, { waitMs: 10_000 });
    await lockContended;
    const permit = await locks.acquireSemaphore(name, { limit: 1 });
    const semaphoreContended = nextEvent(locks, 'contended', (event) => event.key === name && event.mode === 'semaphore');
    const semaphoreWaiter = locks.acquireSemaphore(name, { limit: 1, waitMs: 10_000 });
    await semaphoreContended;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT, LEADER)).toBe(1);
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(1);
    expect(metrics.sum(MetricName.SEMAPHORE_WAITER_COUNT)).toBe(1);
    // Leaderships only: the lock and the permit of the same name are not leaderships.
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(1);
    // A leadership is a hold too, in the lock count with mode `leader`.
    expect(metrics.sum(MetricName.LOCK_COUNT, LEADER)).toBe(1);

    expect(await first.resign()).toBe(true);
    const next = await second;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(2);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { ...LEADER, [AttributeName.ELECTION_OUTCOME]: 'resigned' })).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { ...LEADER, [AttributeName.CONTENDED]: true }).count).toBe(1);

    await next.resign();
    // A second resign emits nothing and must not count twice.
    expect(await next.resign()).toBe(false);
    await lockHolder.release();
    await (await lockWaiter).release();
    await permit.release();
    await (await semaphoreWaiter).release();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LOCK_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'resigned' })).toBe(2);
    // Exactly these series: elected and resigned, nothing for the locks and permits.
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(4);
  });

  it('counts a campaign waiting behind another process, one that times out, and a tryCampaign declined', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider });
    const name = uniqueName('waiting');
    const leader = await rival.campaign(name, { value: 'rival' });
    const contended = nextEvent(locks, 'contended', (event) => event.key === name);
    const waiting = locks.campaign(name, { value: 'mine' });
    await contended;
    expect((await otel.collect()).sum(MetricName.CAMPAIGN_WAITER_COUNT, LEADER)).toBe(1);

    // A campaign that waits behind the first and runs out, and a tryCampaign that finds a leader,
    // each end their own wait: the first campaign is still counted.
    const timedOut = await locks.campaign(name, { value: 'late', waitMs: 20 }).catch((reason: unknown) => reason);
    expect(isLockError(timedOut, 'LOCK_TIMEOUT')).toBe(true);
    expect(await locks.tryCampaign(name, { value: 'try' })).toBeUndefined();
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(1);
    expect(metrics.sum(MetricName.CONTENTIONS, LEADER)).toBe(3);
    expect(metrics.sum(MetricName.TIMEOUTS, LEADER)).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(0);

    await leader.resign();
    const elected = await waiting;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT, { [AttributeName.STATE]: 'held' })).toBe(1);
    expect(metrics.histogram(MetricName.ACQUIRE_DURATION, { ...LEADER, [AttributeName.OUTCOME]: 'declined' }).count).toBe(1);
    // Ours only: the rival's leadership and resignation are another process's.
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(1);
    await elected.resign();
  });

  it('counts a leadership lost when its record is deleted, with the loss reason, and elects the next', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider, holdSpans: true });
    const name = uniqueName('deleted');
    const lost = nextEvent(locks, 'lost', (event) => event.key === name);
    const leader = await locks.campaign(name, { value: 'host-a' });
    const contended = nextEvent(locks, 'contended', (event) => event.key === name);
    const successor = locks.campaign(name, { value: 'host-b' });
    await contended;
    expect(MemoryElections.of(store).deleteLeader(name)).toBe(1);
    const event = await lost;
    expect(event.error.reason).toBeDefined();
    expect(leader.signal.aborted).toBe(true);
    const next = await successor;
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { ...LEADER, [AttributeName.ELECTION_OUTCOME]: 'lost', [AttributeName.LOSS_REASON]: event.error.reason })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'lost' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(2);
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(1);
    expect(metrics.sum(MetricName.LOSSES, LEADER)).toBe(1);

    // A resign after the loss finds nothing: no change and no count below zero.
    expect(await leader.resign()).toBe(false);
    await next.resign();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.ELECTION_OUTCOME]: 'resigned' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(4);

    const holds = otel.spans(SpanName.HOLD);
    expect(holds.map((span) => [span.attributes[AttributeName.ELECTION_TERM], span.attributes[AttributeName.OUTCOME]])).toEqual([
      [leader.term?.toString(), 'lost'],
      [next.term?.toString(), 'released'],
    ]);
    expect(holds[0]?.attributes[AttributeName.ERROR_TYPE]).toBe('LOCK_LOST');
  });

  it('puts the term on campaign and leadership spans, the name only with recordKeys, and never the value', async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider, holdSpans: true });
    const name = uniqueName('spans');
    const value = `secret-${randomUUID()}`;
    const leader = await locks.campaign(name, { value });
    await leader.resign();
    const lock = await locks.acquire(uniqueName('lock'));
    await lock.release();

    expect(leader.term).toBeDefined();
    const [acquire, lockAcquire] = otel.spans(SpanName.ACQUIRE);
    expect(acquire?.attributes).toMatchObject({
      ...LEADER,
      [AttributeName.OUTCOME]: 'acquired',
      [AttributeName.ELECTION_TERM]: leader.term?.toString(),
      [AttributeName.FENCING_TOKEN]: leader.term?.toString(),
      [AttributeName.OWNER_ID]: leader.ownerId,
    });
    expect(acquire?.attributes[AttributeName.KEY]).toBeUndefined();
    expect(lockAcquire?.attributes[AttributeName.ELECTION_TERM]).toBeUndefined();
    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.attributes).toMatchObject({ ...LEADER, [AttributeName.ELECTION_TERM]: leader.term?.toString(), [AttributeName.OUTCOME]: 'released' });
    expect(hold?.ended).toBe(true);
    // The value may be sensitive (a host, a URL): it is in no span and no metric.
    const everything = JSON.stringify([
      otel.spans().map((span) => span.attributes),
      (await otel.collect()).metrics.map((metric) => metric.dataPoints.map((point) => point.attributes)),
    ]);
    expect(everything).not.toContain(value);
    // Nor the term on any metric: one series per election would never end.
    expect(everything.split(AttributeName.ELECTION_TERM)).toHaveLength(3);
  });

  it('records the name with recordKeys, and zeroes leaderships and waiting campaigns at close()', async () => {
    const instrumentation = instrumentLockProvider(locks, {
      meterProvider: otel.meterProvider,
      tracerProvider: otel.tracerProvider,
      recordKeys: (key) => key.split(':')[1],
    });
    const name = uniqueName('keys');
    const leader = await locks.campaign(name, { value: 'a' });
    const contended = nextEvent(locks, 'contended', (event) => event.key === name);
    const waiter = locks.campaign(name, { value: 'b' });
    await contended;
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT, { [AttributeName.KEY]: 'keys' })).toBe(1);
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT, { [AttributeName.KEY]: 'keys' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { [AttributeName.KEY]: 'keys', [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(1);
    expect(otel.spans(SpanName.ACQUIRE)[0]?.attributes[AttributeName.KEY]).toBe('keys');
    instrumentation.close();
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(0);
    await leader.resign();
    await (await waiter).resign();
    // Nothing is recorded after close(): the counts stay at zero and no change is added.
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(1);
  });
});
