/**
 * Who the provider is to ZooKeeper (`auth`) and who may touch the znodes it creates (`acl`).
 *
 * ZooKeeper checks DELETE and CREATE on the PARENT of a znode: whoever may create contenders under a
 * lock znode may also delete any of them. The ACL therefore decides which identities take part in a
 * lock at all; an identity outside it may read (see who holds what) but can neither queue nor delete.
 */
import { createHash } from 'node:crypto';
import { LockTypeError } from '@fencelock/core/adapter';
import { ACL, Id, Permission } from 'node-zookeeper-client';

/** Credentials sent on every connection of a client the provider opens. */
export interface ZooKeeperAuth {
  /** The authentication scheme; ZooKeeper's built-in `digest`. */
  readonly scheme: 'digest';
  /** `user:password`. Never logged, never put in an error message. */
  readonly credentials: string;
}

/** One entry of an explicit ACL: `id` is scheme-specific (`user:base64(sha1(user:password))` for `digest`). */
export interface ZooKeeperAclEntry {
  readonly scheme: 'digest' | 'world' | 'ip' | 'auth' | 'sasl' | 'x509';
  readonly id: string;
  /** Any of `read`, `write`, `create`, `delete`, `admin`; or `all`. */
  readonly permissions: readonly ZooKeeperPermission[];
}

/** A ZooKeeper permission, by name. */
export type ZooKeeperPermission = 'read' | 'write' | 'create' | 'delete' | 'admin' | 'all';

/**
 * The ACL of every znode the provider creates (root segments, lock znodes, contender nodes):
 * - `creator-all-world-read`: the identities of this client's authentication may do anything, anyone
 *   may read. Needs `auth` (or a client you authenticated yourself).
 * - `open`: anyone may do anything (ZooKeeper's `OPEN_ACL_UNSAFE`): any client that can reach the
 *   ensemble can delete a holder's node and hand the lock to the next waiter.
 * - a list of entries, e.g. several digest identities that share the locks plus `world` read.
 */
export type ZooKeeperAclOption = 'creator-all-world-read' | 'open' | readonly ZooKeeperAclEntry[];

/** `auth` and `acl` after validation (internal). */
export interface ResolvedAccess {
  readonly auth: readonly ZooKeeperAuth[];
  readonly acl: ACL[];
  /** A short description for errors: the ACL's shape, never an identity's secret. */
  readonly aclName: string;
}

const PERMISSION_BITS: Readonly<Record<ZooKeeperPermission, number>> = {
  read: Permission.READ,
  write: Permission.WRITE,
  create: Permission.CREATE,
  delete: Permission.DELETE,
  admin: Permission.ADMIN,
  all: Permission.ALL,
};
const ANYONE = new Id('world', 'anyone');
const OPEN: ACL[] = [new ACL(Permission.ALL, ANYONE)];
// `auth` with an empty id: every identity the creating client authenticated as.
const CREATOR_ALL_WORLD_READ: ACL[] = [new ACL(Permission.ALL, new Id('auth', '')), new ACL(Permission.READ, ANYONE)];
const SCHEMES: readonly ZooKeeperAclEntry['scheme'][] = ['digest', 'world', 'ip', 'auth', 'sasl', 'x509'];

/**
 * The id ZooKeeper's digest scheme gives `user` with `password`: `user:base64(sha1("user:password"))`,
 * for ACL entries naming another identity that shares the locks.
 */
export function zooKeeperDigestId(user: string, password: string): string {
  return `${user}:${createHash('sha1').update(`${user}:${password}`).digest('base64')}`;
}

function resolveAuth(value: unknown): ZooKeeperAuth[] {
  if (value === undefined) return [];
  const list: unknown[] = Array.isArray(value) ? value : [value];
  return list.map((entry, index) => {
    const where = Array.isArray(value) ? `options.auth[${index}]` : 'options.auth';
    if (typeof entry !== 'object' || entry === null) throw new LockTypeError(where, `${where} must be { scheme: 'digest', credentials: 'user:password' }`);
    const { scheme, credentials } = entry as Record<string, unknown>;
    if (scheme !== 'digest') throw new LockTypeError(`${where}.scheme`, `${where}.scheme must be 'digest'`);
    // The value is a secret: the message says what is wrong with it, never what it is.
    if (typeof credentials !== 'string' || credentials.indexOf(':') < 1 || credentials.endsWith(':')) {
      throw new LockTypeError(`${where}.credentials`, `${where}.credentials must be a string "user:password" with a non-empty user and password`);
    }
    return { scheme, credentials };
  });
}

function resolveEntries(list: readonly unknown[]): ACL[] {
  if (list.length === 0) throw new LockTypeError('options.acl', 'options.acl must not be an empty list (nobody could use the nodes)');
  return list.map((entry, index) => {
    const where = `options.acl[${index}]`;
    if (typeof entry !== 'object' || entry === null) throw new LockTypeError(where, `${where} must be { scheme, id, permissions }`);
    const { scheme, id, permissions } = entry as Record<string, unknown>;
    if (typeof scheme !== 'string' || !SCHEMES.includes(scheme as ZooKeeperAclEntry['scheme'])) {
      throw new LockTypeError(`${where}.scheme`, `${where}.scheme must be one of ${SCHEMES.join(', ')}`);
    }
    if (typeof id !== 'string') throw new LockTypeError(`${where}.id`, `${where}.id must be a string`);
    if (!Array.isArray(permissions) || permissions.length === 0) {
      throw new LockTypeError(`${where}.permissions`, `${where}.permissions must be a non-empty list of ${Object.keys(PERMISSION_BITS).join(', ')}`);
    }
    let bits = 0;
    for (const permission of permissions as unknown[]) {
      if (typeof permission !== 'string' || !Object.hasOwn(PERMISSION_BITS, permission)) {
        throw new LockTypeError(`${where}.permissions`, `${where}.permissions must only hold ${Object.keys(PERMISSION_BITS).join(', ')}`);
      }
      bits |= PERMISSION_BITS[permission as ZooKeeperPermission];
    }
    return new ACL(bits, new Id(scheme, id));
  });
}

/**
 * Validates `auth` and `acl` before any I/O. The default ACL is `creator-all-world-read` when the
 * provider authenticates, else `open` (ZooKeeper's default, kept so that existing deployments and
 * other libraries on the same paths keep working; the README says what it allows).
 */
export function resolveAccess(auth: unknown, acl: unknown, givenClient: boolean): ResolvedAccess {
  const resolvedAuth = resolveAuth(auth);
  if (givenClient && resolvedAuth.length > 0) {
    throw new LockTypeError('options.auth', 'options.auth is for a client the provider opens: call addAuthInfo on the client you pass');
  }
  const chosen = acl ?? (resolvedAuth.length > 0 ? 'creator-all-world-read' : 'open');
  if (chosen === 'open') return { auth: resolvedAuth, acl: OPEN, aclName: 'open' };
  if (chosen === 'creator-all-world-read') {
    if (!givenClient && resolvedAuth.length === 0) {
      throw new LockTypeError('options.acl', "options.acl 'creator-all-world-read' needs options.auth: without an identity the creator is anyone");
    }
    return { auth: resolvedAuth, acl: CREATOR_ALL_WORLD_READ, aclName: 'creator-all-world-read' };
  }
  if (!Array.isArray(chosen)) {
    throw new LockTypeError('options.acl', "options.acl must be 'creator-all-world-read', 'open' or a list of { scheme, id, permissions }");
  }
  return { auth: resolvedAuth, acl: resolveEntries(chosen), aclName: 'explicit' };
}
