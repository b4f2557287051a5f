import type { ClientEvent, FencedWriteRecord, HistoryEvent } from '../../src/index.js';

/**
 * A correct lease lock, simulated in discrete time, that writes the history a real run would: N
 * processes acquire (waiting or failing when the key is held), hold, extend, write through a fenced
 * store, release, or stall until their lease expires and they are told so; some acquires time out
 * with an unknown outcome (sometimes granted on the "server" anyway); lost holders sometimes write
 * around the library with their old token. Its histories must pass every check.
 */

/** One step of the workload; fast-check generates lists of them. */
export interface ModelCommand {
  readonly proc: number;
  readonly key: number;
  readonly action: 'acquire' | 'release' | 'extend' | 'write' | 'stale-write' | 'idle';
  /** Time to let pass before the step, ms. */
  readonly gapMs: number;
  /** A uniform choice in [0, 1) for the step's coin flips. */
  readonly coin: number;
}

/** The simulated run. */
export interface ModelRun {
  readonly events: HistoryEvent[];
  readonly writes: FencedWriteRecord[];
}

/** The lease TTL, ms. */
export const MODEL_TTL_MS = 100;
/** How long one request takes, ms. */
const LATENCY_MS = 0.5;
/** The "server" frees an expired lease this long after the client's deadline, ms. */
const SERVER_EXPIRY_MS = 1;
/** The longest delay of a loss signal after the deadline, ms (well under L1's 50 ms). */
const MAX_LOSS_DELAY_MS = 20;
/** An expiry is settled (signal sent, waiter granted) once this much time has passed after it, ms. */
const SETTLE_MS = MAX_LOSS_DELAY_MS + 5;

interface ModelHold {
  readonly proc: number;
  readonly key: number;
  readonly lockId: string;
  readonly token: bigint;
  validUntil: number;
  readonly lossDelayMs: number;
}

interface KeyState {
  owner: { readonly hold: ModelHold | undefined; validUntil: number } | undefined;
  fence: bigint;
  waiters: { proc: number; invokeAt: number }[];
  storeHighest: bigint | undefined;
}

interface ProcState {
  hold: ModelHold | undefined;
  waitingOn: number | undefined;
  lostToken: { key: number; token: bigint } | undefined;
}

const ns = (msValue: number): number => Math.round(msValue * 1e6);

