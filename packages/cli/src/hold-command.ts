import { isLockError, LockErrorCode, type LeaderHandle, type LockHandle, type LockProvider, type SemaphoreHandle } from '@fencelock/core';
import { lockAbortedError } from '@fencelock/core/adapter';
import { describeLocation } from './backend-config.js';
import { HANDLED_SIGNALS, processSignal, type CliIo, type HandledSignal } from './cli-io.js';
import { closeProvider, connectProvider } from './connect-provider.js';
import { backendWarnings } from './backend-warnings.js';
import { describeError, type ErrorContext } from './describe-error.js';
import { formatDuration } from './duration.js';
import { ExitCode, signalExitCode } from './exit-codes.js';
import type { HoldSettings } from './parse-command-line.js';
import { runCommand, type CommandOutcome } from './run-command.js';
import { WaitStatus, type HolderSummary } from './wait-status.js';

/** The variables `hold` adds to the command's environment. */
export const HOLD_ENV = {
  /** The lock key. */
  key: 'FENCELOCK_KEY',
  /** The fencing token, a decimal integer; unset when the backend has none (Redlock). */
  token: 'FENCELOCK_TOKEN',
  /** The owner id of this acquisition, as `inspect` shows it. */
  ownerId: 'FENCELOCK_OWNER_ID',
  /** How strong the token is: `global`, `per-key` or `none`. */
  fencing: 'FENCELOCK_FENCING',
  /** With `--permits`: the semaphore's limit; unset for a lock. */
  semaphoreLimit: 'FENCELOCK_SEMAPHORE_LIMIT',
  /** With `--permits`: how many of its permits this hold has; unset for a lock. */
  semaphorePermits: 'FENCELOCK_SEMAPHORE_PERMITS',
  /** With `elect`: the leadership's term, a decimal integer (the same as the token); unset when the backend has none. */
  term: 'FENCELOCK_TERM',
  /** With `elect`: the value this leader stands with (`--value`). */
  leaderValue: 'FENCELOCK_LEADER_VALUE',
} as const;

/**
 * `fencelock hold`: acquires the lock (waiting per `--wait`), runs the command while holding it,
 * stops the command if the lock is lost, releases the lock, and returns the exit status. With
 * `--permits` the same, with permits of a counting semaphore in place of the lock. `fencelock elect`
 * runs here too, with the leadership of an election in place of the lock: one path for the wait,
 * the command's process group, a loss and the exit status.
 */
export async function runHold(settings: HoldSettings, io: CliIo): Promise<number> {
  const onSignal = io.onSignal ?? processSignal;
  const say = (line: string): void => {
    io.stderr.write(`${line}\n`);
  };
  const verbose = (line: string): void => {
    if (settings.verbose) say(`fencelock: ${line}`);
  };
  const context: ErrorContext = {
    backend: settings.backend,
    key: settings.key,
    debug: settings.debug,
    conflictExitCode: settings.conflictExitCode,
    semaphore: settings.semaphore !== undefined,
    election: settings.election !== undefined,
  };
  const what = describeHeld(settings);

  // Until the command runs, a signal stops the wait (and releases whatever was granted meanwhile).
  const interrupt = new AbortController();
  let interruptedBy: HandledSignal | undefined;
  let stopListening: (() => void)[] = HANDLED_SIGNALS.map((signal) =>
    onSignal(signal, () => {
      interruptedBy ??= signal;
      interrupt.abort(new Error(`interrupted by ${signal}`));
    }),
  );
  const listenNoMore = (): void => {
    for (const off of stopListening) off();
    stopListening = [];
  };

  let provider: LockProvider | undefined;
  let lock: LockHandle | undefined;
  try {
    provider = await connectProvider(settings.backend, settings.ttlMs, settings.semaphore?.permits, settings.election !== undefined);
    verbose(`using ${describeLocation(settings.backend)}`);
    // One cheap read first: an unreachable backend is reported in seconds, where an acquire would
    // keep retrying it for the whole --wait.
    const [, warnings] = await Promise.all([
      abortable<unknown>(firstRead(provider, settings), interrupt.signal, settings.key),
      backendWarnings(provider),
    ]);
    // Always said: a setting that voids the guarantees matters more than a quiet terminal.
    for (const warning of warnings) say(`fencelock: warning: ${warning.message}`);
    lock = await acquire(provider, settings, interrupt.signal, io);
    if (interruptedBy !== undefined) return signalExitCode(interruptedBy);
    if (lock === undefined) {
      const taken =
        settings.election !== undefined
          ? 'has another leader'
          : settings.semaphore === undefined
            ? 'is held by another owner'
            : `has not ${settings.semaphore.permits === 1 ? 'a permit' : `${settings.semaphore.permits} permits`} free`;
      say(`fencelock: ${what} ${taken}; the command was not run`);
      return settings.conflictExitCode;
    }
    listenNoMore();
    const token = lock.fencingToken === undefined ? 'no fencing token' : `${isLeader(lock) ? 'term' : 'token'} ${lock.fencingToken}`;
    verbose(`${isLeader(lock) ? 'elected in' : 'acquired'} ${what} (${token}); running ${settings.command.join(' ')}`);
    const outcome = await holdWhileRunning(provider, lock, settings, io, onSignal);
    return exitStatus(outcome, settings, say, verbose);
  } catch (error) {
    if (interruptedBy !== undefined && isLockError(error, LockErrorCode.ABORTED)) {
      verbose(`stopped waiting for ${what} (${interruptedBy})`);
      return signalExitCode(interruptedBy);
    }
    const report = describeError(error, context);
    for (const line of report.lines) say(line);
    return report.exitCode;
  } finally {
    listenNoMore();
    // A second Ctrl-C must not cut the release short (it is bounded: see closeProvider).
    const ignore = HANDLED_SIGNALS.map((signal) => onSignal(signal, () => undefined));
    try {
      if (lock !== undefined) await release(lock, what, say, verbose);
      await closeProvider(provider);
    } finally {
      for (const off of ignore) off();
    }
  }
}

