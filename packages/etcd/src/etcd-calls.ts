import {
  type Etcd3,
  type IDeleteRangeResponse,
  type IKeyValue,
  type IRangeRequest,
  type IRangeResponse,
  type ITxnRequest,
  type ITxnResponse,
  type Namespace,
  type IOptions,
  type Watcher,
  GRPCUnavailableError,
  castGrpcError,
} from 'etcd3';
import { withRequestTimeout } from '@fencelock/core/adapter';
import { probeTls } from './tls-probe.js';

// With no key prefix: outside every lock's range (it starts with NUL) and never written by fencelock.
const UNPREFIXED_STREAM_ANCHOR = Buffer.from('\u0000fencelock-watch-stream', 'utf8');

/**
 * The few etcd RPCs the lock recipe needs, each with a per-request deadline: etcd3 sets none, and a
 * request to a paused member would otherwise wait forever. A request that times out on the client
 * may still be applied later; callers clean up with that in mind.
 */
export class EtcdCalls {
  readonly client: Etcd3;
  readonly #requestTimeoutMs: number;
  readonly #streamAnchor: Buffer;
  // The options of a client the provider opened: what a TLS diagnosis needs.
  readonly #connection: IOptions | undefined;
  #holders: Namespace | undefined;

  /**
   * `keyPrefix` names the key the holders' watch stream stays open on: the prefix itself, a key no
   * lock uses (every lock's keys are longer) and one a role limited to the prefix may read.
   */
  constructor(client: Etcd3, requestTimeoutMs: number, keyPrefix: string, connection?: IOptions) {
    this.client = client;
    this.#connection = connection;
    this.#requestTimeoutMs = requestTimeoutMs;
    this.#streamAnchor = keyPrefix === '' ? UNPREFIXED_STREAM_ANCHOR : Buffer.from(keyPrefix, 'utf8');
  }

  // grpc deadlines are wall-clock times (a Date, or its ms as a number, which spares a Date per
  // request); this is only a timeout, never a validity computation.
  #options(): { deadline: number } {
    return { deadline: Date.now() + this.#requestTimeoutMs };
  }