/** Runs `commands` against the model lock with `procs` processes and `keys` keys. */
export function simulate(commands: readonly ModelCommand[], procs: number, keys: number, run = 'model'): ModelRun {
  const drafts: { event: Omit<ClientEvent, 'seq'>; order: number }[] = [];
  const writes: { write: FencedWriteRecord; order: number }[] = [];
  let order = 0;
  let now = 1_000;
  let acquisitions = 0;
  const keyStates: KeyState[] = Array.from({ length: keys }, () => ({ owner: undefined, fence: 0n, waiters: [], storeHighest: undefined }));
  const procStates: ProcState[] = Array.from({ length: procs }, () => ({ hold: undefined, waitingOn: undefined, lostToken: undefined }));
  const keyName = (key: number): string => `key-${key}`;
  const procName = (proc: number): string => `p${proc}`;

  const emit = (atMs: number, proc: number, key: number, f: ClientEvent['f'], type: ClientEvent['type'], extra: Partial<ClientEvent> = {}): void => {
    const t = ns(atMs);
    drafts.push({
      event: { run, t, tc: t, proc: procName(proc), key: keyName(key), f, type, token: null, lockId: null, validUntil: null, ttlGranted: null, err: null, ...extra },
      order: order++,
    });
  };

  const storeWrite = (atMs: number, proc: number, key: number, token: bigint): boolean => {
    const state = keyStates[key];
    if (state === undefined) return false;
    const accepted = state.storeHighest === undefined || token >= state.storeHighest;
    if (accepted) state.storeHighest = token;
    writes.push({ write: { t: ns(atMs), key: keyName(key), token, proc: procName(proc), accepted, value: `${procName(proc)}:${order}` }, order: order++ });
    return accepted;
  };

  const grant = (proc: number, key: number, invokeAt: number | undefined, okAt: number, coin: number): void => {
    const state = keyStates[key];
    const procState = procStates[proc];
    if (state === undefined || procState === undefined) return;
    state.fence += 1n;
    acquisitions += 1;
    const hold: ModelHold = { proc, key, lockId: `lock-${acquisitions}`, token: state.fence, validUntil: okAt - LATENCY_MS + MODEL_TTL_MS, lossDelayMs: coin * MAX_LOSS_DELAY_MS };
    state.owner = { hold, validUntil: hold.validUntil };
    procState.hold = hold;
    procState.waitingOn = undefined;
    if (invokeAt !== undefined) emit(invokeAt, proc, key, 'acquire', 'invoke');
    emit(okAt, proc, key, 'acquire', 'ok', { token: hold.token, lockId: hold.lockId, validUntil: ns(hold.validUntil), ttlGranted: MODEL_TTL_MS });
  };

  // The key is free from `freedAt`: the first waiter, if any, gets it.
  const handOver = (key: number, freedAt: number, coin: number): void => {
    const state = keyStates[key];
    if (state === undefined) return;
    state.owner = undefined;
    const waiter = state.waiters.shift();
    if (waiter !== undefined) grant(waiter.proc, key, undefined, Math.max(freedAt, waiter.invokeAt + LATENCY_MS), coin);
  };

  // One pass settles each key at most once; returns whether anything changed.
  const settleOnce = (coin: number): boolean => {
    let changed = false;
    keyStates.forEach((state, key) => {
      const owner = state.owner;
      if (owner === undefined || owner.validUntil + SETTLE_MS > now) return;
      changed = true;
      const hold = owner.hold;
      if (hold !== undefined) {
        emit(hold.validUntil + hold.lossDelayMs, hold.proc, key, 'lost', 'info', { lockId: hold.lockId, err: 'expired' });
        const procState = procStates[hold.proc];
        if (procState !== undefined) {
          procState.hold = undefined;
          procState.lostToken = { key, token: hold.token };
        }
      }
      handOver(key, owner.validUntil + SERVER_EXPIRY_MS, coin);
    });
    return changed;
  };
  // After a long gap a waiter may be granted a lease that has itself run out by now: settle again.
  // Each pass grants at most one waiter per key, so procs + 2 passes always suffice.
  const settleExpiries = (coin: number): void => {
    for (let pass = 0; pass < procs + 2; pass += 1) if (!settleOnce(coin)) return;
  };

  for (const command of commands) {
    now += LATENCY_MS + command.gapMs;
    settleExpiries(command.coin);
    const procState = procStates[command.proc];
    const key = command.key;
    const state = keyStates[key];
    if (procState === undefined || state === undefined) continue;
    const hold = procState.hold;
    // The library refuses to act on a lease past its deadline; the holder waits for the loss signal.
    const usable = hold !== undefined && now + LATENCY_MS < hold.validUntil;

    if (procState.waitingOn !== undefined) {
      if (command.coin >= 0.3) {
        now += LATENCY_MS;
        continue;
      }
      // A waiter that gives up: a timeout, recorded as indeterminate.
      const waitingState = keyStates[procState.waitingOn];
      if (waitingState !== undefined) waitingState.waiters = waitingState.waiters.filter((waiter) => waiter.proc !== command.proc);
      emit(now, command.proc, procState.waitingOn, 'acquire', 'info', { err: 'LOCK_TIMEOUT' });
      procState.waitingOn = undefined;
      continue;
    }
    // Steer the step towards what this process can do, so that few steps are wasted.
    const holding = hold !== undefined;
    const action =
      holding && command.action === 'acquire' ? 'write' : !holding && ['release', 'extend', 'write'].includes(command.action) ? 'acquire' : command.action;
    switch (action) {
      case 'acquire': {
        if (hold !== undefined) break;
        if (state.owner === undefined) {
          if (command.coin < 0.85) {
            grant(command.proc, key, now, now + LATENCY_MS, command.coin / 0.85);
          } else {
            // Timed out on the client; the server may have granted it anyway, to nobody's knowledge.
            emit(now, command.proc, key, 'acquire', 'invoke');
            if (command.coin < 0.93) {
              state.fence += 1n;
              state.owner = { hold: undefined, validUntil: now + MODEL_TTL_MS };
            }
            emit(now + LATENCY_MS, command.proc, key, 'acquire', 'info', { err: 'LOCK_TIMEOUT' });
          }
        } else if (command.coin < 0.7) {
          emit(now, command.proc, key, 'acquire', 'invoke');
          state.waiters.push({ proc: command.proc, invokeAt: now });
          procState.waitingOn = key;
        } else {
          emit(now, command.proc, key, 'acquire', 'invoke');
          emit(now + LATENCY_MS, command.proc, key, 'acquire', 'fail', { err: 'LOCK_TIMEOUT' });
        }
        break;
      }
      case 'release': {
        if (hold === undefined || !usable) break;
        emit(now, command.proc, hold.key, 'release', 'invoke', { lockId: hold.lockId });
        emit(now + LATENCY_MS, command.proc, hold.key, 'release', 'ok', { lockId: hold.lockId });
        procState.hold = undefined;
        handOver(hold.key, now + LATENCY_MS, command.coin);
        break;
      }
      case 'extend': {
        if (hold === undefined || !usable) break;
        const owner = keyStates[hold.key]?.owner;
        hold.validUntil = now + MODEL_TTL_MS;
        if (owner !== undefined) owner.validUntil = hold.validUntil;
        // Half the renewals are automatic: no invocation is recorded, as the library's hook reports them.
        if (command.coin < 0.5) emit(now, command.proc, hold.key, 'extend', 'invoke', { lockId: hold.lockId });
        emit(now + LATENCY_MS, command.proc, hold.key, 'extend', 'ok', { lockId: hold.lockId, validUntil: ns(hold.validUntil), ttlGranted: MODEL_TTL_MS });
        break;
      }
      case 'write': {
        if (hold === undefined || !usable) break;
        emit(now, command.proc, hold.key, 'write', 'invoke', { lockId: hold.lockId, token: hold.token });
        const accepted = storeWrite(now + LATENCY_MS / 2, command.proc, hold.key, hold.token);
        emit(now + LATENCY_MS, command.proc, hold.key, 'write', accepted ? 'ok' : 'fail', { lockId: hold.lockId, token: hold.token });
        break;
      }
      case 'stale-write': {
        // A write around the library with the token of a lost lease: only the store can refuse it.
        const lost = procState.lostToken;
        if (hold !== undefined || lost === undefined) break;
        storeWrite(now + LATENCY_MS / 2, command.proc, lost.key, lost.token);
        break;
      }
      case 'idle':
        break;
    }
    now += LATENCY_MS;
  }
  now += LATENCY_MS;
  settleExpiries(0.5);

  const events = drafts
    .sort((a, b) => a.event.t - b.event.t || a.order - b.order)
    .map(({ event }, seq): HistoryEvent => ({ ...event, seq }));
  return { events, writes: writes.sort((a, b) => a.write.t - b.write.t || a.order - b.order).map(({ write }) => write) };
}
