import { type ClientEvent, type HistoryEvent, type NemesisEvent, isNemesisEvent } from './history.js';
import { KILL_FAULTS } from './nemesis-windows.js';

/**
 * How `validUntil` (client clock) maps onto `t` (the checker's axis).
 * - `shared`: the same clock (one host, no libfaketime), used as is, as FAULTS.md says.
 * - `offset`: the client's clock is faked; shift by `t − tc` of the event that reported it.
 */
export type ClockMapping = 'shared' | 'offset';

/** An operation: its invocation and its completion, either of which may be missing. */
export interface Operation {
  readonly invoke: ClientEvent | undefined;
  readonly completion: ClientEvent | undefined;
}

/** One successful extension (`extend ok`, manual or automatic) of a hold. */
export interface Extension {
  readonly invoke: ClientEvent | undefined;
  readonly completion: ClientEvent;
  /** When it took effect for the checker: the invoke's `t`, else the completion's (automatic renewals). */
  readonly at: number;
  /** True when it was invoked after the hold's `lost` signal. */
  readonly afterLoss: boolean;
  /** True when it was invoked after the validity deadline in force (plus slack) had passed. */
  readonly afterExpiry: boolean;
}

/** Why a hold's window ends where it does. */
export type HoldEndCause = 'release' | 'lost' | 'expired' | 'killed' | 'open';

/**
 * One determinate acquisition (an `acquire ok`) and everything its holder did with it. Its window is
 * `[start, end]` with `end = min(release invoke, lost, validity deadline)` on the `t` axis, and the
 * kill of its process (a `kill`/`crash` nemesis step targeting it): a dead holder cannot act on the
 * lock any more, and a lock without a deadline (a session lock) would otherwise stay open forever.
 */
export interface Hold {
  readonly key: string;
  /** For a counting semaphore's permits: the limit and the permits of its acquire; `undefined` for a lock. */
  readonly semaphore: { readonly limit: number; readonly permits: number } | undefined;
  /** For a leadership: the campaigner's value (its token is the term); `undefined` for a lock or a semaphore. */
  readonly election: { readonly value: string } | undefined;
  readonly proc: string;
  readonly lockId: string;
  readonly token: bigint | null;
  readonly invoke: ClientEvent | undefined;
  readonly ok: ClientEvent;
  /** `ok.t`, ns. */
  readonly start: number;
  /** The validity deadline after the last accepted extension, on the `t` axis (ns); `null` if none was reported. */
  readonly deadline: number | null;
  /** ns; `Infinity` for a hold with no release, no loss and no deadline. */
  readonly end: number;
  readonly endCause: HoldEndCause;
  readonly release: Operation | undefined;
  readonly lost: ClientEvent | undefined;
  readonly extensions: readonly Extension[];
  readonly writes: readonly Operation[];
}

/** An acquire that did not end in a hold: `fail`, or indeterminate (`info`, or never completed). */
export interface AttemptWithoutHold {
  readonly key: string;
  readonly proc: string;
  readonly outcome: 'fail' | 'info';
  readonly invoke: ClientEvent | undefined;
  readonly completion: ClientEvent | undefined;
}

/** The holds of `hold`'s namespace and key: lock holds for a lock, semaphore holds for a semaphore, leaderships for a leadership. */
export function holdsBeside(model: HistoryModel, hold: Hold): readonly Hold[] {
  const byKey = hold.semaphore !== undefined ? model.semaphoreHoldsByKey : hold.election !== undefined ? model.electionHoldsByKey : model.holdsByKey;
  return byKey.get(hold.key) ?? [];
}

