import type { ClientEvent, ClientFunction, HistoryEvent, NemesisEvent, OperationType } from '../../src/index.js';

/** ms since the start of a test history → the `t` axis (ns), with an arbitrary origin. */
export const ORIGIN_NS = 1_000_000_000;
export const ms = (value: number): number => ORIGIN_NS + value * 1e6;

interface ClientFields {
  readonly proc: string;
  readonly key: string;
  readonly f: ClientFunction;
  readonly type: OperationType;
  readonly atMs: number;
  readonly token?: bigint | null;
  readonly lockId?: string | null;
  readonly validUntilMs?: number | null;
  readonly ttlGranted?: number | null;
  readonly err?: string | null;
  /** A semaphore acquisition's limit and permits. */
  readonly semaphore?: { readonly limit: number; readonly permits: number };
  /** A campaign's value. */
  readonly value?: string;
}

/** Builds small histories by hand: times in ms from the start, seq in call order. */
export class HistoryBuilder {
  readonly #events: HistoryEvent[] = [];
  readonly #run: string;

  constructor(run = 'test-run') {
    this.#run = run;
  }

  event(fields: ClientFields): ClientEvent {
    const t = ms(fields.atMs);
    const event: ClientEvent = {
      ...fields.semaphore,
      ...(fields.value === undefined ? {} : { value: fields.value }),
      run: this.#run,
      seq: this.#events.length,
      t,
      tc: t,
      proc: fields.proc,
      key: fields.key,
      f: fields.f,
      type: fields.type,
      token: fields.token ?? null,
      lockId: fields.lockId ?? null,
      validUntil: fields.validUntilMs === undefined || fields.validUntilMs === null ? null : ms(fields.validUntilMs),
      ttlGranted: fields.ttlGranted ?? null,
      err: fields.err ?? null,
    };
    this.#events.push(event);
    return event;
  }

  /** An acquire invoke at `invokeMs` and its `ok` at `okMs`. Returns the ok's seq. */
  acquire(proc: string, key: string, lockId: string, token: bigint | null, invokeMs: number, okMs: number, validUntilMs: number | null): number {
    this.event({ proc, key, f: 'acquire', type: 'invoke', atMs: invokeMs });
    return this.event({ proc, key, f: 'acquire', type: 'ok', atMs: okMs, token, lockId, validUntilMs, ttlGranted: 1000 }).seq;
  }

  /** A semaphore acquire (`limit`, `permits`) invoked at `invokeMs`, ok at `okMs`. Returns the ok's seq. */
  acquirePermits(
    proc: string,
    key: string,
    lockId: string,
    token: bigint | null,
    invokeMs: number,
    okMs: number,
    validUntilMs: number | null,
    semaphore: { limit: number; permits: number },
  ): number {
    this.event({ proc, key, f: 'acquire', type: 'invoke', atMs: invokeMs, semaphore });
    return this.event({ proc, key, f: 'acquire', type: 'ok', atMs: okMs, token, lockId, validUntilMs, ttlGranted: 1000, semaphore }).seq;
  }

  /** A campaign with `value` invoked at `invokeMs`, elected at `okMs` with term `term`. Returns the ok's seq. */
  campaign(proc: string, name: string, lockId: string, term: bigint | null, invokeMs: number, okMs: number, validUntilMs: number | null, value = proc): number {
    this.event({ proc, key: name, f: 'acquire', type: 'invoke', atMs: invokeMs, value });
    return this.event({ proc, key: name, f: 'acquire', type: 'ok', atMs: okMs, token: term, lockId, validUntilMs, ttlGranted: 1000, value }).seq;
  }

  release(proc: string, key: string, lockId: string, invokeMs: number, doneMs: number, type: OperationType = 'ok'): void {
    this.event({ proc, key, f: 'release', type: 'invoke', atMs: invokeMs, lockId });
    this.event({ proc, key, f: 'release', type, atMs: doneMs, lockId, err: type === 'fail' ? 'not-held' : null });
  }

  lost(proc: string, key: string, lockId: string, atMs: number, reason = 'expired'): number {
    return this.event({ proc, key, f: 'lost', type: 'info', atMs, lockId, err: reason }).seq;
  }

  extend(proc: string, key: string, lockId: string, invokeMs: number, doneMs: number, validUntilMs: number | null, type: OperationType = 'ok'): void {
    this.event({ proc, key, f: 'extend', type: 'invoke', atMs: invokeMs, lockId });
    this.event({ proc, key, f: 'extend', type, atMs: doneMs, lockId, validUntilMs: type === 'ok' ? validUntilMs : null });
  }

  write(proc: string, key: string, lockId: string, token: bigint, invokeMs: number, doneMs: number, type: OperationType = 'ok'): void {
    this.event({ proc, key, f: 'write', type: 'invoke', atMs: invokeMs, lockId, token });
    this.event({ proc, key, f: 'write', type, atMs: doneMs, lockId, token });
  }

  nemesis(f: string, atMs: number, target?: string): NemesisEvent {
    const event: NemesisEvent = {
      run: this.#run,
      seq: this.#events.length,
      t: ms(atMs),
      tc: null,
      proc: 'nemesis',
      key: null,
      f,
      type: 'info',
      token: null,
      lockId: null,
      validUntil: null,
      ttlGranted: null,
      err: null,
      nemesis: target === undefined ? {} : { target },
    };
    this.#events.push(event);
    return event;
  }

  get events(): HistoryEvent[] {
    return [...this.#events];
  }
}
