import { LockError, LockErrorCode, withRequestTimeout } from '@fencelock/core/adapter';
import { postgresFailure } from './refusals.js';
import pg from 'pg';

/** One connection the provider uses as its own server session, and how to give it back. */
export interface DedicatedConnection {
  readonly client: pg.ClientBase;
  /** Whether the provider opened it (and so ends it); false for a client handed to the provider. */
  readonly owned: boolean;
  /** Ends an owned connection (a pool's is destroyed, never returned: it carried our session state). */
  dispose(): Promise<void>;
}

/**
 * Where the provider's dedicated connection comes from: a `pg.Pool` (one client checked out and kept),
 * connection settings (a `pg.Client` of its own), or a `pg.Client` the user handed over (used as it
 * is, never closed).
 */
export type ConnectionSource =
  | { readonly kind: 'pool'; readonly pool: pg.Pool }
  | { readonly kind: 'connection'; readonly config: string | pg.ClientConfig }
  | { readonly kind: 'client'; readonly client: pg.Client };

/**
 * Opens (or takes) the dedicated connection, bounded by `timeoutMs`. A connection that arrives after
 * the bound is closed at once, so a slow connect never leaves a session behind.
 */
export async function openConnection(source: ConnectionSource, timeoutMs: number, handedClientEnded: () => boolean): Promise<DedicatedConnection> {
  switch (source.kind) {
    case 'client': {
      if (handedClientEnded()) {
        throw new LockError(LockErrorCode.BACKEND_UNAVAILABLE, 'the pg.Client handed to the PostgreSQL provider has ended: give the provider a new client, a pool or connection settings');
      }
      return { client: source.client, owned: false, dispose: async () => undefined };
    }
    case 'pool': {
      const checkout = source.pool.connect();
      try {
        const client = await withRequestTimeout(checkout, timeoutMs, 'checking a client out of the pg.Pool');
        return { client, owned: true, dispose: async () => client.release(true) };
      } catch (error) {
        void checkout.then((late) => late.release(true), () => undefined);
        throw postgresFailure('checking a dedicated connection out of the pg.Pool', error);
      }
    }
    case 'connection': {
      const client = new pg.Client(source.config);
      // Until the session takes over, a connection error must not go unhandled (it would crash the process).
      const ignore = (): void => undefined;
      client.on('error', ignore);
      const connecting = client.connect();
      try {
        await withRequestTimeout(connecting, timeoutMs, 'connecting to PostgreSQL');
      } catch (error) {
        void connecting.then(() => client.end(), () => undefined).catch(() => undefined);
        throw postgresFailure('connecting to PostgreSQL', error);
      } finally {
        client.off('error', ignore);
      }
      return { client, owned: true, dispose: () => client.end().catch(() => undefined) };
    }
  }
}