/** A history arranged for the property checks. */
export interface HistoryModel {
  readonly run: string;
  /** Every hold, ordered by start. */
  readonly holds: readonly Hold[];
  /** Lock holds per key, ordered by start. */
  readonly holdsByKey: ReadonlyMap<string, readonly Hold[]>;
  /** Semaphore holds per key, ordered by start: a namespace apart from the lock holds of the same key. */
  readonly semaphoreHoldsByKey: ReadonlyMap<string, readonly Hold[]>;
  /** Leaderships per election name, ordered by start: a namespace apart from locks and semaphores. */
  readonly electionHoldsByKey: ReadonlyMap<string, readonly Hold[]>;
  readonly attemptsWithoutHold: readonly AttemptWithoutHold[];
  /** Completed acquires (`ok`) with their invocation, for latency statistics. */
  readonly acquireOperations: readonly Operation[];
  readonly clientEvents: readonly ClientEvent[];
  readonly nemesis: readonly NemesisEvent[];
  /** The latest `t` each client proc recorded anything at. */
  readonly lastSeenByProc: ReadonlyMap<string, number>;
  /** Client operations: invocations plus completions that had none (automatic renewals). */
  readonly operationCount: number;
}

/** Options of {@link buildHistoryModel}. */
export interface BuildOptions {
  /** Tolerance for comparing times of different processes, ns. */
  readonly slackNs: number;
  readonly clock: ClockMapping;
}

/** Orders events by `t`, ties by `seq` (one process's events keep their order). */
export function compareEvents(a: HistoryEvent, b: HistoryEvent): number {
  return a.t - b.t || a.seq - b.seq;
}

/** `validUntil` of `event` on the `t` axis, ns. */
export function validUntilOnAxis(event: ClientEvent, clock: ClockMapping): number | null {
  if (event.validUntil === null) return null;
  if (clock === 'offset' && event.tc !== null) return event.validUntil + (event.t - event.tc);
  return event.validUntil;
}

interface MutableHold {
  readonly key: string;
  readonly proc: string;
  readonly lockId: string;
  readonly invoke: ClientEvent | undefined;
  readonly ok: ClientEvent;
  release: { invoke: ClientEvent | undefined; completion: ClientEvent | undefined } | undefined;
  lost: ClientEvent | undefined;
  readonly extendOperations: Operation[];
  readonly writes: Operation[];
}

const SEPARATOR = '\u0000';

function popPending(pending: Map<string, ClientEvent[]>, id: string, lockId: string | null): ClientEvent | undefined {
  const queue = pending.get(id);
  if (queue === undefined || queue.length === 0) return undefined;
  // One process runs one operation per key and function at a time, so FIFO pairs them; the lockId
  // check keeps a late completion of an old hold's operation off a newer hold's invocation.
  const index = lockId === null ? 0 : queue.findIndex((event) => event.lockId === null || event.lockId === lockId);
  if (index < 0) return undefined;
  const [event] = queue.splice(index, 1);
  return event;
}

/**
 * Pairs invocations with completions and groups a run's events into holds. Indeterminate acquires
 * (`info`, or invoked and never completed) make no hold: they may or may not have taken effect, so
 * nothing may be concluded from them except that their token (if reported) is a legitimate one.
 */
