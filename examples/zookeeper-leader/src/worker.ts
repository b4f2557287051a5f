/**
 * One worker process: it campaigns to become the leader (`campaign` on the election, with its name
 * as the value every observer sees), leads while it holds leadership, and campaigns again when it
 * loses it. Run by {@link WorkerPool} with `fork`.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { isLockError } from '@fencelock/core';
import { createZooKeeperLockProvider } from '@fencelock/zookeeper';
import { lead } from './lead.js';
import type { SupervisorMessage, WorkerConfig, WorkerMessage } from './protocol.js';

// A worker never outlives its supervisor: it exits when the IPC channel closes, and after this bound.
const MAX_LIFETIME_MS = 5 * 60_000;
/** How long one `campaign` waits before the worker asks again (also bounds the number of terms). */
const WAIT_PER_ATTEMPT_MS = 30_000;
const MAX_ATTEMPTS = 20;

const stop = new AbortController();
setTimeout(() => process.exit(3), MAX_LIFETIME_MS).unref();
process.on('disconnect', () => process.exit(stop.signal.aborted ? 0 : 2));
process.on('message', (message: SupervisorMessage) => {
  if (message.type === 'stop') stop.abort();
});
const send = (message: WorkerMessage): void => {
  process.send?.(message);
};

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
// The session timeout is the lock's lifetime: a leader that dies silently is replaced within it.
const locks = createZooKeeperLockProvider({ connectionString: config.connectionString, sessionTimeoutMs: config.sessionTimeoutMs });

try {
  await locks.leader(config.leaderKey); // connected: ready to compete
  send({ type: 'ready' });
  for (let attempt = 0; attempt < MAX_ATTEMPTS && !stop.signal.aborted; attempt += 1) {
    let lock;
    try {
      lock = await locks.campaign(config.leaderKey, { value: config.name, waitMs: WAIT_PER_ATTEMPT_MS, signal: stop.signal });
    } catch (error) {
      // Still a follower: ask again (after a session loss, the provider opens a new session).
      if (isLockError(error, 'LOCK_TIMEOUT') || isLockError(error, 'LOCK_BACKEND_UNAVAILABLE')) continue;
      if (isLockError(error, 'LOCK_ABORTED')) break;
      throw error;
    }
    // The term: the fencing token to hand to whatever the leader writes to.
    const token = String(lock.term);
    send({ type: 'leading', token });
    const reason = await lead(lock, {
      workIntervalMs: config.workIntervalMs,
      stop: stop.signal,
      async work(round, term) {
        send({ type: 'running', token, round });
        // The job itself: once started it runs to the end, and its result goes out with the term it
        // started under, whatever happened meanwhile (a pause here is what the store's fence is for).
        await delay(config.jobMs);
        send({ type: 'work', token: String(term), round });
      },
    });
    send({ type: 'stepped-down', token, reason });
  }
} catch (error) {
  send({ type: 'failed', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
} finally {
  await locks.close();
  process.disconnect();
}
