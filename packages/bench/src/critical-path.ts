/**
 * Where the wall time of an uncontended acquire + release goes, call by call. A sequential loop's
 * throughput is one over this time, so it is what the throughput ratios compare. Each call is cut at
 * two moments seen from the process:
 *
 * - its first request leaving (a socket write; for gRPC, a message written on its HTTP/2 stream, which
 *   Node's session puts on the socket itself a little later);
 * - the last reply read before the caller resumed (data read from a socket or an HTTP/2 stream).
 *
 * That gives three phases: **before the send** (the caller's library, then its client library, up
 * to the first write), **on the wire** (the network, the server, the client library writing and
 * reading the rest of the call's requests), **after the reply** (parsing it and everything up to the
 * caller). A library on top of a raw client shows in the first and the last; the requests it sends
 * show in the middle. Beside its protocol twin (the same requests, no library) the difference per
 * phase is what the library costs on the critical path, and beside the raw baseline what its
 * requests cost.
 *
 * The probe wraps Node's stream methods while the measured cycles run (every subject pays the same
 * wrapper); background traffic in a call's window (a session's ping, a lease keepalive) is rare and
 * the medians leave it out.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { roundOrder } from './round-order.js';
import { median } from './rounds.js';
import { round } from './stats.js';
import { subjectFields, type LockSession, type Subject, type SubjectFields } from './subjects.js';

/**
 * A request leaving the process, or a reply read, at `at` (µs on the monotonic clock), when the event
 * loop had spent `idle` µs in all waiting for something to happen (its idle time so far).
 */
export interface WireEvent {
  readonly kind: 'send' | 'reply';
  readonly at: number;
  readonly idle: number;
}

/** One call (an acquire or a release) cut at its first send and its last reply, µs. */
export interface CallPhases {
  /** From the call to its first request leaving. */
  readonly beforeSend: number;
  /** From the first request leaving to the last reply read before the caller resumed. */
  readonly onTheWire: number;
  /**
   * Of that, the time the event loop waited with nothing to run (the network and the server, alone);
   * the rest the process was busy: the library and client code run after the send, other callbacks,
   * the garbage collector — and, meanwhile, a reply that had already arrived waited to be read.
   */
  readonly idleOnTheWire: number;
  /** From that reply to the caller resuming. */
  readonly afterReply: number;
  /** From the call to the caller resuming. */
  readonly total: number;
}

/**
 * The phases of a call that started at `start` and returned to its caller at `end`, from the wire
 * events seen meanwhile; `undefined` when it sent nothing, or read no reply after its first send.
 */
export function callPhases(start: number, end: number, events: readonly WireEvent[]): CallPhases | undefined {
  let firstSend: WireEvent | undefined;
  let lastReply: WireEvent | undefined;
  for (const event of events) {
    if (event.at < start || event.at > end) continue;
    if (event.kind === 'send') firstSend ??= event;
    else if (firstSend !== undefined) lastReply = event;
  }
  if (firstSend === undefined || lastReply === undefined) return undefined;
  return {
    beforeSend: firstSend.at - start,
    onTheWire: lastReply.at - firstSend.at,
    idleOnTheWire: lastReply.idle - firstSend.idle,
    afterReply: end - lastReply.at,
    total: end - start,
  };
}

/** The medians of each phase over some calls (each median on its own: they need not add up). */
export function medianPhases(calls: readonly CallPhases[]): CallPhases {
  const of = (pick: (call: CallPhases) => number): number => round(median(calls.map(pick)), 1);
  return {
    beforeSend: of((call) => call.beforeSend),
    onTheWire: of((call) => call.onTheWire),
    idleOnTheWire: of((call) => call.idleOnTheWire),
    afterReply: of((call) => call.afterReply),
    total: of((call) => call.total),
  };
}

const now = (): number => performance.now() * 1_000;
// libuv's count of the time its loop spent waiting for events (updated as each wait ends), µs.
const idleNow = (): number => performance.eventLoopUtilization().idle * 1_000;

// An HTTP/2 stream (gRPC's transport): a Duplex with a session, which is not a socket.
function isHttp2Stream(stream: object): boolean {
  return !(stream instanceof net.Socket) && 'session' in stream;
}

