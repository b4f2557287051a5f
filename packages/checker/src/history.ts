/**
 * The history record: one JSONL line per event, as FAULTS.md ("A history checker") describes it.
 * Times are monotonic nanoseconds (`process.hrtime.bigint()`, system-wide CLOCK_MONOTONIC on one
 * host), kept as JSON numbers: a double holds them to the nanosecond for 104 days of uptime and to
 * a few ns after that, far below the checker's millisecond slack. Fencing tokens are 64-bit and
 * would lose precision as numbers, so they travel as decimal strings and live as `bigint`.
 */

/** A JSON value, for the free-form parts of nemesis records. */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** The operations and signals a client records. */
export const CLIENT_FUNCTIONS = ['acquire', 'extend', 'release', 'lost', 'suspended', 'reconnected', 'write', 'read'] as const;

/** One of {@link CLIENT_FUNCTIONS}. */
export type ClientFunction = (typeof CLIENT_FUNCTIONS)[number];

/**
 * `invoke` starts an operation; `ok` and `fail` complete it with a known outcome; `info` completes it
 * with an unknown one (a timeout: the operation may or may not have taken effect, as in Jepsen).
 * Signals (`lost`, `suspended`, `reconnected`) and nemesis steps are recorded as `info`.
 */
export const OPERATION_TYPES = ['invoke', 'ok', 'fail', 'info'] as const;

/** One of {@link OPERATION_TYPES}. */
export type OperationType = (typeof OPERATION_TYPES)[number];

/** The `proc` of every nemesis record. */
export const NEMESIS_PROC = 'nemesis';

/** Fields every record carries. */
interface HistoryEventBase {
  /** The run this event belongs to (one seeded workload against one backend). */
  readonly run: string;
  /** Position in the run's history, unique within the run. Violations cite events by it. */
  readonly seq: number;
  /** When the parent (or the recording process) saw the event, monotonic ns. The checker's time axis. */
  readonly t: number;
  /** The client's own monotonic clock at the event, ns; `null` when the parent made the event. */
  readonly tc: number | null;
  /** Which process: a client id, or {@link NEMESIS_PROC}. */
  readonly proc: string;
  /** The operation's outcome class. */
  readonly type: OperationType;
}

/**
 * An operation or signal of a client process.
 *
 * - `acquire ok` carries `token`, `lockId` (the handle's `ownerId`), `validUntil` and `ttlGranted`.
 * - `extend ok` (also automatic renewals, recorded without an `invoke`) carries the new `validUntil`.
 * - `release ok` means `release()` resolved `true` (the lock was still held); a release that resolved
 *   `false` is recorded as `fail` with `err: "not-held"`.
 * - `lost` carries the loss reason (`expired`, `taken-over`, …) in `err`.
 * - `write` (a write through the library's fence) carries `token` and `lockId`; `ok` = the store accepted it.
 */
export interface ClientEvent extends HistoryEventBase {
  readonly key: string;
  readonly f: ClientFunction;
  /** The fencing token, or `null` when there is none (Redlock, or not known yet). */
  readonly token: bigint | null;
  /** The acquisition's owner id, linking acquire, extend, release, lost and write of one hold. */
  readonly lockId: string | null;
  /**
   * Until when the lock is valid, on the client's monotonic clock in ns (the same clock as `tc`),
   * reported on every grant and renewal; `null` when not reported or the lock cannot expire.
   */
  readonly validUntil: number | null;
  /** The TTL the backend actually granted, in ms (etcd turns 1 s into 2 s). */
  readonly ttlGranted: number | null;
  /** An error code or loss reason; `null` on success. */
  readonly err: string | null;
  /**
   * On the `acquire` events of a counting semaphore: the limit the holders agreed on. Absent for
   * locks. Semaphore holds are a namespace apart from lock holds of the same key.
   */
  readonly limit?: number;
  /** On the `acquire` events of a counting semaphore: how many permits the acquisition takes. */
  readonly permits?: number;
  /**
   * On the `acquire` events of a campaign for leadership: the campaigner's value (possibly empty).
   * Absent for locks and semaphores. Leaderships are a namespace apart from the lock and semaphore
   * holds of the same key (the election's name); the token of a leadership is its term.
   */
  readonly value?: string;
  readonly nemesis?: undefined;
}

