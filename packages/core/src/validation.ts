import type { LockCapabilities } from './capabilities.js';
import { LockError, LockErrorCode, LockRangeError, LockTypeError, lockAbortedError } from './errors.js';
import type {
  AcquireOptions,
  AcquireSemaphoreOptions,
  CampaignOptions,
  LockMode,
  ObserveOptions,
  TryAcquireOptions,
  TryAcquireSemaphoreOptions,
  TryCampaignOptions,
} from './types.js';

/** The longest key accepted, in UTF-8 bytes. Longer keys are refused, never hashed or truncated. */
export const MAX_KEY_BYTES = 512;
/** The longest metadata string accepted, in UTF-8 bytes. */
export const MAX_METADATA_BYTES = 1024;
/** The largest TTL, wait or hold bound in ms: Node timers overflow above it and fire at once. */
export const MAX_DURATION_MS = 2 ** 31 - 1;
/**
 * The largest semaphore `limit` accepted. It bounds what a backend reads or writes for one acquisition
 * (a Redis script walks at most this many holders, etcd ranges over at most this many keys).
 */
export const MAX_SEMAPHORE_LIMIT = 1024;
/**
 * The longest election value accepted, in UTF-8 bytes: as long as lock metadata, which every backend
 * already stores beside a holder (an etcd key's value, a znode's data, a Redis hash field, a row).
 */
export const MAX_ELECTION_VALUE_BYTES = 1024;
/** The shortest `pollMs` of `observe`: a shorter one would turn a polled backend into a busy loop. */
export const MIN_OBSERVE_POLL_MS = 10;
/** The longest `pollMs` of `observe`: a change must be seen within a minute at worst. */
export const MAX_OBSERVE_POLL_MS = 60_000;
/** The `pollMs` of `observe` when none is given. */
export const DEFAULT_OBSERVE_POLL_MS = 1_000;

/**
 * Checks a lock key. The rule is the same for every adapter: any non-empty, well-formed string of at
 * most {@link MAX_KEY_BYTES} UTF-8 bytes, compared byte for byte (no trimming, case folding or Unicode
 * normalisation; `'é'` and `'e\u0301'` are different locks). Adapters encode keys injectively.
 */
export function validateKey(key: unknown, argument = 'key'): string {
  if (typeof key !== 'string') {
    throw new LockTypeError(argument, `${argument} must be a string, got ${describe(key)}`);
  }
  if (key.length === 0) {
    throw new LockRangeError(argument, `${argument} must not be empty`);
  }
  // A lone surrogate encodes to U+FFFD in UTF-8, so '\uD800' and '\uDBFF' would share one lock.
  if (!key.isWellFormed()) {
    throw new LockRangeError(argument, `${argument} must be well-formed Unicode (it contains a lone surrogate)`);
  }
  const bytes = Buffer.byteLength(key, 'utf8');
  if (bytes > MAX_KEY_BYTES) {
    throw new LockRangeError(argument, `${argument} is ${bytes} UTF-8 bytes long; the limit is ${MAX_KEY_BYTES}`);
  }
  return key;
}

/** Checks a duration in ms: a finite number in (0, 2^31−1]; fractions round up. Returns the integer ms. */
export function validateDurationMs(value: unknown, argument: string, minimum = 1): number {
  if (typeof value !== 'number') {
    throw new LockTypeError(argument, `${argument} must be a number of milliseconds, got ${describe(value)}`);
  }
  if (!Number.isFinite(value)) {
    throw new LockRangeError(argument, `${argument} must be finite, got ${String(value)}`);
  }
  if (value <= 0) {
    throw new LockRangeError(argument, `${argument} must be positive, got ${value}`);
  }
  const ms = Math.ceil(value);
  if (ms > MAX_DURATION_MS) {
    throw new LockRangeError(argument, `${argument} must be at most ${MAX_DURATION_MS} ms, got ${value}`);
  }
  if (ms < minimum) {
    throw new LockRangeError(argument, `${argument} must be at least ${minimum} ms on this provider, got ${value}`);
  }
  return ms;
}

