/** What {@link TurnCork} needs of a socket: `net.Socket`'s (a `Writable`'s) `cork` and `uncork`; a client's socket as its internals type it. */
export interface CorkableSocket {
  cork?: (() => void) | undefined;
  uncork?: (() => void) | undefined;
}

/** Options of {@link TurnCork}. */
export interface TurnCorkOptions {
  /**
   * Whether the first request of a turn leaves at once (the default): right for a protocol that
   * sends one request per call, where a lone request (a sequential loop) must not wait for the rest
   * of the turn's work, nor pay for a buffered write. `false` corks from the first request on: right
   * where one call sends several requests in the same turn (ZooKeeper's pipelined acquire).
   */
  readonly firstAtOnce?: boolean;
}

/**
 * Write coalescing for an adapter's connection: the socket is corked until the end of the turn of
 * the event loop (from the turn's second request on, or its first, see {@link TurnCorkOptions}), so
 * that the requests of many concurrent acquires and releases, resumed by one read of replies, leave
 * in one write instead of a system call (and a wake-up of the server) each. Order is unchanged.
 */
export class TurnCork {
  // 'sent': a request left in this turn; 'corked': the socket below is corked until the turn ends.
  #state: 'idle' | 'sent' | 'corked' = 'idle';
  #corked: CorkableSocket | undefined;
  readonly #firstAtOnce: boolean;
  readonly #endTurn = (): void => {
    const corked = this.#corked;
    this.#corked = undefined;
    this.#state = 'idle';
    corked?.uncork?.();
  };

  constructor(options: TurnCorkOptions = {}) {
    this.#firstAtOnce = options.firstAtOnce ?? true;
  }

  /** Call before each request is written on `socket` (no socket, or one that cannot be corked: nothing is done). */
  cork(socket: CorkableSocket | null | undefined): void {
    if (this.#state === 'corked' || typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    if (this.#state === 'idle') process.nextTick(this.#endTurn);
    if (this.#state === 'idle' && this.#firstAtOnce) {
      this.#state = 'sent';
      return;
    }
    socket.cork();
    this.#corked = socket;
    this.#state = 'corked';
  }
}
