import { randomUUID } from 'node:crypto';
import { monotonicNow } from '@fencelock/core';
import { LeadershipLog, type Term } from './leadership-log.js';
import { FencedScheduleStore } from './schedule-store.js';
import { WorkerPool } from './worker-pool.js';

/** Options of {@link runElection}. */
export interface ElectionOptions {
  /** ZooKeeper connection string, `host:port[,…]`. */
  readonly connectionString: string;
  /** Worker processes. @default 3 */
  readonly workers?: number;
  /** ZooKeeper session timeout, in ms: how long a dead leader keeps the lock. @default 2_000 */
  readonly sessionTimeoutMs?: number;
  /** Pause between two rounds of the leader's work, in ms. @default 250 */
  readonly workIntervalMs?: number;
  /**
   * How long one round's job runs before its result is written, in ms: the frozen leader is stopped
   * in the middle of one, so it must outlast a message from the worker to the supervisor. @default 400
   */
  readonly jobMs?: number;
  /** Where the timeline goes. @default console.log */
  readonly print?: (line: string) => void;
  /** Called with each worker's process id as soon as it is forked (to clean up after a crash). */
  readonly onWorkerStarted?: (pid: number) => void;
}

/** What happened. */
export interface ElectionResult {
  /** Every leader's term, in the order they started. */
  readonly terms: readonly Term[];
  /** The schedule store: the writes it accepted and those it refused (a deposed leader's). */
  readonly store: FencedScheduleStore;
  /** Contradictions of "one leader at a time" (empty when all went well). */
  readonly violations: readonly string[];
  /** Messages the workers sent about failures. */
  readonly failures: readonly string[];
}

// Every wait for the workers is bounded: a session timeout plus plenty for a loaded machine.
const waitBoundMs = (sessionTimeoutMs: number): number => sessionTimeoutMs * 5 + 30_000;
/** Rounds of work each leader shows before the supervisor strikes. */
const ROUNDS = 3;

/**
 * Starts the workers; the first leader is killed, the second is frozen in the middle of a job past
 * its session and resumed (its job's write then reaches the store with an old term, and is
 * refused), the third leads until the end. Prints the timeline and the terms.
 */