/** Checks a TTL against the provider's minimum and rounds it up to the provider's resolution. */
export function validateTtlMs(value: unknown, capabilities: LockCapabilities, argument = 'options.ttlMs'): number {
  const ms = validateDurationMs(value, argument, capabilities.minTtlMs);
  const step = capabilities.ttlResolutionMs;
  const rounded = Math.ceil(ms / step) * step;
  if (rounded > MAX_DURATION_MS) {
    throw new LockRangeError(argument, `${argument} rounds up to ${rounded} ms, above ${MAX_DURATION_MS}`);
  }
  return rounded;
}

/** Checks a wait bound: `0` (try once), a finite duration, or `Infinity`. */
export function validateWaitMs(value: unknown, argument = 'options.waitMs'): number {
  if (typeof value !== 'number') {
    throw new LockTypeError(argument, `${argument} must be a number of milliseconds, got ${describe(value)}`);
  }
  if (Number.isNaN(value) || value < 0) {
    throw new LockRangeError(argument, `${argument} must be 0 or more, got ${String(value)}`);
  }
  if (value === Number.POSITIVE_INFINITY || value === 0) return value;
  return validateDurationMs(value, argument);
}

/** Throws `LOCK_ABORTED` if `signal` is already aborted; checks that it is an AbortSignal at all. */
export function validateSignal(signal: unknown, key: string, argument = 'options.signal'): AbortSignal | undefined {
  if (signal === undefined) return undefined;
  if (!(signal instanceof AbortSignal)) {
    throw new LockTypeError(argument, `${argument} must be an AbortSignal, got ${describe(signal)}`);
  }
  if (signal.aborted) throw lockAbortedError(key, signal);
  return signal;
}

/** A semaphore acquisition's checked limit and permits. */
export interface SemaphoreSettings {
  readonly limit: number;
  readonly permits: number;
}

/**
 * Checks a semaphore's `limit` (an integer in 1..{@link MAX_SEMAPHORE_LIMIT}) and `permits` (an
 * integer in 1..limit, default 1). Capabilities are not looked at here.
 */
export function validateSemaphoreLimit(limit: unknown, permits: unknown = 1): SemaphoreSettings {
  const checkedLimit = validateCount(limit, 'options.limit', MAX_SEMAPHORE_LIMIT);
  const checkedPermits = validateCount(permits, 'options.permits', checkedLimit);
  return { limit: checkedLimit, permits: checkedPermits };
}

function validateCount(value: unknown, argument: string, maximum: number): number {
  if (typeof value !== 'number') {
    throw new LockTypeError(argument, `${argument} must be an integer, got ${describe(value)}`);
  }
  if (!Number.isInteger(value) || value < 1 || value > maximum) {
    throw new LockRangeError(argument, `${argument} must be an integer from 1 to ${maximum}, got ${String(value)}`);
  }
  return value;
}

/** A campaign's checked value. */
export interface ElectionSettings {
  readonly value: string;
}

/** Checks an election value: a well-formed string of at most {@link MAX_ELECTION_VALUE_BYTES} UTF-8 bytes (may be empty). */
export function validateElectionValue(value: unknown, argument = 'options.value'): string {
  if (typeof value !== 'string') {
    throw new LockTypeError(argument, `${argument} must be a string, got ${describe(value)}`);
  }
  // A lone surrogate would be stored as U+FFFD by a UTF-8 backend: another value than the one given.
  if (!value.isWellFormed()) {
    throw new LockRangeError(argument, `${argument} must be well-formed Unicode (it contains a lone surrogate)`);
  }
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_ELECTION_VALUE_BYTES) {
    throw new LockRangeError(argument, `${argument} is ${bytes} UTF-8 bytes long; the limit is ${MAX_ELECTION_VALUE_BYTES}`);
  }
  return value;
}

/** The checked form of `observe` options. */
export interface NormalizedObserveOptions {
  readonly signal: AbortSignal | undefined;
  readonly pollMs: number;
}

/**
 * Checks `observe` options: only `signal` (an AbortSignal; an aborted one is accepted: the iteration
 * then ends at once) and `pollMs` (from {@link MIN_OBSERVE_POLL_MS} to {@link MAX_OBSERVE_POLL_MS}).
 */
