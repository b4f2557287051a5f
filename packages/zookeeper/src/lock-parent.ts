/**
 * The lock's znode (`<root>/<encoded key>`), parent of its contenders.
 *
 * Guarantees: `ensureLockParent` leaves the root and the lock znode in place (persistent, empty data),
 * tolerating concurrent creators. `removeLockParentIfEmpty` deletes the lock znode only when it has no
 * children: ZooKeeper refuses to delete a znode with children (NOT_EMPTY), so a contender that arrived
 * meanwhile is never lost; one whose create races the delete gets NO_NODE and recreates the parent.
 * (Curator makes this znode a container that the server deletes when empty, with the same effect;
 * node-zookeeper-client cannot create container nodes.)
 */
import { CreateMode, Exception } from 'node-zookeeper-client';
import { type ZooKeeperSession, zooKeeperCode } from './zookeeper-session.js';

async function createPersistent(session: ZooKeeperSession, path: string): Promise<'created' | 'exists' | 'no-parent'> {
  try {
    await session.request<string>('creating a lock parent', (done) => session.client.create(path, session.acl, CreateMode.PERSISTENT, done));
    return 'created';
  } catch (error) {
    const code = zooKeeperCode(error);
    if (code === Exception.NODE_EXISTS) return 'exists';
    if (code === Exception.NO_NODE) return 'no-parent';
    throw error;
  }
}

/**
 * Sends the create of `lockPath` without waiting for its answer, for a lock this provider has no
 * node on yet. Sent right before the contender's create, it goes out in the same write and is applied
 * first, so the contender of a new lock is created in one round trip instead of three (a create that
 * fails with NO_NODE, the parent's, the contender's again). Every outcome is ignored: NODE_EXISTS is
 * the usual one on a lock that others use, and on any other the contender's create reports NO_NODE.
 */
export function createLockParentAhead(session: ZooKeeperSession, lockPath: string): void {
  createPersistent(session, lockPath).catch(() => undefined);
}

/** Creates `lockPath` and, if needed, every segment of `root` above it. */
export async function ensureLockParent(session: ZooKeeperSession, root: string, lockPath: string): Promise<void> {
  if ((await createPersistent(session, lockPath)) !== 'no-parent') return;
  const segments = root.split('/').filter((segment) => segment.length > 0);
  let path = '';
  for (const segment of segments) {
    path += `/${segment}`;
    await createPersistent(session, path);
  }
  await createPersistent(session, lockPath);
}

/** Deletes the lock znode if it is empty; every race (NOT_EMPTY, NO_NODE) and failure is ignored. */
export async function removeLockParentIfEmpty(session: ZooKeeperSession, lockPath: string): Promise<void> {
  await removeEmptyChain(session, [lockPath]);
}

/**
 * Deletes each of `paths` in turn (children before their parent: a semaphore's `leases` and `locks`,
 * then the semaphore's znode), each only if it is empty, and stops at the first that is not deleted
 * (its parent is not empty either). Every race and failure is ignored, as in {@link removeLockParentIfEmpty}.
 */
export async function removeEmptyChain(session: ZooKeeperSession, paths: readonly string[]): Promise<void> {
  for (const path of paths) {
    if (!session.alive) return;
    try {
      await session.request<null>('removing an empty lock parent', (done) => session.removeNode(path, -1, (error) => done(error, null)));
    } catch (error) {
      // NOT_EMPTY: someone is queued or holds it. NO_NODE: already gone (its parent may still be empty).
      // Anything else: a harmless leftover.
      if (zooKeeperCode(error) !== Exception.NO_NODE) return;
    }
  }
}
