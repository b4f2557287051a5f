/**
 * The ZooKeeper protocol twin (`src/subjects-protocol-zookeeper.ts`) must send what
 * `@fencelock/zookeeper` sends, or its ratios would split the gap to the raw recipe wrongly. Both use
 * the one copy of node-zookeeper-client, whose ConnectionManager queues every request the client
 * writes: that method is wrapped for the test, and the requests on the test's keys are compared, one
 * steady-state cycle each, by type, order, path shape (unique parts named), watch, data, mode and ACL,
 * with how many of the key's requests were in flight when each was sent (pipelining) and whether the
 * socket was corked (the requests of a turn leave in one write). Server counters (`mntr`) would not
 * do: other suites use the same servers at the same time.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { createZooKeeperLockProvider } from '@fencelock/zookeeper';
import { describe, expect, it } from 'vitest';
import { encodeKeySegment } from '../../zookeeper/src/key-encoding.js';
import { sharedAddresses } from '../src/bench-servers.js';
import { ZOOKEEPER_TWIN_ROOT, zooKeeperProtocolTwinSession } from '../src/subjects-protocol-zookeeper.js';
import { SESSION_TTL_MS } from '../src/subjects.js';

// The root the bench's provider locks under (see `zooKeeper(...)` in `subjects.ts`).
const PROVIDER_ROOT = '/fencelock-bench';

/** A jute request as node-zookeeper-client queues it. */
interface JuteRequest {
  readonly header: { readonly type: number } | null;
  readonly payload: unknown;
}
type Callback = (...args: unknown[]) => void;
interface Manager {
  readonly socket?: { readonly writableCorked?: number } | null;
}
type Queue = (this: Manager, request: JuteRequest, callback?: Callback) => void;

const require = createRequire(import.meta.url);
const ConnectionManager = require('node-zookeeper-client/lib/ConnectionManager.js') as { prototype: { queue: Queue } };
const { OP_CODES } = require('node-zookeeper-client/lib/jute/index.js') as { OP_CODES: Readonly<Record<string, number>> };
// node-zookeeper-client has no CREATE2 of its own; the provider and the twin send it (see the provider's create-with-stat.ts).
const OP_NAMES = new Map([...Object.entries(OP_CODES).map(([name, code]): [number, string] => [code, name]), [15, 'CREATE2']]);

/** One request as sent, before its unique parts are named. */
interface Sent {
  readonly op: string;
  readonly path: string;
  /** Whether the request leaves a watch (reads only). */
  readonly watch: boolean | undefined;
  /** The key's requests sent before it and not answered yet. */
  readonly inFlight: number;
  /** The socket was corked: the request leaves in one write with the rest of its turn's. */
  readonly corked: boolean;
  /** Creates only: the data (`none`, or its size), the create mode and the ACL. */
  readonly data?: string;
  readonly mode?: number;
  readonly acl?: string;
}

interface CreateFields {
  readonly data?: unknown;
  readonly flags?: unknown;
  readonly acl?: readonly { readonly perms: number; readonly id: { readonly scheme: string; readonly id: string } }[];
}

function fieldsOf(payload: unknown): { path?: unknown; watch?: unknown } & CreateFields {
  return typeof payload === 'object' && payload !== null ? payload : {};
}

/**
 * Wraps `ConnectionManager.prototype.queue` until `restore()`: between `begin(key)` and `end()`, every
 * request whose path contains `key` is recorded.
 */
