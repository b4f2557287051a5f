import { AcquireCall, AcquireRequest, CampaignRequest, SemaphoreAcquireRequest } from './acquire-call.js';
import type { BackendGrant, LockBackend } from './backend.js';
import type { LockCapabilities } from './capabilities.js';
import { monotonicNow } from './clock.js';
import {
  LockError,
  LockErrorCode,
  LockTypeError,
  asLockError,
  isLockError,
  lockAbortedError,
  lockLostError,
} from './errors.js';
import { LockEventEmitter, type LockEventListener, type LockEventMap } from './events.js';
import { BackgroundReleases } from './lifecycle/background-release.js';
import { LocalLines, type LinePlace } from './lifecycle/local-line.js';
import { newOwnerId } from './lifecycle/owner-id.js';
import { SlotList } from './lifecycle/slot-list.js';
import { observeLeader } from './leader-observer.js';
import {
  ManagedLeaderHandle,
  ManagedLockHandle,
  ManagedSemaphoreHandle,
  handleDeadlines,
  type HandleLink,
  type LockHandleContext,
} from './lock-handle.js';
import { RenewalScheduler } from './renewal-scheduler.js';
import type {
  AcquireOptions,
  AcquireSemaphoreOptions,
  BackendWarning,
  CampaignOptions,
  HoldMode,
  LeaderHandle,
  LeaderInfo,
  LockHandle,
  LockInfo,
  LockProvider,
  ObserveOptions,
  SemaphoreHandle,
  SemaphoreInfo,
  TryAcquireOptions,
  TryAcquireSemaphoreOptions,
  TryCampaignOptions,
} from './types.js';
import {
  type AcquireKind,
  type NormalizedAcquireOptions,
  normalizeObserveOptions,
  normalizeOptions,
  validateDurationMs,
  validateKey,
  validateWaitMs,
} from './validation.js';

/** Options every provider accepts. */
export interface LockProviderOptions {
  /** TTL of locks acquired without `ttlMs`, in ms. @default 30_000 */
  readonly defaultTtlMs?: number;
  /** Wait bound of `acquire` without `waitMs`, in ms. @default 30_000 */
  readonly defaultWaitMs?: number;
}

/** The TTL of locks acquired without `ttlMs` when the provider sets no `defaultTtlMs`, in ms. */
export const DEFAULT_TTL_MS = 30_000;
const DEFAULT_WAIT_MS = 30_000;
// How long close() lets aborted acquires clean up before closing the backend under them.
const CLOSE_DRAIN_MS = 10_000;

/**
 * The provider core derives from a {@link LockBackend}: validation, waiting bounds, abort handling,
 * handles with validity timers and auto-extension, events, and shutdown. Adapters construct one
 * (or subclass it) around their backend; users only see the {@link LockProvider} interface.
 */
export class BaseLockProvider implements LockProvider {
  readonly name: string;
  readonly #configuredTtlMs: number;
  readonly #defaultWaitMs: number;
  readonly #backend: LockBackend;
  readonly #events = new LockEventEmitter();
  readonly #held = new SlotList<HandleLink>();
  readonly #inFlight = new SlotList<AcquireCall>();
  readonly #lines = new LocalLines();
  // Aborted by close(): ends every observation of a leader.
  readonly #closed = new AbortController();
  // Set by close() while it waits for in-flight acquires to finish; called when the last one does.
  #drained: (() => void) | undefined;
  // Shared by every handle of this provider.
  readonly #handleContext: LockHandleContext;
  #closing: Promise<void> | undefined;
  // The configuration check in flight or done; cleared when it fails, so that it runs again.
  #configurationCheck: Promise<readonly BackendWarning[]> | undefined;
  readonly #warned = new Set<string>();
  // One function for every call's `contended` report.
  readonly #onContended = (call: AcquireCall): void => {
    if (this.#events.has('contended')) this.#emit('contended', call.key, call.settings, {});
  };

