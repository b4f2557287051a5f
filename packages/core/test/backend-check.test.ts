import { describe, expect, it } from 'vitest';
import {
  createLockProvider,
  monotonicNow,
  normalizeCapabilities,
  type BackendWarning,
  type LockBackend,
  type LockEventMap,
} from '../src/adapter.js';

const EVICTION: BackendWarning = { code: 'eviction', message: 'keys with a TTL may be evicted' };

/** A backend that grants every request and whose configuration check answers from `answers`, in turn. */
function checkedBackend(answers: (() => Promise<readonly BackendWarning[]>)[]): LockBackend & { checks: number } {
  const backend = {
    name: 'checked',
    capabilities: normalizeCapabilities({ fencing: 'none', extend: true }),
    checks: 0,
    acquire: async () => ({
      fencingToken: undefined,
      validUntil: monotonicNow() + 10_000,
      extend: async (ttlMs: number) => monotonicNow() + ttlMs,
      release: async () => true,
    }),
    inspect: async () => undefined,
    close: async () => undefined,
    checkConfiguration: () => {
      const answer = answers[Math.min(backend.checks, answers.length - 1)];
      backend.checks += 1;
      if (answer === undefined) throw new Error('no answer');
      return answer();
    },
  };
  return backend;
}

function collect(provider: ReturnType<typeof createLockProvider>): LockEventMap['backend-warning'][] {
  const seen: LockEventMap['backend-warning'][] = [];
  provider.on('backend-warning', (event) => seen.push(event));
  return seen;
}

describe('the configuration check', () => {
  it('runs when the provider is created and emits each warning once', async () => {
    const backend = checkedBackend([async () => [EVICTION]]);
    const provider = createLockProvider(backend);
    const seen = collect(provider);
    expect(await provider.checkBackend?.()).toEqual([EVICTION]);
    expect(await provider.checkBackend?.()).toEqual([EVICTION]);
    expect(backend.checks).toBe(1);
    expect(seen).toEqual([{ provider: 'checked', ...EVICTION }]);
    await provider.close();
  });

  it('runs again at the next grant after a check that could not reach the backend', async () => {
    const backend = checkedBackend([() => Promise.reject(new Error('connection refused')), async () => [EVICTION]]);
    const provider = createLockProvider(backend);
    const seen = collect(provider);
    await expect(provider.checkBackend?.()).rejects.toMatchObject({ code: 'LOCK_BACKEND_UNAVAILABLE' });
    const checksBefore = backend.checks;
    const lock = await provider.acquire('k');
    await lock.release();
    expect(backend.checks).toBe(checksBefore + 1);
    await provider.checkBackend?.();
    expect(seen.map((event) => event.code)).toEqual(['eviction']);
    await provider.close();
  });
});
