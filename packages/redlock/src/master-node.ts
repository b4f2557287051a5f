import { RequestTimeoutError, monotonicNow, waitFor, withRequestTimeout, type BackendWarning, type NodeOutcome } from '@fencelock/core/adapter';
import { ScriptRunner, evictionPolicyWarning, extendManyScript, extendReplyFlags, type ClientStatus, type LockClient, type ScriptArgument } from '@fencelock/redis-shared';
import { type RedlockScripts, defineRedlockScripts } from './redlock-scripts.js';

/** What one master answered to one command: a value, or an error (never a throw). */
export type NodeReply<T> =
  | { readonly ok: true; readonly value: T }
  | {
      readonly ok: false;
      readonly error: unknown;
      /**
       * True when the node is known unreachable (not connected, connection refused or closed), as
       * opposed to slow (our per-node timeout fired) or answering with an error.
       */
      readonly unreachable: boolean;
    };

/**
 * Where a master's answer to a vote goes (the round that asked): called once, with whether it did
 * what was asked, or with the request's failure. A callback, not a promise per master: a round asks
 * every master, twice per acquire/release cycle.
 */
export interface VoteSink {
  /** Master `index` of the round answered `yes` (granted, released, removed) or no. */
  answered(index: number, yes: boolean): void;
  /** The request to master `index` failed (an error reply, a dropped connection). */
  failed(index: number, error: unknown): void;
}

/**
 * In `LockError.nodes[i].error`, a master that did not answer within the per-request timeout (slow,
 * paused, partitioned) is reported with core's `RequestTimeoutError`; the request may still be
 * applied later, and the provider releases after it.
 * @deprecated Use `RequestTimeoutError` (re-exported by this package); `instanceof NodeTimeoutError`
 * still works, as this is the same class.
 */
export const NodeTimeoutError = RequestTimeoutError;
/** @deprecated See {@link NodeTimeoutError}. */
export type NodeTimeoutError = RequestTimeoutError;

/**
 * Core's `withRequestTimeout`, plus one poll phase of grace when the timer fires: after an event-loop
 * stall the timer phase runs before pending socket reads, so a reply that is already here is read
 * (setImmediate runs after the poll phase) before the request is called late. Redlock's per-master
 * timeouts are tens of ms, of the order of a stall on a busy host.
 */
export async function boundedRequest<T>(request: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  try {
    return await withRequestTimeout(request, timeoutMs, what);
  } catch (error) {
    if (!(error instanceof RequestTimeoutError)) throw error;
    const late = await Promise.race([
      request.then((value) => ({ value }), () => undefined),
      new Promise<undefined>((resolve) => setImmediate(resolve, undefined)),
    ]);
    if (late === undefined) throw error;
    return late.value;
  }
}

/** One lock of a batched extension: its key on every master, our value, the new TTL. */
export interface ExtendTarget {
  readonly key: string;
  readonly value: string;
  readonly ttlMs: number;
}

/**
 * In `LockError.nodes[i].error`: the master's client was disconnected (reconnecting or closed), so
 * nothing was sent to it. Connection errors from ioredis (refused, closed) mean the same.
 */
export class NodeNotConnectedError extends Error {
  override readonly name = 'NodeNotConnectedError';
}

// States in which the connection is known down: a request would only wait in the offline queue.
const DOWN_STATES: ReadonlySet<ClientStatus> = new Set(['down', 'closed']);
// States of a client that is still making its FIRST connection.
const CONNECTING_STATES: ReadonlySet<ClientStatus> = new Set(['idle', 'connecting']);
/**
 * How long a request waits for a client's first connection (TCP + ready check) before its per-node
 * timeout starts, in ms. Establishing a connection is not part of a master's answer time; without
 * this, the first round of a new provider on a busy machine would time out on every master.
 */
export const FIRST_CONNECT_WAIT_MS = 2_000;

/**
 * One independent Redis master, as Redlock talks to it: every call is bounded by a per-node timeout
 * and resolves a {@link NodeReply}, so one slow or dead master never holds up a round longer than
 * that timeout. Acquire and release are sent bare (see `voteRound`, which bounds a whole round with
 * one timer); the batched owner-checked extension is the shared script of `@fencelock/redis-shared`.
 */
export class MasterNode {
  /** A printable name, e.g. `127.0.0.1:7001`. */
  readonly name: string;
  /** The master's client, through its family's seam. */
  readonly client: LockClient;
  /** True when the provider created the client and must close it. */
  readonly owned: boolean;
  /** This master's plain outcomes as `LockError.nodes` reports them, made once: every round reports one. */
  readonly outcomes: { readonly granted: NodeOutcome; readonly held: NodeOutcome };
  readonly #scripts: RedlockScripts;
  readonly #extendMany: ScriptRunner;
  #firstConnection: Promise<void> | undefined;

  constructor(name: string, client: LockClient, owned: boolean) {
    this.name = name;
    this.client = client;
    this.owned = owned;
    this.outcomes = { granted: Object.freeze({ node: name, outcome: 'granted' }), held: Object.freeze({ node: name, outcome: 'held' }) };
    this.#scripts = defineRedlockScripts(client);
    this.#extendMany = new ScriptRunner(client, extendManyScript);
    if (CONNECTING_STATES.has(client.status)) {
      this.#firstConnection = this.#settled(FIRST_CONNECT_WAIT_MS);
      // A lazy client (`lazyConnect`, a node-redis client nobody connected) would otherwise wait for
      // a first command that we hold back.
      client.connect();
    }
  }