/** What a nemesis step did, for timelines. */
export interface NemesisDetail {
  /** The affected client `proc` or server name, if the step targets one (pause `client-2`). */
  readonly target?: string;
  /** Anything else the step wants to log (ports, rule text, duration). */
  readonly value?: JsonValue;
}

/**
 * A fault injection step. Steps named `start-X` and `stop-X` open and close a fault window
 * (`start-pause` / `stop-pause` with `target` = a client proc is how a client GC pause is logged);
 * any other name is an instant (`kill`, `restart`).
 */
export interface NemesisEvent extends HistoryEventBase {
  readonly key: string | null;
  /** The step's name, e.g. `start-partition`, `stop-pause`, `kill`. */
  readonly f: string;
  readonly token: null;
  readonly lockId: null;
  readonly validUntil: null;
  readonly ttlGranted: null;
  readonly err: string | null;
  readonly nemesis: NemesisDetail;
}

/** One line of a history. */
export type HistoryEvent = ClientEvent | NemesisEvent;

/** True for nemesis steps. */
export function isNemesisEvent(event: HistoryEvent): event is NemesisEvent {
  return event.nemesis !== undefined;
}

/** A line that does not follow the record format. */
export class HistoryFormatError extends Error {
  /** The 1-based line number, when parsing a file. */
  readonly line: number | undefined;
  constructor(message: string, line?: number) {
    super(line === undefined ? message : `line ${line}: ${message}`);
    this.name = 'HistoryFormatError';
    this.line = line;
  }
}

/** The JSON form of an event: the token as a decimal string. */
export function serializeEvent(event: HistoryEvent): string {
  return JSON.stringify({ ...event, token: event.token === null ? null : event.token.toString() });
}

const FUNCTION_SET: ReadonlySet<string> = new Set(CLIENT_FUNCTIONS);
const TYPE_SET: ReadonlySet<string> = new Set(OPERATION_TYPES);
const TOKEN_PATTERN = /^-?(0|[1-9][0-9]*)$/;

type Fields = Readonly<Record<string, unknown>>;

function refuse(message: string): never {
  throw new HistoryFormatError(message);
}

function stringField(record: Fields, name: string): string {
  const value = record[name];
  if (typeof value !== 'string') refuse(`"${name}" must be a string, got ${JSON.stringify(value) ?? 'nothing'}`);
  return value;
}

function nullableString(record: Fields, name: string): string | null {
  const value = record[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') refuse(`"${name}" must be a string or null, got ${JSON.stringify(value)}`);
  return value;
}

function timeField(record: Fields, name: string, nullable: boolean): number | null {
  const value = record[name];
  if (nullable && (value === undefined || value === null)) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    refuse(`"${name}" must be a non-negative finite number of ns, got ${JSON.stringify(value) ?? 'nothing'}`);
  }
  return value;
}

function tokenField(record: Fields): bigint | null {
  const value = record['token'];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !TOKEN_PATTERN.test(value)) {
    refuse(`"token" must be a decimal string or null, got ${JSON.stringify(value)}`);
  }
  return BigInt(value);
}

function countField(record: Fields, name: string): number | undefined {
  const value = record[name];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) refuse(`"${name}" must be a positive integer, got ${JSON.stringify(value)}`);
  return value;
}

function nemesisField(value: unknown): NemesisDetail {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) refuse('"nemesis" must be an object');
  const detail = value as Fields;
  const target = detail['target'];
  if (target !== undefined && typeof target !== 'string') refuse('"nemesis.target" must be a string');
  return {
    ...(target === undefined ? {} : { target }),
    ...(detail['value'] === undefined ? {} : { value: detail['value'] as JsonValue }),
  };
}

