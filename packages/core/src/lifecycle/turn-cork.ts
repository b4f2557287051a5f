/** What {@link TurnCork} needs of a socket: `net.Socket`'s (a `Writable`'s) `cork` and `uncork`; a client's socket as its internals type it. */
export interface CorkableSocket {
  cork?: (() => void) | undefined;
  uncork?: (() => void) | undefined;
}

/**
 * Write coalescing for an adapter's connection: corks the socket until the end of this turn of the
 * event loop, so that every request issued meanwhile (the requests of many concurrent acquires and
 * releases, resumed by one read of replies) leaves in one write: one system call, and one segment
 * for the server to wake up for, instead of one each. Order is unchanged. A lone request waits only
 * for the current turn's other callbacks and microtasks to finish, not for I/O or timers.
 */
export class TurnCork {
  #corked: CorkableSocket | undefined;

  /** Corks `socket` until the end of this turn, unless a socket is corked already (or there is none, or it cannot be corked). */
  cork(socket: CorkableSocket | null | undefined): void {
    if (this.#corked !== undefined || typeof socket?.cork !== 'function' || typeof socket.uncork !== 'function') return;
    socket.cork();
    this.#corked = socket;
    process.nextTick(() => {
      const corked = this.#corked;
      this.#corked = undefined;
      corked?.uncork?.();
    });
  }
}
