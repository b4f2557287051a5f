/**
 * The protocol twin of `@fencelock/zookeeper`: a raw node-zookeeper-client loop that sends exactly
 * the requests the provider sends on an uncontended `acquire(key, { waitMs })` and its `release()`
 * once the key is warm (its lock znode exists and the provider has learnt the key's sequence), with
 * no library around them. Beside the provider and the raw recipe (`zookeeper/raw-recipe`) it splits
 * the gap between them in two: twin ÷ raw is what the protocol costs (Curator's protected names, the
 * stat read with its watch that gives the fencing token, the watch notification when the node goes),
 * fencelock ÷ twin is what the library adds (validation, the session keeper, the handle with its
 * validity and loss signal, events).
 *
 * What the provider sends per cycle, and so the twin (`test/protocol-twin-zookeeper.test.ts` records
 * both at the client and compares them):
 * - acquire, in one write: CREATE `<lock znode>/_c_<uuid>-lock-` (EPHEMERAL_SEQUENTIAL, open ACL, no
 *   data), then GET_CHILDREN2 of the lock znode (no watch), then GET_DATA with a watch of the node the
 *   create is expected to make (the key's last sequence + its step). The two reads are sent before
 *   the create is answered; the server answers a session's requests in order, so both see the node.
 *   A wrong guess costs the provider a GET_DATA with a watch of the real node once the create is
 *   answered, and no guess on the next acquisition: the twin does the same.
 * - release, in a write of its own: DELETE of the node (any version). The watch the stat read left
 *   costs one notification from the server, no request.
 *
 * Writes are coalesced as the provider's session does it (core's `TurnCork` without its first-at-once
 * mode): the socket is corked at a turn's first request and uncorked at the end of the turn.
 */
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
// The naming of the lock znode and of contender nodes is internal to the adapter: read from its
// source, so that the twin names its nodes as the provider does (the bench lives in the same repository).
import { ownNodePrefix } from '../../zookeeper/src/contender-names.js';
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
// ZooKeeper's sequence is a signed 32-bit counter printed with 10 digits; the provider's sequence
// hints learn a step of up to this many between two of its creates (see `sequence-hints.ts`).
const SEQUENCE_DIGITS = 10;
const MAX_SEQUENCE = 2_147_483_647;
const MAX_LEARNT_STEP = 4;

// Curator's protected name of an exclusive contender (`_c_<uuid>-lock-`), split around the uuid once
// here so that no adapter code runs in a cycle.
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
  getChildren(path: string, callback: (error: Error | null, children: string[]) => void): void;
  getData(path: string, watcher: () => void, callback: (error: Error | null, data: Buffer | undefined, stat: unknown) => void): void;
  remove(path: string, version: number, callback: (error: Error | null) => void): void;
  /** Internal: where the socket the requests are written on lives. */
  readonly connectionManager?: { readonly socket?: CorkableSocket | null };
}

interface ZkModule {
  createClient(connectionString: string, options: { sessionTimeout: number; spinDelay: number; retries: number }): ZkClient;
  CreateMode: { EPHEMERAL_SEQUENTIAL: number };
  ACL: { OPEN_ACL_UNSAFE: readonly unknown[] };
  Exception: { NO_NODE: number };
}
const zookeeper = createRequire(import.meta.url)('node-zookeeper-client') as ZkModule;

/** What the twin knows of one key, as the provider's sequence hints do. */
interface KeyState {
  /** The lock znode: `<root>/<encoded key>`. */
  readonly parent: string;
  /** The sequence of our last node on it. */
  last: number | undefined;
  /** How far the counter moved between our last two creates. */
  step: number;
  /** The 10 digits our next node will probably get; `undefined`: no guess (none yet, or the last one missed). */
  next: string | undefined;
}

// The watcher every stat read leaves on our node. The notification (the node deleted by our own
// release) needs no handling, as the provider's watch is stopped before its release.
const ignoreNotification = (): void => undefined;

const noop = (): void => undefined;

function isNoNode(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === zookeeper.Exception.NO_NODE;
}

/** A session of the twin on `connectionString` (resolves once connected). */
export function zooKeeperProtocolTwinSession(connectionString: string): Promise<LockSession> {
  const client = zookeeper.createClient(connectionString, { sessionTimeout: SESSION_TIMEOUT_MS, spinDelay: SPIN_DELAY_MS, retries: 0 });
  const { OPEN_ACL_UNSAFE: acl } = zookeeper.ACL;
  const mode = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;
  const keys = new Map<string, KeyState>();

  // A turn's requests leave in one write, as the provider's session writes them: the socket is
  // corked before the turn's first request and uncorked once the turn is over.
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
  const readStat = (path: string): Promise<unknown> => call<unknown>((done) => client.getData(path, ignoreNotification, (error, _data, stat) => done(error, stat)));

  /** The lock znode of `key`, made once (the provider's steady state: it exists). */
  const warm = async (key: string): Promise<KeyState> => {
    const parent = `${ZOOKEEPER_TWIN_ROOT}/${encodeKeySegment(key)}`;
    await call<string>((done) => client.mkdirp(parent, done));
    const state: KeyState = { parent, last: undefined, step: 1, next: undefined };
    keys.set(key, state);
    return state;
  };

  return new Promise<LockSession>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('ZooKeeper connect timed out')), CONNECT_TIMEOUT_MS);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve({
        async lock(key) {
          const state = keys.get(key) ?? (await warm(key));
          const { parent, next } = state;
          const prefix = `${parent}/${NAME_HEAD}${randomUUID()}${NAME_TAIL}`;
          const guessed = next === undefined ? undefined : `${prefix}${next}`;
          // The create and the reads behind it, in one write, before the create is answered.
          const creating = call<string>((done) => client.create(prefix, acl, mode, done));
          const listing = call<string[]>((done) => client.getChildren(parent, done));
          const guessedStat = guessed === undefined ? undefined : readStat(guessed);
          listing.catch(noop);
          guessedStat?.catch(noop);
          const path = await creating;
          // A wrong guess (or none): the stat of the real node, asked for now.
          const stat = path === guessed && guessedStat !== undefined ? guessedStat : readStat(path);
          stat.catch(noop);
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
          try {
            await stat;
          } catch (error) {
            if (!isNoNode(error)) throw error;
            throw new Error(`ZooKeeper protocol twin: the node of lock ${key} disappeared`);
          }
          // The next guess, as the provider's sequence hints make it.
          const current = Number(sequence);
          const moved = state.last === undefined ? 1 : current - state.last;
          if (moved >= 1 && moved <= MAX_LEARNT_STEP) state.step = moved;
          state.last = current;
          const missed = guessed !== undefined && path !== guessed;
          state.next = missed || current + state.step > MAX_SEQUENCE ? undefined : String(current + state.step).padStart(SEQUENCE_DIGITS, '0');
          return async () => {
            await remove(path);
          };
        },
        async close() {
          for (const { parent } of keys.values()) await remove(parent).catch(noop);
          client.close();
        },
      });
    });
    client.connect();
  });
}