/** `lock "k"`, `semaphore "k" (n permits)` or `election "k"`: what a hold's messages talk about. */
function describeHeld(settings: HoldSettings): string {
  const key = JSON.stringify(settings.key);
  if (settings.election !== undefined) return `election ${key}`;
  return settings.semaphore === undefined ? `lock ${key}` : `semaphore ${key} (${settings.semaphore.limit} permits)`;
}

/** The cheap read that checks the backend answers before the wait: of the kind this hold takes. */
function firstRead(provider: LockProvider, settings: HoldSettings): Promise<unknown> {
  if (settings.election !== undefined) return provider.leader(settings.key);
  return settings.semaphore === undefined ? provider.inspect(settings.key) : provider.inspectSemaphore(settings.key);
}

/** The mode of the handles this hold waits for, as `contended` events carry it. */
function awaitedMode(settings: HoldSettings): 'lock' | 'semaphore' | 'leader' {
  if (settings.election !== undefined) return 'leader';
  return settings.semaphore === undefined ? 'lock' : 'semaphore';
}

/**
 * Acquires the lock, the semaphore's permits with `--permits`, or the leadership with `elect`, with
 * the status line; resolves `undefined` when `--no-wait` finds the key held (no permit free, another
 * leader).
 */
async function acquire(provider: LockProvider, settings: HoldSettings, signal: AbortSignal, io: CliIo): Promise<LockHandle | undefined> {
  const base = {
    signal,
    ...(settings.maxHoldMs === undefined ? {} : { maxHoldMs: settings.maxHoldMs }),
  };
  // A leadership stands with its value and keeps no metadata.
  const common = { ...base, metadata: settings.metadata };
  const { key, waitMs, semaphore, election } = settings;
  if (waitMs === 0) {
    if (election !== undefined) return provider.tryCampaign(key, { ...base, value: election.value });
    return semaphore === undefined ? provider.tryAcquire(key, { ...common, mode: settings.mode }) : provider.tryAcquireSemaphore(key, { ...common, ...semaphore });
  }
  const holders = async (): Promise<readonly HolderSummary[]> => {
    if (election !== undefined) {
      const leader = await provider.leader(key);
      // The status line shows a leader by its value (see WaitStatus).
      return leader === undefined ? [] : [{ ownerId: leader.value, fencingToken: leader.term, metadata: undefined }];
    }
    return (semaphore === undefined ? await provider.inspect(key) : await provider.inspectSemaphore(key))?.holders ?? [];
  };
  const status = new WaitStatus({ stderr: io.stderr, verbose: settings.verbose, key, waitMs, semaphore, election: election !== undefined });
  const stopWatching = provider.on('contended', (event) => {
    // A lock, a semaphore and an election of one key are apart: only the kind this hold waits for counts.
    if (event.key !== key || modeKind(event.mode) !== awaitedMode(settings)) return;
    status.contended();
    // Who holds it is shown when known; failing to find out must not disturb the wait.
    holders().then(
      (found) => status.holder(found[0]),
      () => undefined,
    );
  });
  try {
    // A campaign waits with no bound unless given one (`--wait forever` is the default of `elect`).
    if (election !== undefined) return await provider.campaign(key, { ...base, value: election.value, ...(Number.isFinite(waitMs) ? { waitMs } : {}) });
    return semaphore === undefined
      ? await provider.acquire(key, { ...common, mode: settings.mode, waitMs })
      : await provider.acquireSemaphore(key, { ...common, ...semaphore, waitMs });
  } finally {
    stopWatching();
    status.stop();
  }
}

