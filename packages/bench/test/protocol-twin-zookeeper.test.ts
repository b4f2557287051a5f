/**
 * The ZooKeeper protocol twin (`src/subjects-protocol-zookeeper.ts`) must send what
 * `@fencelock/zookeeper` sends, or its ratios would split the gap to the raw recipe wrongly. Both use
 * the one copy of node-zookeeper-client, whose ConnectionManager queues every request the client
 * writes: that method is wrapped for the test, and the requests on the test's keys are compared, one
 * steady-state cycle each, by the bytes each is written as (type, order, path shape with unique parts
 * named, watch, data, mode and ACL),
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

/** A request as node-zookeeper-client queues it. */
interface JuteRequest {
  readonly header: { type: number } | null;
  toBuffer(): Buffer;
}
type Callback = (...args: unknown[]) => void;
interface Manager {
  readonly socket?: { readonly writableCorked?: number } | null;
}
type Queue = (this: Manager, request: JuteRequest, callback?: Callback) => void;

const require = createRequire(import.meta.url);
const ConnectionManager = require('node-zookeeper-client/lib/ConnectionManager.js') as { prototype: { queue: Queue } };
const { OP_CODES } = require('node-zookeeper-client/lib/jute/index.js') as { OP_CODES: Readonly<Record<string, number>> };
// node-zookeeper-client has no CREATE2 of its own; the provider and the twin send it (see the provider's wire-requests.ts).
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

/**
 * A request's bytes as written (`toBuffer`), read back: its opcode, path and what a comparison needs;
 * `undefined` for a request without a path (a ping).
 */
function decoded(bytes: Buffer): Omit<Sent, 'inFlight' | 'corked'> | undefined {
  // length, xid, opcode, then the path (a jute ustring: its byte length, its bytes).
  if (bytes.length < 16) return undefined;
  const opcode = bytes.readInt32BE(8);
  const pathBytes = bytes.readInt32BE(12);
  const path = bytes.toString('utf8', 16, 16 + pathBytes);
  let at = 16 + pathBytes;
  const op = OP_NAMES.get(opcode) ?? String(opcode);
  if (op === 'CREATE' || op === 'CREATE2') {
    const dataBytes = bytes.readInt32BE(at);
    at += 4 + Math.max(0, dataBytes);
    const entries: string[] = [];
    const count = bytes.readInt32BE(at);
    at += 4;
    for (let i = 0; i < count; i += 1) {
      const perms = bytes.readInt32BE(at);
      const schemeBytes = bytes.readInt32BE(at + 4);
      const scheme = bytes.toString('utf8', at + 8, at + 8 + schemeBytes);
      const idBytes = bytes.readInt32BE(at + 8 + schemeBytes);
      const id = bytes.toString('utf8', at + 12 + schemeBytes, at + 12 + schemeBytes + idBytes);
      entries.push(`${perms}:${scheme}:${id}`);
      at += 12 + schemeBytes + idBytes;
    }
    return { op, path, watch: undefined, data: dataBytes < 0 ? 'none' : `${dataBytes} bytes`, mode: bytes.readInt32BE(at), acl: entries.join(',') };
  }
  // The reads end in their watch flag.
  const watch = op === 'GET_CHILDREN2' || op === 'GET_CHILDREN' || op === 'GET_DATA' || op === 'EXISTS' ? bytes.readUInt8(at) === 1 : undefined;
  return { op, path, watch };
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
    if (key === undefined || request.header === null) {
      original.call(this, request, callback);
      return;
    }
    // The bytes the request will be written as (its xid is set later: it is not compared). Read
    // before the request is queued: a CREATE2's header says GET_DATA once it has been written.
    const type = request.header.type;
    const seen = decoded(request.toBuffer());
    request.header.type = type;
    if (seen === undefined || !seen.path.includes(key)) {
      original.call(this, request, callback);
      return;
    }
    sent.push({ ...seen, inFlight, corked: (this.socket?.writableCorked ?? 0) > 0 });
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
