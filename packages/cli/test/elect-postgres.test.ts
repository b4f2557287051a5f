import { advisoryLockId, electionLockId } from '@fencelock/postgres';
import { topology } from '@fencelock/test-infra';
import pg from 'pg';
import { describeElectEndToEnd } from './support/elect-suite.js';

// PostgreSQL: the leader holds the election's advisory lock in its session; ending that session (an
// operator's pg_terminate_backend) is the loss.
describeElectEndToEnd('postgres', async () => {
  const { postgresUrl } = topology();
  const client = new pg.Client(postgresUrl);
  client.on('error', () => undefined);
  await client.connect();
  return {
    env: { FENCELOCK_BACKEND: 'postgres', FENCELOCK_POSTGRES_URL: postgresUrl },
    shortLifetime: ['--ttl', '1s'],
    removeLeader: async (name) => {
      const id = BigInt.asUintN(64, electionLockId(advisoryLockId(name)));
      const { rows } = await client.query<{ ended: boolean }>(
        `SELECT pg_terminate_backend(pid, 5000) AS ended FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND objsubid = 1
            AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND classid = $1::oid AND objid = $2::oid`,
        [(id >> 32n).toString(), (id & 0xffff_ffffn).toString()],
      );
      if (rows.length !== 1) throw new Error(`expected one session leading ${name}, found ${rows.length}`);
    },
    close: async () => {
      await client.end();
    },
  };
});
