/**
 * The protocol twin of `@fencelock/zookeeper`: a raw node-zookeeper-client loop that sends exactly
 * the requests the provider sends on an uncontended `acquire(key, { waitMs })` and its `release()`
 * once the key is warm (its lock znode exists and the provider has learnt the key's sequence), with
 * no library around them. Beside the provider and the raw recipe (`zookeeper/raw-recipe`) it splits
 * the gap between them in two: twin ÷ raw is what the protocol costs (Curator's protected names, the
 * stat in the create's reply that gives the fencing token, the listing's watch and its notification),
 * fencelock ÷ twin is what the library adds (validation, the session keeper, the handle with its
 * validity and loss signal, events), less what its own encoding of the requests saves: the twin
 * sends CREATE2 as the provider does (the client has none), and the listing and the delete through
 * the client's own methods, as raw client code would.
 *
 * What the provider sends per cycle, and so the twin (`test/protocol-twin-zookeeper.test.ts` records
 * both at the client and compares them):
 * - acquire, in one write: CREATE2 `<lock znode>/_c_<uuid>-lock-` (EPHEMERAL_SEQUENTIAL, open ACL, no
 *   data), whose reply carries the new node's stat (its czxid is the fencing token), then
 *   GET_CHILDREN2 of the lock znode with a watch (the holder's watch until a contender comes). The
 *   listing is sent before the create is answered; the server answers a session's requests in order,
 *   so it sees the node.
 * - release, in a write of its own: DELETE of the node (any version). The listing's watch costs one
 *   notification from the server, no request.
 *
 * Writes are coalesced as the provider's session does it (core's `TurnCork` without its first-at-once
 * mode): the socket is corked at a turn's first request and uncorked at the end of the turn.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
// The naming of the lock znode and of contender nodes is internal to the adapter: read from its
// source, so that the twin names its nodes as the provider does (the bench lives in the same repository).
import { ownNodePrefix } from '../../zookeeper/src/contender-names.js';
import { type CreatedCallback, type WireRequests, wireRequestsOn } from '../../zookeeper/src/wire-requests.js';
import { encodeKeySegment } from '../../zookeeper/src/key-encoding.js';
import type { LockSession } from './subjects.js';

/** Where the twin's lock znodes live: a root of its own, apart from the provider's `/fencelock-bench`. */
export const ZOOKEEPER_TWIN_ROOT = '/fencelock-bench-twin';

// The session the bench's provider opens (SESSION_TTL_MS in subjects.ts, its default spin delay, no
// retries by the client): a request goes on the wire alike whatever they are, but the connection is
// then the same as the provider's.
const SESSION_TIMEOUT_MS = 10_000;
const SPIN_DELAY_MS = 200;
const CONNECT_TIMEOUT_MS = 10_000;
// ZooKeeper prints a node's sequence number with 10 digits.
const SEQUENCE_DIGITS = 10;

// node-zookeeper-client's types, as the provider's module takes them (the bench does not depend on them).
type ZooKeeperClient = Parameters<typeof wireRequestsOn>[0];
type Acl = Parameters<WireRequests['create2']>[2];
type Stat = Parameters<CreatedCallback>[2];

const OWNER_MARK = '\u0000';
const [NAME_HEAD = '', NAME_TAIL = ''] = ownNodePrefix('curator', OWNER_MARK, 'exclusive').prefix.split(OWNER_MARK);

/** A socket as node-zookeeper-client's ConnectionManager holds it (a `net.Socket`). */
interface CorkableSocket {
  cork(): void;
  uncork(): void;
}

/** The node-zookeeper-client calls the twin makes (the bench does not depend on its types). */
interface ZkClient {
  connect(): void;
  close(): void;
  once(event: 'connected', listener: () => void): unknown;
  create(path: string, acl: readonly unknown[], mode: number, callback: (error: Error | null, path: string) => void): void;
  mkdirp(path: string, callback: (error: Error | null, path: string) => void): void;
  getChildren(path: string, watcher: () => void, callback: (error: Error | null, children: string[]) => void): void;
  remove(path: string, version: number, callback: (error: Error | null) => void): void;
  /** Internal: where the socket the requests are written on lives. */
  readonly connectionManager?: { readonly socket?: CorkableSocket | null };
}