export function normalizeObserveOptions(options: ObserveOptions | undefined): NormalizedObserveOptions {
  if (options === undefined) return { signal: undefined, pollMs: DEFAULT_OBSERVE_POLL_MS };
  if (typeof options !== 'object' || options === null) {
    throw new LockTypeError('options', `options must be an object, got ${describe(options)}`);
  }
  for (const name of Object.keys(options)) {
    if (name !== 'signal' && name !== 'pollMs') throw unknownOption(name, ' (observe takes signal and pollMs)');
  }
  const { signal, pollMs } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockTypeError('options.signal', `options.signal must be an AbortSignal, got ${describe(signal)}`);
  }
  let poll = DEFAULT_OBSERVE_POLL_MS;
  if (pollMs !== undefined) {
    poll = validateDurationMs(pollMs, 'options.pollMs', MIN_OBSERVE_POLL_MS);
    if (poll > MAX_OBSERVE_POLL_MS) {
      throw new LockRangeError('options.pollMs', `options.pollMs must be at most ${MAX_OBSERVE_POLL_MS} ms, got ${pollMs}`);
    }
  }
  return { signal, pollMs: poll };
}

/** Which primitive an acquire call is for: it decides which options it takes. */
export type AcquireKind = 'lock' | 'semaphore' | 'election';

/** The checked, defaulted form of acquire options that core hands to a backend. */
export interface NormalizedAcquireOptions {
  readonly ttlMs: number;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
  readonly mode: LockMode;
  readonly autoExtend: boolean;
  readonly maxHoldMs: number | undefined;
  readonly metadata: string | undefined;
  /** For a semaphore acquisition: its limit and permits (then `mode` is `exclusive` and unused). */
  readonly semaphore?: SemaphoreSettings | undefined;
  /** For a campaign: the campaigner's value (then `mode` is `exclusive` and unused, `metadata` undefined). */
  readonly election?: ElectionSettings | undefined;
}

/**
 * Checks every acquire option before any I/O, against the provider's capabilities.
 * `waitMs` is forced to 0 for `tryAcquire` (which has no such option).
 */
export function normalizeAcquireOptions(
  key: string,
  options: AcquireOptions | TryAcquireOptions | undefined,
  context: { capabilities: LockCapabilities; defaultTtlMs: number; defaultWaitMs: number; tryOnce: boolean },
): NormalizedAcquireOptions {
  return normalizeOptions(key, options, context.capabilities, context.defaultTtlMs, context.defaultWaitMs, context.tryOnce);
}

/**
 * {@link normalizeAcquireOptions} with its context as arguments (core's acquire path builds no context
 * object). For a `semaphore`, the options are a semaphore's: `limit` (required) and `permits` are read
 * and checked, and `mode` is refused as an unknown option. For an `election`, `value` (required) is
 * read and checked, and `mode` and `metadata` are refused.
 */
