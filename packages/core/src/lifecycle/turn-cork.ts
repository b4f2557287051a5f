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
  /**
   * The most requests held back for one write: once that many are held, they leave together and the
   * cork holds the next ones. Right where the server is the bottleneck of a turn's burst: it starts on
   * the first part while the client still writes the rest, instead of idling until the turn ends.
   * @default Infinity (the whole turn in one write)
   */
  readonly batchLimit?: number;
}

/**
 * Write coalescing for an adapter's connection: the socket is corked until the end of the turn of
 * the event loop (from the turn's second request on, or its first, see {@link TurnCorkOptions}), so
 * that the requests of many concurrent acquires and releases, resumed by one read of replies, leave
 * in one write instead of a system call (and a wake-up of the server) each. Order is unchanged.
 *
 * Every `TurnCork` of the process shares one end-of-turn callback: a `process.nextTick` costs about
 * as much as a small request's own handling, and a Redlock round writes to every master in one turn.
 */
export class TurnCork {
  // The corks that sent in this turn (each once), ended together when the turn ends. Two lists in
  // turn, emptied slot by slot and never shrunk: a list's storage is allocated once, not every turn.
  static #sentThisTurn: (TurnCork | undefined)[] = [];
  static #spare: (TurnCork | undefined)[] = [];
  static #sent = 0;
  static #scheduled = false;
  static readonly #endTurn = (): void => {
    const ending = TurnCork.#sentThisTurn;
    const count = TurnCork.#sent;
    TurnCork.#sentThisTurn = TurnCork.#spare;
    TurnCork.#sent = 0;
    TurnCork.#scheduled = false;
    for (let i = 0; i < count; i += 1) {
      const cork = ending[i] as TurnCork;
      ending[i] = undefined;
      cork.#end();
    }
    TurnCork.#spare = ending;
  };

  // 'sent': a request left in this turn; 'corked': the socket below is corked until the turn ends.
  #state: 'idle' | 'sent' | 'corked' = 'idle';
  #corked: CorkableSocket | undefined;
  // Requests written under the cork since it was last uncorked.
  #held = 0;
  readonly #firstAtOnce: boolean;
  readonly #batchLimit: number;

  constructor(options: TurnCorkOptions = {}) {
    this.#firstAtOnce = options.firstAtOnce ?? true;
    const limit = options.batchLimit ?? Number.POSITIVE_INFINITY;
    if (!(limit >= 1) || (Number.isFinite(limit) && !Number.isInteger(limit))) {
      throw new RangeError(`TurnCork batchLimit must be a whole number ≥ 1 or Infinity, got ${String(options.batchLimit)}`);
    }
    this.#batchLimit = limit;
  }

  /** Call before each request is written on `socket` (no socket, or one that cannot be corked: nothing is done). */
  cork(socket: CorkableSocket | null | undefined): void {
    if (this.#state === 'corked') {
      if (this.#held >= this.#batchLimit) {
        this.#corked?.uncork?.();
        this.#corked?.cork?.();
        this.#held = 0;
      }
      this.#held += 1;
      return;
    }
    if (typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    if (this.#state === 'idle') {
      TurnCork.#sentThisTurn[TurnCork.#sent] = this;
      TurnCork.#sent += 1;
      if (!TurnCork.#scheduled) {
        TurnCork.#scheduled = true;
        process.nextTick(TurnCork.#endTurn);
      }
      if (this.#firstAtOnce) {
        this.#state = 'sent';
        return;
      }
    }
    socket.cork();
    this.#corked = socket;
    this.#state = 'corked';
    this.#held = 1;
  }

  #end(): void {
    const corked = this.#corked;
    this.#corked = undefined;
    this.#state = 'idle';
    corked?.uncork?.();
  }
}