export function buildHistoryModel(run: string, events: readonly HistoryEvent[], options: BuildOptions): HistoryModel {
  const sorted = [...events].sort(compareEvents);
  const pending = new Map<string, ClientEvent[]>();
  const holdByLock = new Map<string, MutableHold>();
  const latestHold = new Map<string, MutableHold>();
  const mutableHolds: MutableHold[] = [];
  const attempts: AttemptWithoutHold[] = [];
  const acquireOperations: Operation[] = [];
  const clientEvents: ClientEvent[] = [];
  const nemesis: NemesisEvent[] = [];
  const lastSeenByProc = new Map<string, number>();
  const abandoned: ClientEvent[] = [];
  let operationCount = 0;

  const findHold = (event: ClientEvent, lockId: string | null): MutableHold | undefined =>
    lockId === null ? latestHold.get(event.proc + SEPARATOR + event.key) : holdByLock.get(event.key + SEPARATOR + lockId);

  for (const event of sorted) {
    if (isNemesisEvent(event)) {
      nemesis.push(event);
      // A killed process's open operations never complete; a restarted process with the same id
      // must not have its completions paired with them.
      const target = event.nemesis.target;
      if (target !== undefined && KILL_FAULTS.has(event.f)) {
        for (const [id, queue] of pending) {
          if (!id.startsWith(target + SEPARATOR)) continue;
          abandoned.push(...queue);
          pending.delete(id);
        }
      }
      continue;
    }
    clientEvents.push(event);
    lastSeenByProc.set(event.proc, Math.max(lastSeenByProc.get(event.proc) ?? 0, event.t));
    const id = event.proc + SEPARATOR + event.key + SEPARATOR + event.f;
    if (event.type === 'invoke') {
      operationCount += 1;
      const queue = pending.get(id);
      if (queue === undefined) pending.set(id, [event]);
      else queue.push(event);
      continue;
    }
    const signal = event.f === 'lost' || event.f === 'suspended' || event.f === 'reconnected';
    const invoke = signal ? undefined : popPending(pending, id, event.lockId);
    if (!signal && invoke === undefined) operationCount += 1;
    const lockId = event.lockId ?? invoke?.lockId ?? null;
    switch (event.f) {
      case 'acquire': {
        if (event.type !== 'ok') {
          attempts.push({ key: event.key, proc: event.proc, outcome: event.type === 'fail' ? 'fail' : 'info', invoke, completion: event });
          break;
        }
        acquireOperations.push({ invoke, completion: event });
        const hold: MutableHold = {
          key: event.key,
          proc: event.proc,
          // An ok without an owner id still makes a hold; name it after its event so it stays distinct.
          lockId: lockId ?? `${event.proc}#${event.seq}`,
          invoke,
          ok: event,
          release: undefined,
          lost: undefined,
          extendOperations: [],
          writes: [],
        };
        mutableHolds.push(hold);
        holdByLock.set(hold.key + SEPARATOR + hold.lockId, hold);
        latestHold.set(hold.proc + SEPARATOR + hold.key, hold);
        break;
      }
      case 'extend':
        findHold(event, lockId)?.extendOperations.push({ invoke, completion: event });
        break;
      case 'release': {
        const hold = findHold(event, lockId);
        if (hold !== undefined && hold.release === undefined) hold.release = { invoke, completion: event };
        break;
      }
      case 'lost': {
        const hold = findHold(event, lockId);
        if (hold !== undefined && hold.lost === undefined) hold.lost = event;
        break;
      }
      case 'write':
        findHold(event, lockId)?.writes.push({ invoke, completion: event });
        break;
      default:
        break;
    }
  }

  // Invocations never completed: the process was killed or the run ended. Releases still end their hold
  // (the holder stopped relying on the lock when it asked to release); acquires are indeterminate.
  for (const queue of [abandoned, ...pending.values()]) {
    for (const invoke of queue) {
      if (invoke.f === 'acquire') {
        attempts.push({ key: invoke.key, proc: invoke.proc, outcome: 'info', invoke, completion: undefined });
      } else if (invoke.f === 'release') {
        const hold = findHold(invoke, invoke.lockId);
        if (hold !== undefined && hold.release === undefined) hold.release = { invoke, completion: undefined };
      } else if (invoke.f === 'write') {
        findHold(invoke, invoke.lockId)?.writes.push({ invoke, completion: undefined });
      }
    }
  }

  const kills = nemesis.filter((event) => KILL_FAULTS.has(event.f) && event.nemesis.target !== undefined);
  const killedAt = (hold: MutableHold): number =>
    kills.reduce((first, event) => (event.nemesis.target === hold.proc && event.t >= hold.ok.t ? Math.min(first, event.t) : first), Infinity);
  const holds = mutableHolds.map((hold) => finishHold(hold, killedAt(hold), options)).sort((a, b) => a.start - b.start || a.ok.seq - b.ok.seq);
  const holdsByKey = new Map<string, Hold[]>();
  const semaphoreHoldsByKey = new Map<string, Hold[]>();
  const electionHoldsByKey = new Map<string, Hold[]>();
  for (const hold of holds) {
    const byKey = hold.semaphore !== undefined ? semaphoreHoldsByKey : hold.election !== undefined ? electionHoldsByKey : holdsByKey;
    const list = byKey.get(hold.key);
    if (list === undefined) byKey.set(hold.key, [hold]);
    else list.push(hold);
  }
  return {
    run,
    holds,
    holdsByKey,
    semaphoreHoldsByKey,
    electionHoldsByKey,
    attemptsWithoutHold: attempts,
    acquireOperations,
    clientEvents,
    nemesis,
    lastSeenByProc,
    operationCount,
  };
}