/**
 * Records when requests leave and replies arrive, on every socket and HTTP/2 stream of the process,
 * between `install` and `uninstall`. A socket's request leaves at its `_writeGeneric` (a corked
 * socket's writes leave together at the uncork); an HTTP/2 stream's when the message is written on
 * it; a reply arrives with a `data` event of either.
 */
export class WireProbe {
  #events: WireEvent[] = [];
  #restore: (() => void) | undefined;

  /** Starts recording. */
  install(): void {
    if (this.#restore !== undefined) return;
    const events = (): WireEvent[] => this.#events;
    const socket = net.Socket.prototype as unknown as { _writeGeneric: (...args: unknown[]) => unknown };
    const duplex = Duplex.prototype as unknown as { write: (...args: unknown[]) => unknown; emit: (event: string | symbol, ...args: unknown[]) => boolean };
    const writeGeneric = socket._writeGeneric;
    const write = duplex.write;
    const hadOwnEmit = Object.prototype.hasOwnProperty.call(duplex, 'emit');
    const emit = duplex.emit;
    socket._writeGeneric = function (this: object, ...args: unknown[]): unknown {
      events().push({ kind: 'send', at: now(), idle: idleNow() });
      return writeGeneric.apply(this, args);
    };
    duplex.write = function (this: object, ...args: unknown[]): unknown {
      if (isHttp2Stream(this)) events().push({ kind: 'send', at: now(), idle: idleNow() });
      return write.apply(this, args);
    };
    duplex.emit = function (this: object, event: string | symbol, ...args: unknown[]): boolean {
      if (event === 'data' && (this instanceof net.Socket || isHttp2Stream(this))) events().push({ kind: 'reply', at: now(), idle: idleNow() });
      return emit.call(this, event, ...args);
    };
    this.#restore = () => {
      socket._writeGeneric = writeGeneric;
      duplex.write = write;
      if (hadOwnEmit) duplex.emit = emit;
      else delete (duplex as { emit?: unknown }).emit;
    };
  }

  /** The events recorded since the last call, and a fresh record. */
  take(): WireEvent[] {
    const taken = this.#events;
    this.#events = [];
    return taken;
  }

  /** Stops recording and puts Node's methods back. */
  uninstall(): void {
    this.#restore?.();
    this.#restore = undefined;
    this.#events = [];
  }
}

/** One cycle's calls; a call is `undefined` when its phases could not be told (see {@link callPhases}). */
export interface CyclePhases {
  readonly acquire: CallPhases | undefined;
  readonly release: CallPhases | undefined;
}

// One turn of the event loop: what the previous call left queued runs, and the next call starts from
// a fresh callback instead of the previous call's continuation.
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs one acquire + release of `key` on `session` with `probe` recording, and cuts both calls. With
 * `ownTurns`, each call starts in a turn of the event loop of its own (unmeasured in between), as
 * calls do in a service; otherwise each starts in the continuation of the previous one, as in a tight
 * loop (the throughput scenarios).
 */
export async function measuredCycle(session: LockSession, key: string, probe: WireProbe, ownTurns = false): Promise<CyclePhases> {
  if (ownTurns) await nextTurn();
  probe.take();
  const acquireStart = now();
  const release = await session.lock(key, 5_000);
  const acquireEnd = now();
  const acquireEvents = probe.take();
  if (ownTurns) {
    await nextTurn();
    probe.take();
  }
  const releaseStart = now();
  await release();
  const releaseEnd = now();
  return { acquire: callPhases(acquireStart, acquireEnd, acquireEvents), release: callPhases(releaseStart, releaseEnd, probe.take()) };
}

/** Bounds of a critical-path measurement. */
export interface CriticalPathOptions {
  /** Measured cycles per subject per round. */
  readonly cyclesPerRound: number;
  /** Rounds; the subjects of a group take turns in each. */
  readonly rounds: number;
  /** Unmeasured cycles per subject first (connections, scripts, the JIT). */
  readonly warmupCycles: number;
  /** Most time of a subject's warm-up and of each of its slices, ms. */
  readonly maxSliceMs: number;
  /** Each call starts in a turn of the event loop of its own (see {@link measuredCycle}). Default false. */
  readonly ownTurns?: boolean;
}