export function normalizeOptions(
  key: string,
  options: AcquireOptions | TryAcquireOptions | AcquireSemaphoreOptions | TryAcquireSemaphoreOptions | CampaignOptions | TryCampaignOptions | undefined,
  capabilities: LockCapabilities,
  defaultTtlMs: number,
  defaultWaitMs: number,
  tryOnce: boolean,
  kind: AcquireKind = 'lock',
): NormalizedAcquireOptions {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new LockTypeError('options', `options must be an object, got ${describe(options)}`);
  }
  const given = options === undefined ? NO_OPTIONS : readAcquireOptions(options, tryOnce, kind);
  let semaphoreSettings: SemaphoreSettings | undefined;
  let electionSettings: ElectionSettings | undefined;
  if (kind === 'election') {
    if (options === undefined) throw new LockTypeError('options', 'options must be an object with a value, got undefined');
    electionSettings = { value: validateElectionValue(given.value) };
    if (capabilities.election === 'none') throw unsupported(key, 'this provider has no leader election');
  }
  if (kind === 'semaphore') {
    if (options === undefined) throw new LockTypeError('options', 'options must be an object with a limit, got undefined');
    semaphoreSettings = validateSemaphoreLimit(given.limit, given.permits ?? 1);
    if (capabilities.semaphore === 'none') throw unsupported(key, 'this provider has no semaphores');
    if (semaphoreSettings.permits > 1 && capabilities.semaphore !== 'multi-permit') {
      throw unsupported(key, 'this provider cannot take several semaphore permits at once');
    }
  }
  const mode = given.mode ?? 'exclusive';
  if (mode !== 'exclusive' && mode !== 'shared') {
    throw new LockTypeError('options.mode', `options.mode must be 'exclusive' or 'shared', got ${describe(mode)}`);
  }
  if (mode === 'shared' && !capabilities.readWrite) {
    throw unsupported(key, 'this provider has no shared (read) locks');
  }
  if (given.autoExtend !== undefined && typeof given.autoExtend !== 'boolean') {
    throw new LockTypeError('options.autoExtend', `options.autoExtend must be a boolean, got ${describe(given.autoExtend)}`);
  }
  if (capabilities.expiry === 'session') {
    if (given.ttlMs !== undefined) {
      throw unsupported(key, 'this provider binds locks to its session; set the session timeout on the provider instead of options.ttlMs');
    }
    if (given.autoExtend === false) {
      throw unsupported(key, 'this provider keeps locks alive through its session and cannot turn extension off');
    }
  }
  const ttlMs = given.ttlMs === undefined ? defaultTtlMs : validateTtlMs(given.ttlMs, capabilities);
  const waitMs = tryOnce ? 0 : given.waitMs === undefined ? defaultWaitMs : validateWaitMs(given.waitMs);
  const maxHoldMs = given.maxHoldMs === undefined ? undefined : validateDurationMs(given.maxHoldMs, 'options.maxHoldMs');
  let metadata: string | undefined;
  if (given.metadata !== undefined) {
    if (typeof given.metadata !== 'string') {
      throw new LockTypeError('options.metadata', `options.metadata must be a string, got ${describe(given.metadata)}`);
    }
    if (!given.metadata.isWellFormed() || Buffer.byteLength(given.metadata, 'utf8') > MAX_METADATA_BYTES) {
      throw new LockRangeError('options.metadata', `options.metadata must be well-formed and at most ${MAX_METADATA_BYTES} UTF-8 bytes`);
    }
    metadata = given.metadata;
  }
  const signal = validateSignal(given.signal, key);
  const autoExtend = (given.autoExtend ?? true) && capabilities.extend;
  return { ttlMs, waitMs, signal, mode, autoExtend, maxHoldMs, metadata, semaphore: semaphoreSettings, election: electionSettings };
}

type GivenOptions = { -readonly [K in keyof AcquireOptions]: AcquireOptions[K] } & {
  limit: unknown;
  permits: unknown;
  value: unknown;
};

const NO_OPTIONS: GivenOptions = Object.freeze({
  ttlMs: undefined,
  waitMs: undefined,
  signal: undefined,
  mode: undefined,
  autoExtend: undefined,
  maxHoldMs: undefined,
  metadata: undefined,
  limit: undefined,
  permits: undefined,
  value: undefined,
});

// The option names, each with a bit for the set of names found among an object's own keys.
const OPTION_BITS = { ttlMs: 1, waitMs: 2, signal: 4, mode: 8, autoExtend: 16, maxHoldMs: 32, metadata: 64, limit: 128, permits: 256, value: 512 } as const;
const OPTION_NAMES = Object.keys(OPTION_BITS) as (keyof typeof OPTION_BITS)[];

/**
 * Reads the options in one pass over their own enumerable names, refusing unknown ones. Only the
 * options present are read: reading absent properties of an object built by spread (`{ ...defaults,
 * waitMs }`, the usual way to pass options) takes V8 a slow path, more than the rest of the validation
 * together. Options that may be found elsewhere than in the own enumerable properties of a plain object
 * (a class instance's getters, a non-enumerable property) are read as properties, as before. The
 * names are walked with `for…in` (own names kept, as `Object.keys` would give them), which needs no
 * array of names.
 */
