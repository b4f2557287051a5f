/**
 * Where a counting semaphore lives in the tree, how its lease nodes are named, and what they hold:
 * the layout of Apache Curator's `InterProcessSemaphoreV2`, so that a Curator semaphore on the same
 * path shares the permits.
 *
 * - `<root>/#semaphores/<encoded key>`: the semaphore (Curator's `path`). The `#semaphores` segment
 *   keeps semaphores a namespace apart from locks: no key encodes to it (`#` is always written `%23`,
 *   see `key-encoding.ts`), so no lock znode is ever a semaphore's parent or child.
 * - `…/locks`: an `InterProcessMutex` (contenders `_c_<uuid>-lock-<seq>`) that every acquirer holds
 *   while it creates its lease node and, when the semaphore is full, while it waits.
 * - `…/leases`: one EPHEMERAL_SEQUENTIAL node per lease, `_c_<uuid>-lease-<seq>`. The mutex holder
 *   holds a lease once `leases` has at most `limit` children (its own included).
 *
 * Our lease nodes carry `{"limit":N}` (and `"metadata"` when given) as JSON: Curator treats lease data
 * as opaque bytes, and the limit lets every one of our acquirers check that all holders agree on it.
 */
import { MAX_SEMAPHORE_LIMIT } from '@fencelock/core/adapter';
import { encodeKeySegment } from './key-encoding.js';

/** The segment under the provider's root that holds every semaphore. */
export const SEMAPHORES_SEGMENT = '#semaphores';

/** The znodes of one semaphore. */
export interface SemaphorePaths {
  /** `<root>/#semaphores/<encoded key>`: Curator's semaphore path. */
  readonly semaphore: string;
  /** `<semaphore>/locks`: the mutex's znode. */
  readonly locks: string;
  /** `<semaphore>/leases`: the lease nodes' parent. */
  readonly leases: string;
}

/** The znodes of semaphore `key` under the provider's `root`. */
export function semaphorePaths(root: string, key: string): SemaphorePaths {
  const semaphore = `${root}/${SEMAPHORES_SEGMENT}/${encodeKeySegment(key)}`;
  return { semaphore, locks: `${semaphore}/locks`, leases: `${semaphore}/leases` };
}

/** The name prefix of our lease node (ZooKeeper appends the sequence) and the unique part that finds it again. */
export function leasePrefix(ownerId: string): { prefix: string; guid: string } {
  return { prefix: `_c_${ownerId}-lease-`, guid: `_c_${ownerId}-` };
}

const LEASE = /^(?:_c_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-)?.*?(\d{10})$/i;

/** One child of `leases`, parsed from its name. */
export interface LeaseName {
  readonly name: string;
  /** ZooKeeper's sequence number (from the 10-digit suffix), or `Infinity` for a name without one. */
  readonly sequence: number;
  /** The uuid of Curator's protected prefix (ours is the owner id), if any. */
  readonly ownerId: string | undefined;
}

/** The children of `leases` in creation order (by sequence; all share the parent's counter). */
export function sortedLeases(children: readonly string[]): LeaseName[] {
  return children
    .map((name): LeaseName => {
      const match = LEASE.exec(name);
      return {
        name,
        sequence: match === null ? Number.POSITIVE_INFINITY : Number.parseInt(match[2] ?? '', 10),
        ownerId: match?.[1]?.toLowerCase(),
      };
    })
    .sort((a, b) => a.sequence - b.sequence || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** What one of our lease nodes holds. */
export interface LeaseData {
  readonly limit: number;
  readonly metadata: string | undefined;
}

/** The data of our lease node. */
export function encodeLeaseData(data: LeaseData): Buffer {
  return Buffer.from(JSON.stringify(data.metadata === undefined ? { limit: data.limit } : { limit: data.limit, metadata: data.metadata }), 'utf8');
}

/**
 * The limit and metadata of a lease node written by us (or by anyone writing the same JSON, such as a
 * Curator semaphore given it with `setNodeData`); `undefined` for any other data (Curator's default is
 * the client's IP address).
 */
export function decodeLeaseData(data: Buffer | undefined | null): LeaseData | undefined {
  if (data === undefined || data === null || data.length === 0 || data[0] !== 0x7b /* { */) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const { limit, metadata } = parsed as { limit?: unknown; metadata?: unknown };
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_SEMAPHORE_LIMIT) return undefined;
  if (metadata !== undefined && typeof metadata !== 'string') return undefined;
  return { limit, metadata };
}