function recordRequests(): { begin(key: string): void; end(): Sent[]; restore(): void } {
  const prototype = ConnectionManager.prototype;
  const original = prototype.queue;
  let key: string | undefined;
  let window = 0;
  let sent: Sent[] = [];
  let inFlight = 0;
  prototype.queue = function (this: Manager, request: JuteRequest, callback?: Callback): void {
    const fields = fieldsOf(request.payload);
    if (key === undefined || typeof fields.path !== 'string' || !fields.path.includes(key) || request.header === null) {
      original.call(this, request, callback);
      return;
    }
    const op = OP_NAMES.get(request.header.type) ?? String(request.header.type);
    const create =
      op === 'CREATE' || op === 'CREATE2'
        ? {
            data: Buffer.isBuffer(fields.data) ? `${fields.data.length} bytes` : 'none',
            mode: Number(fields.flags),
            acl: (fields.acl ?? []).map(({ perms, id }) => `${perms}:${id.scheme}:${id.id}`).join(','),
          }
        : {};
    sent.push({
      op,
      path: fields.path,
      watch: typeof fields.watch === 'boolean' ? fields.watch : undefined,
      inFlight,
      corked: (this.socket?.writableCorked ?? 0) > 0,
      ...create,
    });
    inFlight += 1;
    const mine = window;
    let answered = false;
    original.call(this, request, (...args: unknown[]) => {
      if (!answered && mine === window) inFlight -= 1;
      answered = true;
      callback?.(...args);
    });
  };
  return {
    begin(k) {
      key = k;
      window += 1;
      sent = [];
      inFlight = 0;
    },
    end() {
      key = undefined;
      return sent;
    },
    restore() {
      prototype.queue = original;
    },
  };
}

/**
 * One cycle's requests with their unique parts named: the lock znode `LOCK`, the node the cycle
 * deletes (its own) `LOCK/OWN`, owner ids `UUID`, sequence numbers `SEQ`.
 */
function normalized(sent: readonly Sent[], lockPath: string): Record<string, unknown>[] {
  const own = sent.find((request) => request.op === 'DELETE')?.path;
  return sent.map((request) => ({
    ...request,
    path:
      request.path === own
        ? 'LOCK/OWN'
        : request.path
            .replace(lockPath, 'LOCK')
            .replaceAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UUID')
            .replace(/\d{10}$/, 'SEQ'),
  }));
}

/** Runs three cycles on `key`, recording the last (the steady state: the lock znode exists and is known). */
async function steadyCycle(recorder: ReturnType<typeof recordRequests>, key: string, cycle: () => Promise<void>): Promise<Sent[]> {
  for (let i = 0; i < 2; i++) await cycle();
  recorder.begin(key);
  try {
    await cycle();
    return recorder.end();
  } finally {
    recorder.end();
  }
}

describe('the ZooKeeper protocol twin', () => {
  it('sends the requests of @fencelock/zookeeper on an uncontended acquire and its release', async () => {
    const { zkConnectionString } = sharedAddresses();
    const recorder = recordRequests();
    const provider = createZooKeeperLockProvider({ connectionString: zkConnectionString, sessionTimeoutMs: SESSION_TTL_MS, root: PROVIDER_ROOT });
    const twin = await zooKeeperProtocolTwinSession(zkConnectionString);
    try {
      const providerKey = `twin-zk-provider-${randomUUID()}`;
      const twinKey = `twin-zk-twin-${randomUUID()}`;
      const fromProvider = await steadyCycle(recorder, providerKey, async () => {
        await (await provider.acquire(providerKey, { waitMs: 5_000 })).release();
      });
      const fromTwin = await steadyCycle(recorder, twinKey, async () => {
        await (await twin.lock(twinKey, 5_000))();
      });
      const providerSent = normalized(fromProvider, `${PROVIDER_ROOT}/${encodeKeySegment(providerKey)}`);
      const twinSent = normalized(fromTwin, `${ZOOKEEPER_TWIN_ROOT}/${encodeKeySegment(twinKey)}`);
      expect(twinSent).toEqual(providerSent);
      // What the twin's comment says the provider sends: the create (whose reply carries the stat) and
      // the listing with a watch in one write (the listing before the create is answered), then the delete.
      expect(providerSent.map(({ op, path, watch, inFlight, corked }) => [op, path, watch, inFlight, corked])).toEqual([
        ['CREATE2', 'LOCK/_c_UUID-lock-', undefined, 0, true],
        ['GET_CHILDREN2', 'LOCK', true, 1, true],
        ['DELETE', 'LOCK/OWN', undefined, 0, true],
      ]);
    } finally {
      recorder.restore();
      await Promise.all([provider.close(), twin.close()]);
    }
  });
});