  constructor(backend: LockBackend, options: LockProviderOptions = {}) {
    this.#backend = backend;
    this.name = backend.name;
    // A declared semaphore without the methods to serve it would fail at the first call: refuse it now.
    if (backend.capabilities.semaphore !== 'none' && (backend.acquireSemaphore === undefined || backend.inspectSemaphore === undefined)) {
      throw new LockTypeError(
        'capabilities.semaphore',
        `backend ${backend.name} declares capabilities.semaphore '${backend.capabilities.semaphore}' but has no acquireSemaphore and inspectSemaphore`,
      );
    }
    // The same for elections: campaign and leader, and a watch for a backend that says it notifies.
    const election = backend.capabilities.election;
    if (election !== 'none' && (backend.campaign === undefined || backend.leader === undefined)) {
      throw new LockTypeError('capabilities.election', `backend ${backend.name} declares capabilities.election '${election}' but has no campaign and leader`);
    }
    if (election === 'notified' && backend.watchLeader === undefined) {
      throw new LockTypeError('capabilities.election', `backend ${backend.name} declares capabilities.election 'notified' but has no watchLeader`);
    }
    const ttl = options.defaultTtlMs ?? DEFAULT_TTL_MS;
    this.#configuredTtlMs = validateDurationMs(ttl, 'defaultTtlMs', this.capabilities.minTtlMs);
    this.#defaultWaitMs = validateWaitMs(options.defaultWaitMs ?? DEFAULT_WAIT_MS, 'defaultWaitMs');
    this.#handleContext = {
      providerName: this.name,
      capabilities: this.capabilities,
      events: this.#events,
      held: this.#held,
      deadlines: handleDeadlines(),
      renewals: new RenewalScheduler(),
      releases: new BackgroundReleases(),
    };
    this.#checkInBackground();
  }

  /** The backend's capabilities, read from it each time (a session backend learns some on connecting). */
  get capabilities(): LockCapabilities {
    return this.#backend.capabilities;
  }

  /** The configured TTL; for a session backend that reports one, the session timeout it was granted. */
  get defaultTtlMs(): number {
    return this.#backend.sessionTimeoutMs ?? this.#configuredTtlMs;
  }

  acquire(key: string, options?: AcquireOptions): Promise<LockHandle> {
    // Not `async`: a second async frame and await per acquire would cost more than the checks they
    // keep. #acquire resolves undefined only for a single try: a wait that runs out rejects instead.
    return this.#acquire(key, options, false, 'lock') as Promise<LockHandle>;
  }

  tryAcquire(key: string, options?: TryAcquireOptions): Promise<LockHandle | undefined> {
    return this.#acquire(key, options, true, 'lock');
  }

  acquireSemaphore(key: string, options: AcquireSemaphoreOptions): Promise<SemaphoreHandle> {
    return this.#acquire(key, options, false, 'semaphore') as Promise<SemaphoreHandle>;
  }

  tryAcquireSemaphore(key: string, options: TryAcquireSemaphoreOptions): Promise<SemaphoreHandle | undefined> {
    return this.#acquire(key, options, true, 'semaphore') as Promise<SemaphoreHandle | undefined>;
  }

  campaign(name: string, options: CampaignOptions): Promise<LeaderHandle> {
    return this.#acquire(name, options, false, 'election') as Promise<LeaderHandle>;
  }

  tryCampaign(name: string, options: TryCampaignOptions): Promise<LeaderHandle | undefined> {
    return this.#acquire(name, options, true, 'election') as Promise<LeaderHandle | undefined>;
  }

  async leader(name: string): Promise<LeaderInfo | undefined> {
    validateKey(name, 'name');
    const backend = this.#backend;
    if (backend.capabilities.election === 'none' || backend.leader === undefined) throw this.#noElections(name);
    this.#assertOpen(name);
    let info: LeaderInfo | undefined;
    try {
      info = await backend.leader(name);
    } catch (error) {
      throw asLockError(error, `reading the leader of "${name}" failed`, name);
    }
    return info === undefined ? undefined : { name, value: info.value, term: info.term };
  }

  observe(name: string, options?: ObserveOptions): AsyncIterable<LeaderInfo | undefined> {
    validateKey(name, 'name');
    const { signal, pollMs } = normalizeObserveOptions(options);
    const backend = this.#backend;
    const election = backend.capabilities.election;
    if (election === 'none' || backend.leader === undefined) throw this.#noElections(name);
    this.#assertOpen(name);
    const closed = this.#closed.signal;
    return observeLeader({
      backend,
      name,
      poll: election === 'polled' || backend.watchLeader === undefined,
      pollMs,
      signal: signal === undefined ? closed : AbortSignal.any([signal, closed]),
    });
  }

  #noElections(name: string): LockError {
    return new LockError(LockErrorCode.UNSUPPORTED, `provider ${this.name} has no leader election (name "${name}")`, { key: name });
  }

  async inspectSemaphore(key: string): Promise<SemaphoreInfo | undefined> {
    validateKey(key);
    const backend = this.#backend;
    if (backend.capabilities.semaphore === 'none' || backend.inspectSemaphore === undefined) {
      throw new LockError(LockErrorCode.UNSUPPORTED, `provider ${this.name} has no semaphores (key "${key}")`, { key });
    }
    this.#assertOpen(key);
    try {
      return await backend.inspectSemaphore(key);
    } catch (error) {
      throw asLockError(error, `inspecting semaphore "${key}" failed`, key);
    }
  }

  async inspect(key: string): Promise<LockInfo | undefined> {
    validateKey(key);
    this.#assertOpen(key);
    try {
      return await this.#backend.inspect(key);
    } catch (error) {
      throw asLockError(error, `inspecting lock "${key}" failed`, key);
    }
  }

  on<E extends keyof LockEventMap>(event: E, listener: LockEventListener<E>): () => void {
    return this.#events.on(event, listener);
  }

  checkBackend(): Promise<readonly BackendWarning[]> {
    const backend = this.#backend;
    if (backend.checkConfiguration === undefined) return Promise.resolve([]);
    this.#configurationCheck ??= backend.checkConfiguration().then(
      (warnings) => {
        for (const warning of warnings) {
          if (this.#warned.has(warning.code)) continue;
          this.#warned.add(warning.code);
          this.#events.emit('backend-warning', { provider: this.name, code: warning.code, message: warning.message });
        }
        return warnings;
      },
      (error: unknown) => {
        this.#configurationCheck = undefined;
        throw asLockError(error, `checking the ${this.name} backend's configuration failed`);
      },
    );
    return this.#configurationCheck;
  }

  #checkInBackground(): void {
    if (this.#configurationCheck !== undefined || this.#closing !== undefined || this.#backend.checkConfiguration === undefined) return;
    // Unreachable now: asked again at the next grant (which proves the backend answers).
    this.checkBackend().catch(() => undefined);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #close(): Promise<void> {
    this.#closed.abort(new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `provider ${this.name} was closed`));
    for (const call of this.#inFlight.snapshot()) {
      call.abort(new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `provider ${this.name} was closed`));
    }
    const held = this.#held.snapshot();
    await Promise.all(held.map(({ handle }) => handle.abandon(lockLostError(handle.key, 'provider-closed'))));
    // Aborted attempts may still be removing what they queued: let them finish (bounded) before the
    // backend closes the connection they need.
    if (this.#inFlight.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.#drained = resolve;
        timer = setTimeout(resolve, CLOSE_DRAIN_MS);
      });
      clearTimeout(timer);
      this.#drained = undefined;
    }
    this.#handleContext.renewals.clear();
    this.#handleContext.deadlines.clear();
    // Releases that failed before get one last attempt while the backend is still open.
    await this.#handleContext.releases.flush();
    await this.#backend.close();
  }

  #assertOpen(key: string): void {
    if (this.#closing !== undefined) {
      throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, `provider ${this.name} is closed (key "${key}")`, { key });
    }
  }

  // The slow endings live in their own methods: an async function keeps its whole frame for every
  // await, and the uncontended path is an await or two.
  async #acquire(
    key: string,
    options: AcquireOptions | AcquireSemaphoreOptions | CampaignOptions | undefined,
    tryOnce: boolean,
    kind: AcquireKind,
  ): Promise<LockHandle | undefined> {
    const election = kind === 'election';
    validateKey(key, election ? 'name' : 'key');
    // A campaign waits until elected unless told otherwise: the provider's defaultWaitMs bounds acquires.
    const defaultWaitMs = election ? Number.POSITIVE_INFINITY : this.#defaultWaitMs;
    const settings = normalizeOptions(key, options, this.capabilities, this.defaultTtlMs, defaultWaitMs, tryOnce, kind);
    this.#assertOpen(key);
    const start = monotonicNow();
    const deadline = start + settings.waitMs;
    const call = new AcquireCall(key, settings, this.#onContended);
    this.#inFlight.add(call);
    // Waiting calls queue per (key, mode) in this process; only the head contends at the backend.
    const place = settings.waitMs === 0 ? undefined : this.#lines.join(key, holdMode(settings));
    try {
      // No await when the call is at the head of its line (the uncontended case): each one costs a turn.
      const myTurn = place === undefined || place.isHead || (await this.#waitTurn(place, call, deadline));
      // A grant whose validity is already used up (a slow reply) is handed back and tried again.
      for (let round = 0; myTurn && round < 1_000; round += 1) {
        const handle = this.#newHandle(key, settings);
        const grant = await this.#backendAcquire(call, deadline, handle);
        if (grant === undefined) break;
        if (call.aborted) {
          this.#discard(grant);
          break;
        }
        const now = monotonicNow();
        if (grant.validUntil <= now) {
          this.#discard(grant);
          if (now >= deadline) break;
          continue;
        }
        return this.#attach(handle, grant, settings, start, now, call.contended);
      }
    } catch (error) {
      if (!call.aborted) throw this.#failed(call, start, error);
    } finally {
      this.#settle(call, place);
    }
    return this.#notAcquired(call, start, tryOnce);
  }

  #settle(call: AcquireCall, place: LinePlace | undefined): void {
    place?.leave();
    call.dispose();
    this.#inFlight.delete(call);
    if (this.#inFlight.size === 0) this.#drained?.();
  }

  // The call failed (not by an abort): the error to throw, reported.
  #failed(call: AcquireCall, start: number, error: unknown): LockError {
    const { key, settings } = call;
    const failure = asLockError(error, `acquiring lock "${key}" failed`, key);
    this.#emit('failed', key, settings, { waitedMs: monotonicNow() - start, error: failure });
    return failure;
  }

  // The call ended without a grant: aborted (throws), declined (a single try: undefined), or timed out (throws).
  #notAcquired(call: AcquireCall, start: number, tryOnce: boolean): undefined {
    const { key, settings } = call;
    const waitedMs = monotonicNow() - start;
    if (call.aborted) {
      const userSignal = settings.signal;
      if (userSignal?.aborted) {
        this.#emit('aborted', key, settings, { waitedMs });
        throw lockAbortedError(key, userSignal);
      }
      const failure = isLockError(call.reason) ? call.reason : lockAbortedError(key, call.signal);
      this.#emit('failed', key, settings, { waitedMs, error: failure });
      throw failure;
    }
    if (tryOnce) {
      this.#emit('declined', key, settings, { waitedMs });
      return undefined;
    }
    this.#emit('timeout', key, settings, { waitedMs });
    const what = settings.semaphore !== undefined ? 'semaphore' : settings.election !== undefined ? 'leadership of' : 'lock';
    throw new LockError(LockErrorCode.TIMEOUT, `${what} "${key}" was not acquired within ${settings.waitMs} ms`, { key });
  }

  // A call behind another one of the same key and mode waits for its turn: the key is held (or
  // being handed over), so it is contended; it may time out or abort without sending anything.
  #waitTurn(place: LinePlace, call: AcquireCall, deadline: number): Promise<boolean> {
    call.markContended();
    return place.turn(deadline, call);
  }

  // A grant nobody will use (its call was aborted, its validity used up): freed in the background,
  // retried until answered, so the call settles without waiting on the backend.
  #discard(grant: BackendGrant): void {
    const until = grant.validUntil;
    this.#handleContext.releases.start({ attempt: () => grant.release(), until: () => until, settled: () => undefined });
  }

  #newHandle(key: string, settings: NormalizedAcquireOptions): ManagedLockHandle {
    const semaphore = settings.semaphore;
    if (semaphore !== undefined) return new ManagedSemaphoreHandle(key, newOwnerId(), { ...settings, semaphore }, this.#handleContext);
    const election = settings.election;
    if (election !== undefined) return new ManagedLeaderHandle(key, newOwnerId(), { ...settings, election }, this.#handleContext);
    return new ManagedLockHandle(key, newOwnerId(), settings, this.#handleContext);
  }

  // A lock's request goes to `acquire`, a semaphore's to `acquireSemaphore`, a campaign to
  // `campaign`: never one for another.
  #backendAcquire(call: AcquireCall, deadline: number, handle: ManagedLockHandle): Promise<BackendGrant | undefined> {
    const { semaphore, election } = call.settings;
    const releases = this.#handleContext.releases;
    const backend = this.#backend;
    if (election !== undefined) {
      if (backend.campaign === undefined) return Promise.reject(this.#noElections(call.key));
      return backend.campaign(new CampaignRequest(call, deadline, handle.ownerId, handle.observer, releases, election));
    }
    if (semaphore === undefined) return backend.acquire(new AcquireRequest(call, deadline, handle.ownerId, handle.observer, releases));
    if (backend.acquireSemaphore === undefined) {
      return Promise.reject(new LockError(LockErrorCode.UNSUPPORTED, `provider ${this.name} has no semaphores (key "${call.key}")`, { key: call.key }));
    }
    return backend.acquireSemaphore(new SemaphoreAcquireRequest(call, deadline, handle.ownerId, handle.observer, releases, semaphore));
  }

  #attach(
    handle: ManagedLockHandle,
    grant: BackendGrant,
    settings: NormalizedAcquireOptions,
    start: number,
    now: number,
    contended: boolean,
  ): ManagedLockHandle {
    handle.attach(grant, now);
    if (this.#configurationCheck === undefined) this.#checkInBackground();
    if (this.#events.has('acquired')) {
      const fields = { ownerId: handle.ownerId, fencingToken: grant.fencingToken, waitedMs: now - start, contended };
      const semaphore = settings.semaphore;
      this.#emit('acquired', handle.key, settings, semaphore === undefined ? fields : { ...fields, limit: semaphore.limit, permits: semaphore.permits });
    }
    return handle;
  }

  #emit<E extends 'acquired' | 'contended' | 'timeout' | 'aborted' | 'declined' | 'failed'>(
    event: E,
    key: string,
    settings: NormalizedAcquireOptions,
    fields: Omit<LockEventMap[E], 'provider' | 'key' | 'mode'>,
  ): void {
    if (!this.#events.has(event)) return;
    this.#events.emit(event, { provider: this.name, key, mode: holdMode(settings), ...fields } as LockEventMap[E]);
  }
}

function holdMode(settings: NormalizedAcquireOptions): HoldMode {
  return settings.semaphore !== undefined ? 'semaphore' : settings.election !== undefined ? 'leader' : settings.mode;
}

/** Builds the user-facing provider around a backend. */
export function createLockProvider(backend: LockBackend, options?: LockProviderOptions): LockProvider {
  return new BaseLockProvider(backend, options);
}