/** Validates one parsed JSON record and turns it into an event. */
export function toHistoryEvent(json: unknown): HistoryEvent {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) refuse('a record must be a JSON object');
  const record = json as Fields;
  const seq = record['seq'];
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) refuse(`"seq" must be a non-negative integer`);
  const type = stringField(record, 'type');
  if (!TYPE_SET.has(type)) refuse(`"type" must be one of ${OPERATION_TYPES.join(', ')}, got "${type}"`);
  const base = {
    run: stringField(record, 'run'),
    seq,
    t: timeField(record, 't', false) as number,
    tc: timeField(record, 'tc', true),
    proc: stringField(record, 'proc'),
    type: type as OperationType,
  };
  const f = stringField(record, 'f');
  if (record['nemesis'] !== undefined && record['nemesis'] !== null) {
    return {
      ...base,
      key: nullableString(record, 'key'),
      f,
      token: null,
      lockId: null,
      validUntil: null,
      ttlGranted: null,
      err: nullableString(record, 'err'),
      nemesis: nemesisField(record['nemesis']),
    };
  }
  if (!FUNCTION_SET.has(f)) refuse(`"f" must be one of ${CLIENT_FUNCTIONS.join(', ')} for a client event, got "${f}"`);
  const ttlGranted = record['ttlGranted'];
  if (ttlGranted !== undefined && ttlGranted !== null && (typeof ttlGranted !== 'number' || !Number.isFinite(ttlGranted) || ttlGranted < 0)) {
    refuse(`"ttlGranted" must be a non-negative number of ms or null`);
  }
  const limit = countField(record, 'limit');
  const permits = countField(record, 'permits');
  if ((limit === undefined) !== (permits === undefined)) refuse('"limit" and "permits" go together (a semaphore acquisition)');
  const value = record['value'];
  if (value !== undefined && value !== null && typeof value !== 'string') refuse(`"value" must be a string, got ${JSON.stringify(value)}`);
  const election = typeof value === 'string';
  if (election && limit !== undefined) refuse('"value" (a campaign) and "limit" (a semaphore acquisition) do not go together');
  return {
    ...base,
    ...(limit === undefined ? {} : { limit, permits }),
    ...(election ? { value } : {}),
    key: stringField(record, 'key'),
    f: f as ClientFunction,
    token: tokenField(record),
    lockId: nullableString(record, 'lockId'),
    validUntil: timeField(record, 'validUntil', true),
    ttlGranted: typeof ttlGranted === 'number' ? ttlGranted : null,
    err: nullableString(record, 'err'),
  };
}

/** Parses one JSONL line. @throws {@link HistoryFormatError} */
export function parseEvent(line: string, lineNumber?: number): HistoryEvent {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (error) {
    throw new HistoryFormatError(`not JSON (${error instanceof Error ? error.message : String(error)})`, lineNumber);
  }
  try {
    return toHistoryEvent(json);
  } catch (error) {
    if (error instanceof HistoryFormatError && lineNumber !== undefined) throw new HistoryFormatError(error.message, lineNumber);
    throw error;
  }
}

/** Options of {@link parseHistory}. */
export interface ParseHistoryOptions {
  /**
   * Drop an unparsable last line that has no trailing newline: a process killed with `kill -9` in the
   * middle of a write leaves one. Any other bad line throws. @default true
   */
  readonly tolerateTornTail?: boolean;
}

/**
 * Parses a JSONL history (blank lines skipped) and checks that `seq` is unique within each run.
 * @throws {@link HistoryFormatError} naming the line.
 */
export function parseHistory(text: string, options: ParseHistoryOptions = {}): HistoryEvent[] {
  const tolerateTornTail = options.tolerateTornTail ?? true;
  const lines = text.split('\n');
  const events: HistoryEvent[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index]?.trim() ?? '';
    if (line === '') continue;
    const isTornTail = index === lines.length - 1 && !text.endsWith('\n');
    let event: HistoryEvent;
    try {
      event = parseEvent(line, index + 1);
    } catch (error) {
      if (isTornTail && tolerateTornTail) break;
      throw error;
    }
    const id = `${event.run}\u0000${event.seq}`;
    if (seen.has(id)) throw new HistoryFormatError(`seq ${event.seq} appears twice in run "${event.run}"`, index + 1);
    seen.add(id);
    events.push(event);
  }
  return events;
}