function precedes(a: ClientEvent, atT: number, atSeq: number): boolean {
  return a.t < atT || (a.t === atT && a.seq < atSeq);
}

/**
 * When an extension took effect: its invocation; for an automatic renewal (no invocation recorded)
 * the request's send time, bounded by `validUntil − ttlGranted` (validity counts from the send time,
 * minus a margin, so this never lands later than the send), else the completion.
 */
function effectiveTime(operation: { invoke: ClientEvent | undefined; completion: ClientEvent }, clock: ClockMapping): number {
  if (operation.invoke !== undefined) return operation.invoke.t;
  const { completion } = operation;
  const validUntil = validUntilOnAxis(completion, clock);
  if (validUntil === null || completion.ttlGranted === null) return completion.t;
  return Math.min(completion.t, validUntil - completion.ttlGranted * 1e6);
}

function finishHold(hold: MutableHold, killedAt: number, options: BuildOptions): Hold {
  const releaseEvent = hold.release?.invoke ?? hold.release?.completion;
  let deadline = validUntilOnAxis(hold.ok, options.clock);
  const extensions: Extension[] = [];
  const okExtends = hold.extendOperations
    .filter((operation): operation is { invoke: ClientEvent | undefined; completion: ClientEvent } => operation.completion?.type === 'ok')
    .map((operation) => ({ ...operation, at: effectiveTime(operation, options.clock), atSeq: (operation.invoke ?? operation.completion).seq }))
    .sort((a, b) => a.at - b.at || a.atSeq - b.atSeq);
  for (const operation of okExtends) {
    const afterLoss = hold.lost !== undefined && precedes(hold.lost, operation.at, operation.atSeq);
    const afterExpiry = deadline !== null && operation.at > deadline + options.slackNs;
    const afterRelease = releaseEvent !== undefined && precedes(releaseEvent, operation.at, operation.atSeq);
    // A renewal that came too late must not stretch the window: the lock was already free for others.
    if (!afterLoss && !afterExpiry && !afterRelease) deadline = validUntilOnAxis(operation.completion, options.clock) ?? deadline;
    extensions.push({ invoke: operation.invoke, completion: operation.completion, at: operation.at, afterLoss, afterExpiry });
  }
  const candidates: [number, HoldEndCause][] = [];
  if (releaseEvent !== undefined) candidates.push([releaseEvent.t, 'release']);
  if (hold.lost !== undefined) candidates.push([hold.lost.t, 'lost']);
  if (deadline !== null) candidates.push([deadline, 'expired']);
  if (killedAt !== Infinity) candidates.push([killedAt, 'killed']);
  let end = Infinity;
  let endCause: HoldEndCause = 'open';
  for (const [time, cause] of candidates) {
    if (time < end) {
      end = time;
      endCause = cause;
    }
  }
  const { limit, permits } = hold.ok.limit === undefined ? (hold.invoke ?? hold.ok) : hold.ok;
  const value = hold.ok.value ?? hold.invoke?.value;
  return {
    key: hold.key,
    semaphore: limit === undefined || permits === undefined ? undefined : { limit, permits },
    election: value === undefined ? undefined : { value },
    proc: hold.proc,
    lockId: hold.lockId,
    token: hold.ok.token,
    invoke: hold.invoke,
    ok: hold.ok,
    start: hold.ok.t,
    deadline,
    end,
    endCause,
    release: hold.release,
    lost: hold.lost,
    extensions,
    writes: hold.writes,
  };
}