  /** Resolves when the client is ready or has failed to connect, or after `boundMs`. */
  async #settled(boundMs: number): Promise<void> {
    await waitFor({
      deadline: monotonicNow() + boundMs,
      until: (wake) => this.client.onStatus(() => wake()),
    });
    this.#firstConnection = undefined;
  }

  /**
   * While the client makes its first connection: resolves when it is ready or has failed, bounded by
   * {@link FIRST_CONNECT_WAIT_MS}. Establishing a connection is not part of a master's answer time;
   * without this, the first round of a new provider on a busy machine would time out on every master.
   */
  get connecting(): Promise<void> | undefined {
    return this.#firstConnection;
  }

  /** True while the connection is known down: a request would only wait in the offline queue. */
  get down(): boolean {
    return DOWN_STATES.has(this.client.status);
  }

  /**
   * The Redlock acquire step on this master: `SET lock value NX PX ttl` with the line of waiters
   * (see `redlock-scripts.ts`; `args` from `acquireArguments`); tells `sink` whether this master
   * granted it, as answer `index`. Unbounded: the caller's round bounds it.
   */
  acquire(args: readonly ScriptArgument[], sink: VoteSink, index: number): void {
    this.#scripts.acquire(args, sink, index);
  }

  /**
   * Deletes the lock key only if it holds the value, announcing the release and reserving the free
   * key for the waiters while someone waits (`args` from `releaseArguments`; an empty head: neither).
   * Unbounded: the caller's round bounds it. Tells `sink` whether it deleted, as answer `index`.
   */
  release(args: readonly ScriptArgument[], sink: VoteSink, index: number): void {
    this.#scripts.release(args, sink, index);
  }

  /** Takes `value` out of the line of waiters of a lock; tells `sink` whether it was there. Unbounded: the caller's round bounds it. */
  leaveLine(waitersKey: string, value: string, sink: VoteSink, index: number): void {
    this.client.command(['ZREM', waitersKey, value], waitersKey).then(
      (removed) => sink.answered(index, Number(removed) > 0),
      (error: unknown) => sink.failed(index, error),
    );
  }

  /**
   * `PEXPIRE key ttl` only if `key` holds `value`, for each of `locks` in one script call (the shared
   * extend-many script; it never re-creates a key): one flag per lock, in order, true where it was
   * extended. One timeout for the call: with thousands of held locks, a timer or a promise per lock
   * and master would cost more than the requests (see `ExtendRounds`).
   */
  extendMany(locks: readonly ExtendTarget[], timeoutMs: number): Promise<NodeReply<boolean[]>> {
    return this.#call(async () => {
      const keys: string[] = [];
      const args: (string | number)[] = [1];
      for (const lock of locks) {
        keys.push(lock.key);
        args.push(lock.value, lock.ttlMs);
      }
      const call = [keys.length, ...keys, ...args];
      let reply: unknown;
      try {
        reply = await this.#extendMany.run(call);
      } catch (error) {
        // NOSCRIPT (a restarted or flushed master): once more as EVAL. An extension is owner-checked
        // PEXPIRE only, so sending it again can never create a lock.
        reply = await this.#extendMany.runAgain(error, call);
      }
      return extendReplyFlags(reply, locks.length);
    }, timeoutMs);
  }

  /** The value and remaining TTL (`PTTL`, ms; −2 when absent) of `key`, for `inspect`. */
  read(key: string, timeoutMs: number): Promise<NodeReply<{ value: string | null; pttlMs: number }>> {
    return this.#call(
      async () => {
        const [value, pttlMs] = await Promise.all([this.client.command(['GET', key], key), this.client.command(['PTTL', key], key)]);
        return { value: typeof value === 'string' ? value : null, pttlMs: Number(pttlMs) };
      },
      timeoutMs,
    );
  }

  /** This master's eviction-policy warning, if its `maxmemory-policy` is not `noeviction` (see `evictionPolicyWarning`). */
  evictionWarning(timeoutMs: number): Promise<NodeReply<BackendWarning | undefined>> {
    const [server] = this.client.masters();
    return this.#call(() => evictionPolicyWarning((args) => (server === undefined ? Promise.reject(new Error('no server')) : server.command(args)), this.name), timeoutMs);
  }

  /** True while the client's connection is up and ready. */
  get connected(): boolean {
    return this.client.status === 'ready';
  }

  /** Calls `listener` whenever the connection comes up or goes down; returns the unsubscribe function. */
  onConnectionChange(listener: () => void): () => void {
    return this.client.onStatus(() => listener());
  }

  /** Closes the client if the provider owns it; a client it was handed is left alone. */
  close(): void {
    if (this.owned) this.client.disconnect();
  }

  /** `send()` as a {@link NodeReply}; `timeoutMs` undefined when `send` is bounded already. */
  async #call<T>(send: () => Promise<T>, timeoutMs: number | undefined): Promise<NodeReply<T>> {
    if (this.#firstConnection !== undefined) await this.#firstConnection;
    if (this.down) {
      return { ok: false, error: new NodeNotConnectedError(`${this.name} is not connected (${this.client.status})`), unreachable: true };
    }
    try {
      const pending = Promise.resolve().then(send);
      return { ok: true, value: await (timeoutMs === undefined ? pending : boundedRequest(pending, timeoutMs, this.name)) };
    } catch (error) {
      const unreachable = !(error instanceof RequestTimeoutError) && this.client.status !== 'ready';
      return { ok: false, error, unreachable };
    }
  }
}
