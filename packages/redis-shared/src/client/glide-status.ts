import { DEFAULT_RETRY, retryCall, withRequestTimeout } from '@fencelock/core/adapter';
import type { ClientStatus } from './lock-client.js';

/** A GLIDE route, as the seam uses them (`primarySlotKey`, `routeByAddress`, `randomNode`). */
export type GlideRoute = 'randomNode' | { readonly type: 'primarySlotKey'; readonly key: string } | { readonly type: 'routeByAddress'; readonly host: string; readonly port: number };

/** The options of GLIDE's `customCommand` the seam passes (a cluster client's route). */
export interface GlideCommandOptions {
  readonly route?: GlideRoute;
}

/** What {@link GlideStatus} needs of the client: whether it was closed, and one command to probe it. */
interface Probed {
  readonly isClosed?: boolean;
  customCommand(args: string[], options?: GlideCommandOptions): Promise<unknown>;
}

// GLIDE's error classes, by name (the package is not imported: it is an optional peer). A broken
// connection shows as `TimeoutError`: GLIDE keeps the requests while it reconnects, and they time
// out (its `requestTimeout`) until it is back. A server that does not answer looks the same, and is
// as uncertain. `ConnectionError`: a connection that could not be made; `ClosingError`: the client
// closed. A server's error reply is a plain `RequestError`: the connection is fine.
const CONNECTION_ERRORS = new Set(['TimeoutError', 'ConnectionError', 'ClosingError']);

/** Whether `error` is GLIDE's word that the connection is broken or the server silent (not an error reply). */
export function isGlideConnectionError(error: unknown): boolean {
  return error instanceof Error && CONNECTION_ERRORS.has(error.name);
}

// The probe of a client marked down: PING, each bounded, with backoff up to 500 ms between them.
const PROBE_TIMEOUT_MS = 1_000;
const PROBE_ATTEMPTS = 240;
const PROBE_RETRY = DEFAULT_RETRY;

/**
 * Where a GLIDE client's connection stands, without connection events (GLIDE has none): `ready`
 * until a request times out or fails with a connection error, then `down` until a request succeeds — the seam's
 * own probe (a `PING` retried with backoff, at most {@link PROBE_ATTEMPTS} times in a row, while
 * anyone listens) or any other. `closed` once the client was closed.
 *
 * So a broken connection is seen when the first request after the drop times out (GLIDE's
 * `requestTimeout` after it was sent), not when the socket drops: the provider's held locks are
 * told at their next extension at the latest.
 */
export class GlideStatus {
  readonly #client: Probed;
  readonly #listeners = new Set<(status: ClientStatus) => void>();
  #down = false;
  #probing = false;
  /** A new object each time the client comes back: a connection that may not know the scripts. */
  connection: object = {};

  constructor(client: Probed) {
    this.#client = client;
  }

  get current(): ClientStatus {
    if (this.#client.isClosed === true) return 'closed';
    if (!this.#down) return 'ready';
    // A probe that gave up is started again by the next reader: a down client is never left unprobed.
    this.#probe();
    return 'down';
  }

  /** Resolves or rejects as `request` does, noting what its outcome says about the connection. */
  track<T>(request: Promise<T>): Promise<T> {
    return request.then(
      (reply) => {
        if (this.#down) this.#set(false);
        return reply;
      },
      (error: unknown) => {
        if (!this.#down && isGlideConnectionError(error)) {
          this.#set(true);
          this.#probe();
        }
        throw error;
      },
    );
  }

  /** Calls `listener` on each change (`ready`, `down`); returns the function that stops it. */
  listen(listener: (status: ClientStatus) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  #set(down: boolean): void {
    this.#down = down;
    if (!down) this.connection = {};
    const status = this.current;
    for (const listener of [...this.#listeners]) listener(status);
  }

  #probe(): void {
    if (this.#probing) return;
    this.#probing = true;
    const proceed = (): boolean => this.#down && this.#client.isClosed !== true;
    void retryCall(() => this.track(withRequestTimeout(this.#client.customCommand(['PING']), PROBE_TIMEOUT_MS, 'pinging the server')), {
      attempts: PROBE_ATTEMPTS,
      retry: PROBE_RETRY,
      proceed,
    }).finally(() => {
      this.#probing = false;
    });
  }
}
