/**
 * The etcd protocol twin (`src/subjects-protocol-etcd.ts`) must send what `@fencelock/etcd` sends, or
 * its ratios would split the gap to the raw transaction pair wrongly. Both go through etcd3's
 * `KVClient` (one copy of the package): every request of one steady-state cycle is recorded there,
 * with what differs per call or per client named alike (the key, the lease, the owner, revisions),
 * and compared, together with the requests that are not transactions.
 */
import { randomUUID } from 'node:crypto';
import { createEtcdLockProvider } from '@fencelock/etcd';
import { KVClient, LeaseClient } from 'etcd3';
import { describe, expect, it } from 'vitest';
import { sharedAddresses } from '../src/bench-servers.js';
import { ETCD_TWIN_KEY_PREFIX, etcdProtocolTwinSession } from '../src/subjects-protocol-etcd.js';
import { SESSION_TTL_MS } from '../src/subjects.js';

const PROVIDER_PREFIX = 'fencelock-bench-twin-test/';

/** A request as sent, as JSON with its buffers as text and the unique parts named: KEY, LEASE, OWNER, revisions N. */
function normalized(request: unknown, key: string): string {
  const text = JSON.stringify(request ?? null, (_name, value: unknown) => {
    if (typeof value === 'bigint') return `${value}n`;
    if (value !== null && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer') {
      return `buf:${Buffer.from((value as { data: number[] }).data).toString('utf8')}`;
    }
    return value;
  });
  return text
    .replaceAll(PROVIDER_PREFIX, 'PREFIX/')
    .replaceAll(ETCD_TWIN_KEY_PREFIX, 'PREFIX/')
    .replaceAll(key, 'KEY')
    // A waiter key ends in its lease id, in hex.
    .replaceAll(/KEY\/[0-9a-f]+/g, 'KEY/LEASE')
    .replaceAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'OWNER')
    .replaceAll(/"(lease|create_revision|mod_revision|max_create_revision)":"?\d+"?/g, '"$1":"N"');
}

/** A call that named the key: `<client>.<method>`, the normalized request, the type of its deadline (`undefined` if none). */
interface Sent {
  readonly method: string;
  readonly request: string;
  readonly deadline: string;
}

/** Records the KV and lease calls on etcd3's client classes that name `key` while `run` runs. */
async function recorded(key: string, run: () => Promise<void>): Promise<Sent[]> {
  const sent: Sent[] = [];
  const restores: (() => void)[] = [];
  for (const [name, prototype] of [['kv', KVClient.prototype], ['lease', LeaseClient.prototype]] as const) {
    const methods = prototype as unknown as Record<string, unknown>;
    for (const method of Object.getOwnPropertyNames(prototype)) {
      const original = methods[method];
      if (method === 'constructor' || typeof original !== 'function') continue;
      methods[method] = function (this: unknown, request: unknown, options?: { deadline?: unknown }, ...rest: unknown[]): unknown {
        const text = normalized(request, key);
        if (text.includes('KEY')) sent.push({ method: `${name}.${method}`, request: text, deadline: options?.deadline instanceof Date ? 'Date' : typeof options?.deadline });
        return (original as (...args: unknown[]) => unknown).call(this, request, options, ...rest);
      };
      restores.push(() => {
        methods[method] = original;
      });
    }
  }
  try {
    await run();
  } finally {
    for (const restore of restores) restore();
  }
  return sent;
}

/** What the third of three cycles of `cycle` on `key` sends (the first ones set up what a steady state reuses). */
async function steadyCycle(key: string, cycle: () => Promise<void>): Promise<Sent[]> {
  await cycle();
  await cycle();
  return recorded(key, cycle);
}

describe('the etcd protocol twin', () => {
  it('sends the same transactions as @fencelock/etcd on an uncontended acquire + release', async () => {
    const { etcdEndpoints } = sharedAddresses();
    const provider = createEtcdLockProvider({ connection: { hosts: [...etcdEndpoints] }, keyPrefix: PROVIDER_PREFIX, sessionTtlMs: SESSION_TTL_MS });
    const twin = await etcdProtocolTwinSession(etcdEndpoints);
    try {
      const providerKey = `twin-provider-${randomUUID()}`;
      const twinKey = `twin-twin-${randomUUID()}`;
      const fromProvider = await steadyCycle(providerKey, async () => (await provider.acquire(providerKey, { waitMs: 5_000 })).release().then(() => undefined));
      const fromTwin = await steadyCycle(twinKey, async () => (await twin.lock(twinKey, 5_000))());
      expect(fromProvider.map((call) => call.method)).toEqual(['kv.txn', 'kv.txn']);
      expect(fromTwin).toEqual(fromProvider);
      // The comparison names what it must: the waiter key with its lease, the owner in its value.
      expect(fromProvider[0]?.request).toContain('KEY/LEASE');
      expect(fromProvider[0]?.request).toContain('OWNER');
      expect(fromProvider.every((call) => call.deadline === 'number')).toBe(true);
    } finally {
      await Promise.all([provider.close(), twin.close()]);
    }
  });
});