  range(request: IRangeRequest): Promise<IRangeResponse> {
    return this.client.kv.range(request, this.#options());
  }

  txn(request: ITxnRequest): Promise<ITxnResponse> {
    return this.client.kv.txn(request, this.#options());
  }

  deleteKey(key: Buffer): Promise<IDeleteRangeResponse> {
    return this.client.kv.deleteRange({ key }, this.#options());
  }

  /**
   * After a failed connection: what is wrong with the TLS certificates, if that is why (see
   * `probeTls`); `undefined` otherwise, or for a client we were given (its options are its own).
   */
  async certificateProblem(error: unknown): Promise<string | undefined> {
    if (this.#connection === undefined || !(error instanceof GRPCUnavailableError)) return undefined;
    return probeTls(this.#connection, this.#requestTimeoutMs);
  }

  /** Grants lease `id` (chosen by us, so that a grant lost in flight can still be revoked). */
  async leaseGrant(id: string, ttlSeconds: number): Promise<{ ttlSeconds: number }> {
    const response = await this.client.leaseClient.leaseGrant({ ID: id, TTL: ttlSeconds }, this.#options());
    if (response.error) throw new Error(`lease grant refused: ${response.error}`);
    return { ttlSeconds: Number(response.TTL) };
  }

  async leaseRevoke(id: string): Promise<void> {
    await this.client.leaseClient.leaseRevoke({ ID: id }, this.#options());
  }

  /** Remaining TTL of a lease in seconds; `-1` when it does not exist. */
  async leaseTimeToLive(id: string): Promise<number> {
    const response = await this.client.leaseClient.leaseTimeToLive({ ID: id }, this.#options());
    return Number(response.TTL);
  }

  /**
   * One keepalive for `id` on a stream of its own, bounded by `timeoutMs` (stream set-up included).
   * Resolves the granted TTL in seconds; `0` (or less) means etcd no longer knows the lease.
   */
  async leaseKeepAliveOnce(id: string, timeoutMs = this.#requestTimeoutMs): Promise<number> {
    let stream: Awaited<ReturnType<Etcd3['leaseClient']['leaseKeepAlive']>> | undefined;
    let abandoned = false;
    const exchange = (async () => {
      const opened = await this.client.leaseClient.leaseKeepAlive({ deadline: new Date(Date.now() + timeoutMs) });
      stream = opened;
      const reply = new Promise<number>((resolve, reject) => {
        opened.on('data', (response) => resolve(Number(response.TTL)));
        // Stays attached after the exchange: a cancelled stream reports CANCELLED as an error.
        opened.on('error', (error) => reject(castGrpcError(error)));
        opened.on('end', () => reject(new Error('lease keepalive stream ended without a reply')));
      });
      if (abandoned) opened.cancel();
      else opened.write({ ID: id });
      return reply;
    })();
    try {
      const ttlSeconds = await withRequestTimeout(exchange, timeoutMs, `etcd lease keepalive`);
      stream?.end();
      return ttlSeconds;
    } catch (error) {
      abandoned = true;
      stream?.cancel();
      throw error;
    }
  }

  /** Reads `key` (a linearizable range): its key-value, if it exists, and the revision the read saw. */
  async readKey(key: Buffer): Promise<{ kv: IKeyValue | undefined; revision: bigint }> {
    const response = await this.range({ key });
    return { kv: response.kvs[0], revision: BigInt(response.header.revision) };
  }

  /**
   * A watch on every change of `key` from `fromRevision` on, on the holders' watch stream. Not
   * awaited: etcd3 attaches it in the background, and etcd replays what it missed from that revision.
   */
  watchKey(key: Buffer, fromRevision: bigint): Watcher {
    return this.#holderStream().watch().key(key).startRevision(fromRevision.toString()).watcher();
  }

  /**
   * A watch on every change of every key that starts with `prefix`, from the current revision, on
   * the holders' watch stream (long-lived watches, kept apart from the waiters' hand-offs). Not
   * awaited: etcd3 attaches it in the background and emits `connected` once etcd confirmed it.
   */
  watchPrefix(prefix: Buffer): Watcher {
    return this.#holderStream().watch().prefix(prefix).watcher();
  }

  /**
   * A watch on a key nobody writes, that keeps the holders' watch stream open: etcd3 closes a stream
   * when its last watcher is cancelled, and the next watch would then open a new one (holds that
   * come and go would pay for a stream set-up each).
   */
  holdWatchStream(): Watcher {
    return this.#holderStream().watch().key(this.#streamAnchor).watcher();
  }

  // The holders' watches multiplex over one watch stream of their own: a second etcd3 namespace (no
  // prefix) on the same connections. etcd3 attaches watchers to a stream one at a time, and a burst
  // of new holds must not queue a waiter's watch, which a hand-off waits on, behind thousands of them.
  #holderStream(): Namespace {
    this.#holders ??= this.client.namespace('');
    return this.#holders;
  }

  /**
   * A watch on the deletion of `key`, from the current revision. Resolves once etcd confirmed it
   * (or rejects after the request timeout), so a re-check made after it cannot miss the deletion.
   * `onChange` runs on the deletion and on any watch error (the caller re-checks either way).
   */
  watchDeletion(key: Buffer, onChange: () => void): Promise<Watcher> {
    return this.#confirmedDeletionWatch(this.client.watch().key(key).only('delete').watcher(), onChange);
  }

  /** As {@link watchDeletion}, for the deletion of any key that starts with `prefix`. */
  watchPrefixDeletions(prefix: Buffer, onChange: () => void): Promise<Watcher> {
    return this.#confirmedDeletionWatch(this.client.watch().prefix(prefix).only('delete').watcher(), onChange);
  }

  async #confirmedDeletionWatch(watcher: Watcher, onChange: () => void): Promise<Watcher> {
    watcher.on('delete', onChange);
    watcher.on('error', onChange);
    const created = new Promise<Watcher>((resolve, reject) => {
      watcher.once('connected', () => resolve(watcher));
      watcher.once('error', reject);
    });
    try {
      return await withRequestTimeout(created, this.#requestTimeoutMs, 'etcd watch creation');
    } catch (error) {
      void watcher.cancel().catch(() => undefined);
      throw error;
    }
  }
}

/** The create revision of a key-value, as a bigint. */
export function createRevision(kv: IKeyValue): bigint {
  return BigInt(kv.create_revision);
}
