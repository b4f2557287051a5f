/**
 * Whether another system user can reach a directory. As root we hand work to other users (the
 * `postgres` user runs PostgreSQL; a test runs a check as `nobody`), and they cannot enter a
 * private directory: a checkout, a home or a TMPDIR under mode 700. What they use must sit where
 * every directory from `/` down lets them search it.
 */
import { realpathSync, statSync, type Stats } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname } from 'node:path';
import { InfraError } from './errors.js';

/** The identity whose access is checked. */
export interface UserIdentity {
  /** For messages. */
  readonly name: string;
  readonly uid: number;
  /** Only the primary group counts: `setpriv --clear-groups` drops the others. */
  readonly gid: number;
}

/** True when `user` may search `dir` and every directory above it (symlinks resolved). */
export function canEnter(dir: string, user: UserIdentity): boolean {
  if (user.uid === 0) return true;
  let path: string;
  try {
    path = realpathSync(dir);
  } catch {
    return false;
  }
  // Bounded by the depth of the path.
  for (let i = 0; i < 256; i += 1) {
    let stat: Stats;
    try {
      stat = statSync(path);
    } catch {
      return false;
    }
    if (!stat.isDirectory() || !searchable(stat, user)) return false;
    const parent = dirname(path);
    if (parent === path) return true;
    path = parent;
  }
  return false;
}

// The kernel applies exactly one class of bits: the owner's, else the group's, else the others'.
function searchable(stat: Stats, user: UserIdentity): boolean {
  if (stat.uid === user.uid) return (stat.mode & 0o100) !== 0;
  if (stat.gid === user.gid) return (stat.mode & 0o010) !== 0;
  return (stat.mode & 0o001) !== 0;
}

/**
 * The directory to create temp dirs for `user` in: os.tmpdir(), unless `user` cannot enter it (a
 * TMPDIR inside a private home), then /tmp. Returned with symlinks resolved.
 *
 * @throws InfraError when `user` can enter none of them.
 */
export function tempRootFor(user: UserIdentity, candidates: readonly string[] = [tmpdir(), '/tmp']): string {
  for (const candidate of candidates) {
    if (canEnter(candidate, user)) return realpathSync(candidate);
  }
  throw new InfraError(
    `the ${user.name} user cannot enter ${candidates.join(' or ')} (a directory above is private); ` +
      `set TMPDIR to a directory every user can enter`,
  );
}