interface ZkModule {
  createClient(connectionString: string, options: { sessionTimeout: number; spinDelay: number; retries: number }): ZkClient;
  CreateMode: { EPHEMERAL_SEQUENTIAL: number };
  ACL: { OPEN_ACL_UNSAFE: Acl };
}
const zookeeper = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;

const ignoreNotification = (): void => undefined;

const noop = (): void => undefined;

/** A session of the twin on `connectionString` (resolves once connected). */
export function zooKeeperProtocolTwinSession(connectionString: string): Promise<LockSession> {
  const client = zookeeper.createClient(connectionString, { sessionTimeout: SESSION_TIMEOUT_MS, spinDelay: SPIN_DELAY_MS, retries: 0 });
  const { OPEN_ACL_UNSAFE: acl } = zookeeper.ACL;
  const mode = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;
  // The lock znodes made so far (the provider's steady state: they exist).
  const parents = new Map<string, string>();
  // node-zookeeper-client has no CREATE2: sent as the provider sends it. The listing and the delete
  // go through the client's own methods, as a raw client's code would send them.
  const wire: WireRequests | undefined = wireRequestsOn(client as unknown as ZooKeeperClient);
  if (wire === undefined) throw new Error('ZooKeeper protocol twin: this node-zookeeper-client cannot send CREATE2');

  let corked: CorkableSocket | undefined;
  const endTurn = (): void => {
    const socket = corked;
    corked = undefined;
    socket?.uncork();
  };
  const call = <T>(start: (done: (error: Error | null, result: T) => void) => void): Promise<T> => {
    const socket = client.connectionManager?.socket;
    if (corked === undefined && socket !== undefined && socket !== null) {
      socket.cork();
      corked = socket;
      process.nextTick(endTurn);
    }
    return new Promise<T>((resolve, reject) => start((error, result) => (error ? reject(error) : resolve(result))));
  };
  const remove = (path: string): Promise<undefined> => call<undefined>((done) => client.remove(path, -1, (error) => done(error, undefined)));

  /** The lock znode of `key`, made once. */
  const warm = async (key: string): Promise<string> => {
    const parent = `${ZOOKEEPER_TWIN_ROOT}/${encodeKeySegment(key)}`;
    await call<string>((done) => client.mkdirp(parent, done));
    parents.set(key, parent);
    return parent;
  };

  return new Promise<LockSession>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('ZooKeeper connect timed out')), CONNECT_TIMEOUT_MS);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve({
        async lock(key) {
          const parent = parents.get(key) ?? (await warm(key));
          const prefix = `${parent}/${NAME_HEAD}${randomUUID()}${NAME_TAIL}`;
          // The create and the listing behind it, in one write, before the create is answered.
          const creating = call<{ path: string; stat: Stat | undefined }>((done) =>
            wire.create2(prefix, undefined, acl, mode, (error, path, stat) => done(error as Error | null, { path, stat })),
          );
          const listing = call<string[]>((done) => client.getChildren(parent, ignoreNotification, done));
          listing.catch(noop);
          const { path, stat } = await creating;
          const children = await listing;
          const sequence = path.slice(-SEQUENCE_DIGITS);
          // Held when no contender precedes ours (every contender name ends in its 10-digit sequence).
          for (const child of children) {
            const other = child.slice(-SEQUENCE_DIGITS);
            if (other < sequence && /^\d+$/.test(other)) {
              await remove(path);
              throw new Error(`ZooKeeper protocol twin: lock ${key} is held`);
            }
          }
          // The token, as the provider takes it.
          if (stat?.czxid.readBigInt64BE(0) === undefined) throw new Error(`ZooKeeper protocol twin: no stat for lock ${key}`);
          return async () => {
            await remove(path);
          };
        },
        async close() {
          for (const parent of parents.values()) await remove(parent).catch(noop);
          client.close();
        },
      });
    });
    client.connect();
  });
}
