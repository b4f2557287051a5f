import { backendUnavailableError, lockLostError, type BackendGrant, type GrantObserver } from '@fencelock/core/adapter';
import type { PgSession } from './pg-session.js';

/** What a grant held on the provider's session needs to know. */
export interface SessionGrantOptions {
  /** The user's key, for errors. */
  readonly key: string;
  /** `lock` or `semaphore`, for errors ("releasing lock …"). */
  readonly kind: string;
  readonly observer: GrantObserver;
  readonly session: PgSession;
  readonly token: bigint;
  /** One bounded attempt to give the advisory locks back; resolves whether this owner still held them. */
  releaseOnce(): Promise<boolean>;
}

/**
 * A grant whose advisory locks are the session's: they end with it, so the grant joins the session
 * (its loss, uncertainty and renewals are the grant's), `extend` renews the session, and `release`
 * makes one bounded attempt (core retries a rejection in the background).
 */
export function sessionGrant(options: SessionGrantOptions): BackendGrant {
  const { key, kind, observer, session } = options;
  let ended = false;
  let leave = (): void => undefined;
  const end = (): void => {
    if (ended) return;
    ended = true;
    leave();
  };
  leave = session.join({
    lost: (error) => {
      if (ended) return;
      end();
      observer.lost(lockLostError(key, 'session-lost', error));
    },
    uncertain: () => observer.uncertain(),
    recovered: () => observer.recovered(),
    renewed: (validUntil) => observer.renewed(validUntil),
  });
  return {
    fencingToken: options.token,
    validUntil: session.validUntil,
    extend: async (): Promise<number> => {
      if (ended) throw lockLostError(key, 'session-lost');
      try {
        // Only the session can drop the locks, and a keepalive answered by it proves it alive.
        return await session.keepAlive();
      } catch (error) {
        if (!session.alive) throw lockLostError(key, 'session-lost', error);
        throw backendUnavailableError(`extending ${kind} "${key}" failed`, error, key);
      }
    },
    release: async (): Promise<boolean> => {
      if (ended) return false;
      // The session is gone (or being ended): the server frees its locks with it.
      if (!session.alive) {
        end();
        return false;
      }
      let released: boolean;
      try {
        released = await options.releaseOnce();
      } catch (error) {
        throw backendUnavailableError(`releasing ${kind} "${key}" failed`, error, key);
      }
      end();
      return released;
    },
  };
}
