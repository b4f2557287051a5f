/**
 * `pnpm --filter @fencelock/example-zookeeper-leader start`: one leader among several worker
 * processes; when it dies another takes over, with a larger fencing token. ZooKeeper address:
 * FENCELOCK_ZK_HOSTS (default 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183, the ensemble
 * `pnpm infra:up` starts).
 */
import { createZooKeeperLockProvider } from '@fencelock/zookeeper';
import { runElection } from './run-election.js';

const connectionString = process.env.FENCELOCK_ZK_HOSTS ?? '127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183';

// One quick look first, so an ensemble that is not running gives a hint rather than a long wait.
const probe = createZooKeeperLockProvider({ connectionString, sessionTimeoutMs: 5_000, requestTimeoutMs: 5_000 });
const reachable = await probe.inspect('example:zookeeper-leader:probe').then(() => true, () => false);
await Promise.race([probe.close(), new Promise((resolve) => setTimeout(resolve, 1_000).unref())]);
if (!reachable) {
  console.error(`ZooKeeper at ${connectionString} does not answer. Start the test servers with \`pnpm infra:up\` (or set FENCELOCK_ZK_HOSTS).`);
  process.exit(1);
}

const result = await runElection({ connectionString });
process.exitCode = result.violations.length === 0 && result.terms.length >= 3 ? 0 : 1;
