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
  if (!session.alive) return;
  try {
    await session.request<null>('removing an empty lock parent', (done) =>
      session.client.remove(lockPath, -1, (error) => done(error, null)),
    );
  } catch {
    // NOT_EMPTY: someone is queued or holds it. NO_NODE: already gone. Anything else: harmless leftover.
  }
}