export async function runElection(options: ElectionOptions): Promise<ElectionResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const sessionTimeoutMs = options.sessionTimeoutMs ?? 2_000;
  const workIntervalMs = options.workIntervalMs ?? 250;
  const jobMs = options.jobMs ?? 400;
  const names = Array.from({ length: Math.max(3, options.workers ?? 3) }, (_, index) => `worker-${index + 1}`);
  const leaderKey = `example:zookeeper-leader:${randomUUID().slice(0, 8)}:leader`;
  const start = monotonicNow();
  const say = (who: string, what: string): void => print(`${(monotonicNow() - start).toFixed(0).padStart(6)} ms  ${who.padEnd(10)} ${what}`);
  const log = new LeadershipLog();
  const store = new FencedScheduleStore();
  // The leader to freeze at the start of its next job, and what to do then.
  let freezeAtNextJob: { worker: string; frozen: () => void } | undefined;
  const failures: string[] = [];
  const ready = new Set<string>();
  let wake: (() => void) | undefined;

  const pool = new WorkerPool({
    forked: (_name, pid) => options.onWorkerStarted?.(pid),
    message: (name, message) => {
      if (message.type === 'running' && freezeAtNextJob?.worker === name) {
        freezeAtNextJob.frozen();
        freezeAtNextJob = undefined;
      }
      if (message.type === 'work' && !store.write(name, BigInt(message.token), message.round)) {
        // Refused by the fence: no work was done, and the log of leaders does not count it.
        say('store', `REFUSES ${name}'s result of round ${message.round}: term ${message.token} < ${store.highest}, a newer leader's`);
        wake?.();
        return;
      }
      const term = log.record(name, message);
      if (message.type === 'ready') ready.add(name);
      if (message.type === 'leading') {
        const previous = log.terms.at(-2);
        say(name, `is the LEADER, fencing token ${message.token}${previous === undefined ? '' : ` (previous leader's: ${previous.token})`}`);
      }
      if (message.type === 'work') say(name, `writes the result of round ${message.round} (term ${message.token})`);
      if (message.type === 'stepped-down') say(name, `stepped down: ${message.reason}${term?.end === 'LOCK_LOST' ? ' (lock.signal aborted: it lost the lock while frozen)' : ''}`);
      if (message.type === 'failed') failures.push(`${name}: ${message.error}`);
      wake?.();
    },
    exited: (name) => {
      log.died(name);
      wake?.();
    },
  });
  // Resolves once `condition()` holds; re-checked on every message and exit, never by polling.
  const until = async (condition: () => boolean, what: string): Promise<void> => {
    const timeoutMs = waitBoundMs(sessionTimeoutMs);
    const deadline = monotonicNow() + timeoutMs;
    while (!condition()) {
      if (failures.length > 0) throw new Error(`a worker failed: ${failures.join('; ')}`);
      const violations = log.violations();
      if (violations.length > 0) throw new Error(`two leaders at once: ${violations.join('; ')}`);
      const left = deadline - monotonicNow();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = undefined;
    }
  };

  print(`${names.length} worker processes compete for "${leaderKey}" on ZooKeeper (${options.connectionString})`);
  print(`session timeout ${sessionTimeoutMs} ms: a leader that dies keeps the lock at most that long`);
  print('');
  try {
    for (const name of names) pool.start({ name, connectionString: options.connectionString, leaderKey, sessionTimeoutMs, workIntervalMs, jobMs });
    await until(() => ready.size === names.length && (log.latest?.rounds ?? 0) >= ROUNDS, 'a first leader');

    const first = log.latest!;
    say('supervisor', `KILLS ${first.worker} (SIGKILL, pid ${pool.pid(first.worker)}): it cannot release; its session expires`);
    pool.kill(first.worker);
    await until(() => log.latest !== first && (log.latest?.rounds ?? 0) >= ROUNDS, 'a second leader');

    const second = log.latest!;
    let frozen = false;
    freezeAtNextJob = {
      worker: second.worker,
      frozen: () => {
        say('supervisor', `FREEZES ${second.worker} (SIGSTOP) in the middle of a job, past its session timeout, as a long GC pause would`);
        pool.pause(second.worker);
        frozen = true;
      },
    };
    await until(() => frozen, `${second.worker} to start a job`);
    // The third leader writes first: the store has seen a newer term when the frozen job's result comes.
    await until(() => log.latest !== second && (log.latest?.rounds ?? 0) >= 1, 'a third leader');
    const third = log.latest!;
    say('supervisor', `resumes ${second.worker} (SIGCONT)`);
    pool.resume(second.worker);
    const roundsAtResume = third.rounds;
    await until(
      () => second.end !== undefined && store.refused.length > 0 && third.rounds >= roundsAtResume + ROUNDS,
      `${second.worker} to step down`,
    );

    // Followers first, so that nobody takes over while the leader is being stopped.
    say('supervisor', 'stops every worker (the leader releases the lock)');
    await Promise.all(names.filter((name) => name !== third.worker).map((name) => pool.stop(name)));
    await pool.stop(third.worker);
  } finally {
    await pool.close();
  }

  const violations = log.violations();
  print('');
  print('leaders, in fencing-token order:');
  const byToken = [...log.terms].sort((a, b) => (a.token < b.token ? -1 : 1));
  for (const term of byToken) print(`  token ${term.token}  ${term.worker.padEnd(9)} ${String(term.rounds).padStart(3)} rounds of work, ended: ${term.end ?? 'still leading'}`);
  print(violations.length === 0 ? 'one leader at a time: every leader started after the previous one\'s last round of work' : `VIOLATIONS: ${violations.join('; ')}`);
  print(`the store accepted ${store.accepted.length} results and refused ${store.refused.length}: ${store.refused.map((write) => `${write.worker}'s round ${write.round} (term ${write.term})`).join(', ') || 'none'}`);
  return { terms: log.terms, store, violations, failures };
}
