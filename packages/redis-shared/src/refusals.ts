/**
 * Redis's answers that mean "not with these credentials", in words that carry no secret: a wrong
 * password or disabled user, a missing AUTH, an ACL that does not allow the command, the keys or the
 * channels. Asking again gets the same answer, so adapters report them as `LOCK_FORBIDDEN` at once.
 */
import { tlsCertificateProblem } from '@fencelock/core/adapter';

// By the error's first word, as Redis (and every client library, which passes it on) words it. A
// script's `redis.call` refused by the ACL carries the same word inside its message.
const REFUSALS: readonly [RegExp, string][] = [
  [/\bWRONGPASS\b/, 'authentication failed (WRONGPASS: wrong user name or password, or the user is disabled)'],
  [/\bNOAUTH\b/, 'authentication required (NOAUTH: no credentials were given)'],
  // What Redis answers (before closing the connection) to a long command from a client that sent no AUTH.
  [/Protocol error: unauthenticated (?:multi)?bulk length/, 'authentication required (no credentials were given)'],
  [/\bNOPERM\b/, "permission denied (NOPERM: the user's ACL does not allow this command, these keys or these channels)"],
  // Redis 7's words for an ACL refusal of a command called from a script.
  [/The user executing the script can't/, "permission denied (the user's ACL does not allow a command, key or channel the script uses)"],
];

/**
 * What Redis refused, when `error` is a refusal of the identity or of the TLS certificates; `undefined`
 * for anything else (a timeout, a dropped connection, a script error).
 */
export function redisRefusal(error: unknown): string | undefined {
  const certificate = tlsCertificateProblem(error);
  if (certificate !== undefined) return certificate;
  const message = error instanceof Error ? error.message : undefined;
  if (message === undefined) return undefined;
  for (const [pattern, detail] of REFUSALS) if (pattern.test(message)) return detail;
  return undefined;
}

/**
 * The error to keep as a refusal's `cause`: the server's words only. Client libraries attach the
 * command to their reply errors (ioredis' `command.args`), and for AUTH that is the password.
 */
export function refusalCause(error: unknown): Error | undefined {
  if (!(error instanceof Error)) return undefined;
  const cause = new Error(error.message);
  cause.name = error.name;
  return cause;
}
