import { MemoryLockProvider, MemoryLockStore, type LockProvider } from '@fencelock/core';

/** How the demo builds one provider (one client) per worker for a backend. */
export interface DemoBackend {
  /** Makes a new provider, as a separate worker process would have. */
  readonly connect: () => Promise<LockProvider>;
  /** How long a lock outlives a silent holder, in ms (the TTL, or the session timeout). */
  readonly lifetimeMs: number;
  /** Acquire options that set that lifetime, where the backend takes it per lock. */
  readonly lockOptions: { ttlMs?: number };
}

/** The backends the demo can run on, by name. Adapters are loaded only when asked for. */
export const DEMO_BACKENDS: Record<string, () => Promise<DemoBackend>> = {
  memory: async () => {
    const store = new MemoryLockStore();
    return { connect: async () => new MemoryLockProvider({ store }), lifetimeMs: 1_000, lockOptions: { ttlMs: 1_000 } };
  },
};