/** Runs the command while the lock (or leadership) is held: confirms it, stops the command on loss. */
async function holdWhileRunning(
  provider: LockProvider,
  lock: LockHandle,
  settings: HoldSettings,
  io: CliIo,
  onSignal: NonNullable<CliIo['onSignal']>,
): Promise<CommandOutcome> {
  // Per-lock backends are extended by core every third of the TTL. Session backends keep the lock
  // through their session, which does not notice the lock's own key being deleted (an operator's
  // `etcdctl del`, a ZooKeeper `deleteall`): confirm the lock as often, so such a loss stops the command too.
  const confirm =
    provider.capabilities.expiry === 'session'
      ? setInterval(() => {
          lock.extend().catch(() => undefined);
        }, Math.max(100, Math.floor(provider.defaultTtlMs / 3)))
      : undefined;
  confirm?.unref();
  const offUncertain = provider.on('uncertain', (event) => {
    if (event.ownerId === lock.ownerId && settings.verbose) io.stderr.write(`fencelock: connection to the backend lost; ${describeHeld(settings)} is uncertain\n`);
  });
  const offRecovered = provider.on('recovered', (event) => {
    if (event.ownerId === lock.ownerId && settings.verbose) io.stderr.write(`fencelock: connection back; ${describeHeld(settings)} still held\n`);
  });
  try {
    return await runCommand({
      command: settings.command,
      env: commandEnv(io.env, lock, provider),
      foreground: settings.foreground,
      lost: lock.signal,
      killGraceMs: settings.killGraceMs,
      onSignal,
      onStop: (signal) => {
        if (signal === 'SIGTERM') {
          const report = describeError(lock.signal.reason, { key: settings.key, debug: settings.debug, election: settings.election !== undefined });
          io.stderr.write(`${report.lines.join('\n')}\n`);
          io.stderr.write(`fencelock: stopping the command (SIGTERM, then SIGKILL after ${formatDuration(settings.killGraceMs)})\n`);
        } else {
          io.stderr.write('fencelock: the command (or what it left in its process group) did not stop in time: SIGKILL\n');
        }
      },
    });
  } finally {
    clearInterval(confirm);
    offUncertain();
    offRecovered();
  }
}

/** The command's environment: ours, plus the lock's key, owner id and fencing token (and a semaphore's limit and permits). */
function commandEnv(env: CliIo['env'], lock: LockHandle, provider: LockProvider): Record<string, string> {
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (value !== undefined) result[name] = value;
  result[HOLD_ENV.key] = lock.key;
  // As with the token: an outer hold's semaphore must not be taken for this one.
  delete result[HOLD_ENV.semaphoreLimit];
  delete result[HOLD_ENV.semaphorePermits];
  delete result[HOLD_ENV.term];
  delete result[HOLD_ENV.leaderValue];
  if (isLeader(lock)) {
    result[HOLD_ENV.leaderValue] = lock.value;
    if (lock.term !== undefined) result[HOLD_ENV.term] = lock.term.toString();
  }
  if (isSemaphore(lock)) {
    result[HOLD_ENV.semaphoreLimit] = String(lock.limit);
    result[HOLD_ENV.semaphorePermits] = String(lock.permits);
  }
  result[HOLD_ENV.ownerId] = lock.ownerId;
  result[HOLD_ENV.fencing] = provider.capabilities.fencing;
  // An outer fencelock's token must not leak into a command that has none.
  if (lock.fencingToken === undefined) delete result[HOLD_ENV.token];
  else result[HOLD_ENV.token] = lock.fencingToken.toString();
  return result;
}

function isSemaphore(handle: LockHandle): handle is SemaphoreHandle {
  return handle.mode === 'semaphore';
}

function isLeader(handle: LockHandle): handle is LeaderHandle {
  return handle.mode === 'leader';
}

/** A handle mode as the kind of thing it holds: shared and exclusive are both a lock's. */
function modeKind(mode: LockHandle['mode']): 'lock' | 'semaphore' | 'leader' {
  return mode === 'semaphore' || mode === 'leader' ? mode : 'lock';
}

function exitStatus(outcome: CommandOutcome, settings: HoldSettings, say: (line: string) => void, verbose: (line: string) => void): number {
  if (outcome.kind === 'not-started') {
    const program = JSON.stringify(settings.command[0]);
    if (outcome.error.code === 'ENOENT') {
      say(`fencelock: command not found: ${program}`);
      return ExitCode.COMMAND_NOT_FOUND;
    }
    say(`fencelock: cannot run ${program}: ${outcome.error.message}`);
    return outcome.error.code === 'EACCES' || outcome.error.code === 'EISDIR' ? ExitCode.CANNOT_EXECUTE : ExitCode.INTERNAL;
  }
  if (outcome.stoppedForLoss) return ExitCode.LOCK_LOST;
  const status = outcome.code ?? (outcome.signal === null ? ExitCode.INTERNAL : signalExitCode(outcome.signal));
  verbose(`the command exited with status ${status}`);
  return status;
}

async function release(lock: LockHandle, what: string, say: (line: string) => void, verbose: (line: string) => void): Promise<void> {
  try {
    const wasHeld = await lock.release();
    if (wasHeld) verbose(`released ${what}`);
    else if (!lock.signal.aborted || !isLockError(lock.signal.reason, LockErrorCode.LOST)) verbose(`${what} was no longer held at release`);
  } catch (error) {
    say(`fencelock: could not release ${what} (it expires on its own): ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** `promise`, or a `LOCK_ABORTED` rejection as soon as `signal` aborts (Ctrl-C must not wait for a slow server). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal, key: string): Promise<T> {
  if (signal.aborted) return Promise.reject(lockAbortedError(key, signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(lockAbortedError(key, signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
