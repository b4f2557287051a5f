import type { WorkerMessage } from './protocol.js';

/** One leader's term, as the supervisor saw it. Sequence numbers order every message the supervisor got. */
export interface Term {
  readonly worker: string;
  readonly token: bigint;
  /** Sequence number of the `leading` message. */
  readonly startSeq: number;
  /** Sequence number of the last round of work (`startSeq` before the first). */
  lastWorkSeq: number;
  /** Rounds of work done. */
  rounds: number;
  /** How the term ended: `released`, a lock error code (`LOCK_LOST`), `killed`; `undefined` while it lasts. */
  end: string | undefined;
}

/**
 * Everything the workers reported, in the order the supervisor received it: the terms of every
 * leader, and a check that no two overlapped.
 */
export class LeadershipLog {
  readonly terms: Term[] = [];
  #seq = 0;

  /** Records one message from `worker`; returns the term it concerns, if any. */
  record(worker: string, message: WorkerMessage): Term | undefined {
    this.#seq += 1;
    if (message.type === 'leading') {
      const term: Term = { worker, token: BigInt(message.token), startSeq: this.#seq, lastWorkSeq: this.#seq, rounds: 0, end: undefined };
      this.terms.push(term);
      return term;
    }
    if (message.type !== 'work' && message.type !== 'stepped-down') return undefined;
    const term = this.terms.find((candidate) => candidate.worker === worker && candidate.token === BigInt(message.token));
    if (term === undefined) return undefined;
    if (message.type === 'work') {
      term.rounds += 1;
      term.lastWorkSeq = this.#seq;
    } else {
      term.end = message.reason;
    }
    return term;
  }

  /** A worker process died: its open term, if any, ends as `killed`. */
  died(worker: string): void {
    for (const term of this.terms) if (term.worker === worker && term.end === undefined) term.end = 'killed';
  }

  /** The most recently started term. */
  get latest(): Term | undefined {
    return this.terms.at(-1);
  }

  /**
   * What contradicts "one leader at a time", in token order: every term must start after the
   * previous term's last round of work, and tokens must grow in the order the terms started.
   */
  violations(): string[] {
    const found: string[] = [];
    const byToken = [...this.terms].sort((a, b) => (a.token < b.token ? -1 : a.token > b.token ? 1 : 0));
    byToken.forEach((term, index) => {
      if (term !== this.terms[index]) found.push(`term of ${term.worker} (token ${term.token}) started out of token order`);
      const previous = byToken[index - 1];
      if (previous !== undefined && previous.lastWorkSeq > term.startSeq) {
        found.push(`${previous.worker} (token ${previous.token}) still worked after ${term.worker} (token ${term.token}) became leader`);
      }
    });
    return found;
  }
}