/** One subject's phases: medians over its measured cycles. */
export interface CriticalPath extends SubjectFields {
  readonly cycles: number;
  /** Cycles whose acquire and release could both be cut (the medians are over these). */
  readonly cut: number;
  readonly acquire: CallPhases;
  readonly release: CallPhases;
  /** The median of acquire total + release total per cycle. */
  readonly cycle: number;
}

/**
 * Measures `subjects` (one backend's, on the same server) interleaved: after each one's warm-up,
 * `rounds` rounds in which each runs `cyclesPerRound` cycles in turn, the probe recording only then.
 */
export async function measureCriticalPaths(subjects: readonly Subject[], options: CriticalPathOptions): Promise<CriticalPath[]> {
  const opened: { subject: Subject; session: LockSession; key: string; cycles: CyclePhases[] }[] = [];
  const probe = new WireProbe();
  try {
    for (const subject of subjects) {
      const session = await subject.open();
      const key = `critical-path:${randomUUID()}`;
      opened.push({ subject, session, key, cycles: [] });
      const deadline = performance.now() + options.maxSliceMs;
      for (let i = 0; i < options.warmupCycles && performance.now() < deadline; i += 1) await (await session.lock(key, 5_000))();
    }
    for (let r = 0; r < options.rounds; r += 1) {
      // A balanced order (see round-order.ts): no subject always runs right after the same other one.
      for (const at of roundOrder(opened.length, r)) {
        const entry = opened[at]!;
        const deadline = performance.now() + options.maxSliceMs;
        probe.install();
        try {
          for (let i = 0; i < options.cyclesPerRound && performance.now() < deadline; i += 1) entry.cycles.push(await measuredCycle(entry.session, entry.key, probe, options.ownTurns === true));
        } finally {
          probe.uninstall();
        }
      }
    }
  } finally {
    for (const { session } of opened) await session.close().catch(() => undefined);
  }
  return opened.map(({ subject, cycles }) => criticalPath(subject, cycles));
}

/** The medians of one subject's measured cycles. */
export function criticalPath(subject: Subject, cycles: readonly CyclePhases[]): CriticalPath {
  const cut = cycles.filter((cycle): cycle is { acquire: CallPhases; release: CallPhases } => cycle.acquire !== undefined && cycle.release !== undefined);
  if (cut.length === 0) throw new Error(`no cycle of ${subject.id} could be cut at its sends and replies (${cycles.length} measured)`);
  return {
    ...subjectFields(subject),
    cycles: cycles.length,
    cut: cut.length,
    acquire: medianPhases(cut.map((cycle) => cycle.acquire)),
    release: medianPhases(cut.map((cycle) => cycle.release)),
    cycle: round(median(cut.map((cycle) => cycle.acquire.total + cycle.release.total)), 1),
  };
}

/** The phases as a markdown table, one row per subject, with the command that measured them. */
export function criticalPathMarkdown(results: readonly CriticalPath[], command: string): string[] {
  const phases = (call: CallPhases): string =>
    [call.beforeSend, call.onTheWire, call.idleOnTheWire, call.afterReply, call.total].map((value) => value.toFixed(1)).join(' | ');
  return [
    `Median µs per call of a sequential acquire + release loop, one key, each backend's subjects interleaved in rounds (command: \`${command}\`).`,
    'Before send: from the call to its first request leaving the process. On the wire: from there to the last reply read before the caller resumed (network, server, the client library handling the rest of the call\'s requests). Idle: of the time on the wire, how long the event loop waited with nothing to run; the rest the process was busy (code run after the send, the garbage collector), and a reply that arrived meanwhile waited to be read. After reply: from that reply to the caller. Each column is a median of its own.',
    '',
    '| backend | implementation | kind | acquire: before send | on the wire | idle | after reply | total | release: before send | on the wire | idle | after reply | total | cycle | cycles cut |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map((result) => `| ${result.backend} | ${result.label} | ${result.kind} | ${phases(result.acquire)} | ${phases(result.release)} | ${result.cycle.toFixed(1)} | ${result.cut} / ${result.cycles} |`),
  ];
}