function readAcquireOptions(
  options: AcquireOptions | AcquireSemaphoreOptions | CampaignOptions,
  tryOnce: boolean,
  kind: AcquireKind,
): GivenOptions {
  // One view of every shape: which names may be present is decided by `kind`, below.
  const read = options as AcquireOptions & Partial<Pick<AcquireSemaphoreOptions, 'limit' | 'permits'>> & Partial<Pick<CampaignOptions, 'value'>>;
  const semaphore = kind === 'semaphore';
  const election = kind === 'election';
  const given: GivenOptions = {
    ttlMs: undefined,
    waitMs: undefined,
    signal: undefined,
    mode: undefined,
    autoExtend: undefined,
    maxHoldMs: undefined,
    metadata: undefined,
    limit: undefined,
    permits: undefined,
    value: undefined,
  };
  let found = 0;
  for (const name in read) {
    if (!Object.hasOwn(read, name)) continue;
    switch (name) {
      case 'ttlMs':
        given.ttlMs = read.ttlMs;
        found |= OPTION_BITS.ttlMs;
        break;
      case 'waitMs':
        if (tryOnce) throw unknownOption(name, election ? ' (tryCampaign never waits; use campaign)' : ' (tryAcquire never waits; use acquire)');
        given.waitMs = read.waitMs;
        found |= OPTION_BITS.waitMs;
        break;
      case 'signal':
        given.signal = read.signal;
        found |= OPTION_BITS.signal;
        break;
      case 'mode':
        if (semaphore) throw unknownOption(name, ' (a semaphore has no mode)');
        if (election) throw unknownOption(name, ' (a campaign has no mode)');
        given.mode = read.mode;
        found |= OPTION_BITS.mode;
        break;
      case 'autoExtend':
        given.autoExtend = read.autoExtend;
        found |= OPTION_BITS.autoExtend;
        break;
      case 'maxHoldMs':
        given.maxHoldMs = read.maxHoldMs;
        found |= OPTION_BITS.maxHoldMs;
        break;
      case 'metadata':
        if (election) throw unknownOption(name, ' (a campaign stores its value)');
        given.metadata = read.metadata;
        found |= OPTION_BITS.metadata;
        break;
      case 'limit':
        if (!semaphore) throw unknownOption(name, ' (limit is an option of acquireSemaphore)');
        given.limit = read.limit;
        found |= OPTION_BITS.limit;
        break;
      case 'permits':
        if (!semaphore) throw unknownOption(name, ' (permits is an option of acquireSemaphore)');
        given.permits = read.permits;
        found |= OPTION_BITS.permits;
        break;
      case 'value':
        if (!election) throw unknownOption(name, ' (value is an option of campaign)');
        given.value = read.value;
        found |= OPTION_BITS.value;
        break;
      default:
        throw unknownOption(name, '');
    }
  }
  if (!isPlainWith(read, found)) {
    given.ttlMs = read.ttlMs;
    given.waitMs = read.waitMs;
    given.signal = read.signal;
    given.mode = read.mode;
    given.autoExtend = read.autoExtend;
    given.maxHoldMs = read.maxHoldMs;
    given.metadata = read.metadata;
    if (semaphore) {
      given.mode = undefined;
      given.limit = read.limit;
      given.permits = read.permits;
    }
    if (election) {
      given.mode = undefined;
      given.metadata = undefined;
      given.value = read.value;
    }
  }
  return given;
}

// Whether every option `options` may carry is among the own enumerable ones `found`: a plain object
// (or one without a prototype) with no other option as an own property (a non-enumerable one).
function isPlainWith(options: object, found: number): boolean {
  const prototype: unknown = Object.getPrototypeOf(options);
  if (prototype !== Object.prototype && prototype !== null) return false;
  for (const name of OPTION_NAMES) {
    if ((found & OPTION_BITS[name]) === 0 && Object.hasOwn(options, name)) return false;
  }
  return true;
}

function unsupported(key: string, what: string): LockError {
  return new LockError(LockErrorCode.UNSUPPORTED, `${what} (key "${key}")`, { key });
}

function unknownOption(name: string, hint: string): LockTypeError {
  return new LockTypeError(`options.${name}`, `unknown option "${name}"${hint}`);
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'bigint') return `a bigint (${value}n)`;
  if (typeof value === 'symbol') return 'a symbol';
  if (typeof value === 'object') return Buffer.isBuffer(value) ? 'a Buffer' : 'an object';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return `the ${typeof value} ${String(value)}`;
}
