/**
 * PostgreSQL's answers that mean "not with these credentials", in words that carry no secret: a
 * wrong password, no `pg_hba.conf` entry for this user and address (or one that demands TLS), a role
 * without the privilege a statement needs, a certificate either side refuses. Asking again gets the
 * same answer, so they are `LOCK_FORBIDDEN` at once.
 */
import { type LockError, backendUnavailableError, forbiddenError, isLockError, tlsCertificateProblem } from '@fencelock/core/adapter';

const REFUSALS = new Map<string, string>([
  ['28P01', 'authentication failed (28P01: wrong password, or the role cannot log in)'],
  ['28000', 'not allowed to connect (28000: no pg_hba.conf entry for this user and address, or it demands TLS)'],
  ['42501', "permission denied (42501: the role lacks a privilege a statement needs, e.g. on the token tables)"],
]);

/** What PostgreSQL (or the TLS handshake) refused, or `undefined` for any other failure. */
export function postgresRefusal(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') {
    const refusal = REFUSALS.get(code);
    if (refusal !== undefined) return refusal;
  }
  return tlsCertificateProblem(error);
}

/**
 * The LockError for a failure of `operation` (e.g. `connecting`): `error` itself if it is one,
 * `LOCK_FORBIDDEN` for a refusal (`PostgreSQL refused connecting: …`), else
 * `LOCK_BACKEND_UNAVAILABLE` (`connecting failed: …`).
 */
export function postgresFailure(operation: string, error: unknown, key?: string): LockError {
  if (isLockError(error)) return error;
  const refusal = postgresRefusal(error);
  return refusal === undefined ? backendUnavailableError(`${operation} failed`, error, key) : forbiddenError('PostgreSQL', operation, refusal, error, key);
}
