import { randomUUID } from 'node:crypto';
import { type PostgresLockProvider, createPostgresLockProvider } from '@fencelock/postgres';
import { topology } from '@fencelock/test-infra';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, SpanName, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';

const { postgresUrl } = topology();
const LEADER = { [AttributeName.BACKEND]: 'postgres', [AttributeName.MODE]: 'leader' };

describe('instrumentLockProvider on leader elections of a real PostgreSQL (shared test-infra server)', () => {
  const namespace = `fencelock:otel-election-test:${randomUUID()}:`;
  let operator: pg.Client;
  let otel: OtelHarness;
  let locks: PostgresLockProvider;
  let rival: PostgresLockProvider;

  beforeAll(async () => {
    operator = new pg.Client(postgresUrl);
    operator.on('error', () => undefined);
    // Fail with the remedy rather than with a timeout deep inside a test.
    await operator.connect().catch((error: unknown) => {
      throw new Error(`no PostgreSQL at ${postgresUrl} (${String(error)}): run \`pnpm infra:up\``);
    });
  });
  afterAll(async () => {
    await operator.end();
  });
  beforeEach(() => {
    otel = new OtelHarness();
    locks = createPostgresLockProvider({ connection: postgresUrl, namespace, sessionTtlMs: 5_000 });
    rival = createPostgresLockProvider({ connection: postgresUrl, namespace, sessionTtlMs: 5_000 });
  });
  afterEach(async () => {
    await Promise.all([locks.close(), rival.close()]);
    await otel.shutdown();
  });

  it("counts a campaign waiting behind another session's leader, its election on resign, and its loss with its session", async () => {
    using _ = instrumentLockProvider(locks, { meterProvider: otel.meterProvider, tracerProvider: otel.tracerProvider, holdSpans: true });
    const name = `scheduler:${randomUUID()}`;
    const first = await rival.campaign(name, { value: 'rival' });
    const contended = nextEvent(locks, 'contended', (event) => event.key === name);
    const campaign = locks.campaign(name, { value: 'mine', waitMs: 20_000 });
    await contended;
    let metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT, LEADER)).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);

    expect(await first.resign()).toBe(true);
    const leader = await campaign;
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.CAMPAIGN_WAITER_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT, { ...LEADER, [AttributeName.STATE]: 'held' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { ...LEADER, [AttributeName.ELECTION_OUTCOME]: 'elected' })).toBe(1);
    // The term from the server's durable counter: past the rival's.
    expect(leader.term).toBeGreaterThan(first.term ?? 0n);
    const [acquire] = otel.spans(SpanName.ACQUIRE);
    expect(acquire?.attributes).toMatchObject({ ...LEADER, [AttributeName.CONTENDED]: true, [AttributeName.ELECTION_TERM]: leader.term?.toString() });

    const lost = nextEvent(locks, 'lost', (event) => event.key === name);
    await operator.query('SELECT pg_terminate_backend($1, 5000)', [locks.backendPid]);
    expect((await lost).error.reason).toBe('session-lost');
    metrics = await otel.collect();
    expect(metrics.sum(MetricName.LEADERSHIP_COUNT)).toBe(0);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES, { ...LEADER, [AttributeName.ELECTION_OUTCOME]: 'lost', [AttributeName.LOSS_REASON]: 'session-lost' })).toBe(1);
    expect(metrics.sum(MetricName.LEADERSHIP_CHANGES)).toBe(2);
    const [hold] = otel.spans(SpanName.HOLD);
    expect(hold?.attributes).toMatchObject({ [AttributeName.ELECTION_TERM]: leader.term?.toString(), [AttributeName.OUTCOME]: 'lost', [AttributeName.ERROR_TYPE]: 'LOCK_LOST' });
    // The server agrees: another session is elected.
    const successor = await rival.campaign(name, { value: 'rival', waitMs: 10_000 });
    expect(successor.term).toBeGreaterThan(leader.term ?? 0n);
    await successor.resign();
  });
});
