/**
 * etcd's answers that mean "not with these credentials": a wrong password or unknown user, a role
 * that does not cover the key, no token where authentication is on. Asking again gets the same
 * answer, so they become `LOCK_FORBIDDEN` at once instead of being retried until `waitMs`.
 */
import { forbiddenError } from '@fencelock/core/adapter';
import {
  EtcdAuthenticationFailedError,
  EtcdPermissionDeniedError,
  EtcdRoleNotFoundError,
  EtcdRoleNotGrantedError,
  EtcdUserNotFoundError,
  GRPCUnauthenticatedError,
} from 'etcd3';

// The server's own words for each (etcd's messages name no credential, but they are not repeated
// here anyway: a detail is chosen by error type).
const REFUSALS: readonly [new (...args: never[]) => Error, string][] = [
  [EtcdAuthenticationFailedError, 'authentication failed (wrong user name or password)'],
  [EtcdPermissionDeniedError, "permission denied (the user's roles do not cover these keys)"],
  [EtcdRoleNotGrantedError, 'permission denied (the user has no role)'],
  [EtcdRoleNotFoundError, 'permission denied (a role of the user does not exist)'],
  [EtcdUserNotFoundError, 'authentication failed (unknown user)'],
  [GRPCUnauthenticatedError, 'unauthenticated (authentication is on and no credentials were given)'],
];

/** `error` as a `LOCK_FORBIDDEN` LockError when etcd refused the identity, else `error` itself. */
export function asRefusal(error: unknown, what: string): unknown {
  for (const [type, detail] of REFUSALS) {
    if (error instanceof type) return forbiddenError('etcd', what, detail, error);
  }
  return error;
}
