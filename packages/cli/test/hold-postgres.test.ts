import { advisoryLockId } from '@fencelock/postgres';
import { topology } from '@fencelock/test-infra';
import pg from 'pg';
import { describeHoldEndToEnd } from './support/hold-suite.js';

// PostgreSQL: a session advisory lock belongs to the session of the fencelock process that took it.
// The only way to take it away from outside is to end that session, as an operator's
// pg_terminate_backend does: that is the loss the suite's removeLock causes.
describeHoldEndToEnd(
  'postgres',
  async () => {
    const { postgresUrl } = topology();
    const client = new pg.Client(postgresUrl);
    client.on('error', () => undefined);
    await client.connect();
    return {
      env: { FENCELOCK_BACKEND: 'postgres', FENCELOCK_POSTGRES_URL: postgresUrl },
      shortLifetime: ['--ttl', '1s'],
      removeLock: async (key) => {
        const id = BigInt.asUintN(64, advisoryLockId(key));
        const { rows } = await client.query<{ ended: boolean }>(
          `SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_locks
            WHERE locktype = 'advisory' AND granted AND objsubid = 1
              AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND classid = $1::oid AND objid = $2::oid`,
          [(id >> 32n).toString(), (id & 0xffff_ffffn).toString()],
        );
        if (rows.length !== 1) throw new Error(`expected one session holding ${key}, found ${rows.length}`);
      },
      close: async () => {
        await client.end();
      },
      // test-infra runs PostgreSQL with fsync and synchronous_commit off (its data is thrown away):
      // the warning about token durability is then exactly right.
      expectedWarnings: /synchronous_commit=off, fsync=off/,
    };
  },
  { fencing: 'per-key', full: true, readWrite: true },
);
