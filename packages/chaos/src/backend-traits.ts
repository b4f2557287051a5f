/**
 * The backends' names and what the harness needs to know of each beyond its adapter, with no adapter
 * imported: a client process loads only its own backend's adapter (see `chaos-provider.ts`).
 */

/** The backends, by the name used on the command line and in the table. */
export const BACKEND_NAMES = ['redis', 'etcd', 'zookeeper', 'redlock', 'postgres'] as const;
export type BackendName = (typeof BACKEND_NAMES)[number];

/** True for a known backend name. */
export function isBackendName(value: string): value is BackendName {
  return (BACKEND_NAMES as readonly string[]).includes(value);
}

/** What the harness needs to know about a backend, beyond its adapter's capabilities. */
export interface BackendTraits {
  /** Locks live as long as a session or lease (etcd, ZooKeeper, PostgreSQL): no per-acquire `ttlMs`, no `autoExtend: false`. */
  readonly session: boolean;
  /** The lock TTL (or session timeout) the suite uses, ms. */
  readonly ttlMs: number;
  /** How many server processes the backend runs on. */
  readonly servers: number;
}

/** Per backend: TTLs of 2–3 s, as FAULTS.md's budget asks (etcd floors leases at 2 s; ZK sessions ≥ 2–3 s). */
export const BACKEND_TRAITS: Readonly<Record<BackendName, BackendTraits>> = {
  redis: { session: false, ttlMs: 2_000, servers: 1 },
  redlock: { session: false, ttlMs: 2_000, servers: 5 },
  etcd: { session: true, ttlMs: 2_000, servers: 3 },
  zookeeper: { session: true, ttlMs: 3_000, servers: 3 },
  postgres: { session: true, ttlMs: 2_000, servers: 1 },
};
