import { isLockError, withLock, type LockProvider } from '@fencelock/core';
import type { DemoBackend } from './backends.js';
import { FencedLedger } from './fenced-ledger.js';
import { Timeline } from './timeline.js';

/** What the demo found, for its smoke test and its exit code. */
export interface DemoResult {
  readonly accepted: number;
  readonly refused: number;
  readonly lateWriteRefused: boolean;
  readonly timeline: Timeline;
}

/** Options of {@link runDemo}. */
export interface DemoOptions {
  readonly backendName: string;
  readonly backend: DemoBackend;
  readonly workers?: number;
  readonly roundsPerWorker?: number;
  readonly print?: (line: string) => void;
}

// Every worker's turns are bounded, whatever the backend does.
const MAX_ROUNDS = 20;

// The whole process stops, as in a long GC pause or a stopped VM: no timers, no renewals, no I/O.
function freezeProcess(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Several workers take turns adding 1 to a balance under one lock. Worker 2 is paused past the lock's
 * lifetime in the middle of its turn; another worker takes over; worker 2 wakes up and sends the write it
 * had prepared. The fenced ledger refuses it because its token is older than the new holder's.
 */
export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const { backend } = options;
  const workers = options.workers ?? 3;
  const rounds = options.roundsPerWorker ?? 2;
  const key = `demo:invoice:${process.pid}:${Date.now()}`;
  const ledger = new FencedLedger();
  const timeline = new Timeline(print);
  const pauseMs = backend.lifetimeMs + 1_000;
  let paused = false;
  let staleWriteSent = false;
  let lateWriteRefused = false;
  // Resolved by the first write another worker makes after the pause: the takeover the story needs.
  let takenOver: (() => void) | undefined;

  print(`fencelock demo on "${options.backendName}": ${workers} workers, key "${key}", lock lifetime ${backend.lifetimeMs} ms`);
  print('');
  const providers: LockProvider[] = [];
  for (let index = 0; index < workers; index += 1) providers.push(await backend.connect());

  const turn = async (who: string, provider: LockProvider, pauseHere: boolean, retries = 2): Promise<void> => {
    await withLock(
      provider,
      key,
      async (lock) => {
        const token = lock.fencingToken;
        timeline.log(who, `acquired the lock, token ${token ?? '(none)'}`);
        const next = ledger.balance + 1;
        if (pauseHere) {
          timeline.log(who, `prepared write balance=${next}; now PAUSED for ${pauseMs} ms (GC pause)`);
          freezeProcess(pauseMs);
          const held = lock.isHeld();
          const reason: unknown = lock.signal.reason;
          timeline.log(who, `resumed; lock.isHeld() is ${held}${isLockError(reason) ? `, signal aborted: ${reason.code} (${reason.reason ?? ''})` : ''}`);
          // The paused worker's write arrives late, as over a real network: after another worker took over.
          await new Promise<void>((resolve) => {
            const bound = setTimeout(resolve, 10_000);
            takenOver = () => {
              clearTimeout(bound);
              resolve();
            };
          });
          const accepted = ledger.write('balance', token, next);
          staleWriteSent = true;
          lateWriteRefused = !accepted;
          timeline.log(who, `sends its stale write balance=${next} with token ${token ?? '(none)'} -> ${accepted ? 'ACCEPTED (unsafe!)' : 'REFUSED by the fencing guard'}`);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
        const accepted = ledger.write('balance', token, next);
        timeline.log(who, `wrote balance=${next} with token ${token ?? '(none)'} -> ${accepted ? 'accepted' : 'REFUSED'}`);
        takenOver?.();
      },
      { ...backend.lockOptions, waitMs: 30_000 },
    ).catch(async (error: unknown) => {
      if (isLockError(error, 'LOCK_LOST')) {
        timeline.log(who, `withLock reports ${error.code}: the work was not protected all the way`);
      } else if (isLockError(error, 'LOCK_BACKEND_UNAVAILABLE') && retries > 0) {
        // The pause froze every worker of this one process, so their sessions can end too; a real
        // service retries a turn when its backend connection was cut.
        timeline.log(who, `backend connection was cut (${error.message}); trying the turn again`);
        await turn(who, provider, false, retries - 1);
      } else {
        throw error;
      }
    });
  };

  // Worker 2 pauses on its first turn; the others keep taking turns until its stale write went out.
  const work = async (index: number, provider: LockProvider): Promise<void> => {
    const who = `worker-${index + 1}`;
    for (let round = 0; round < MAX_ROUNDS && (round < rounds || (index !== 1 && !staleWriteSent)); round += 1) {
      const pauseHere = index === 1 && !paused;
      if (pauseHere) paused = true;
      await turn(who, provider, pauseHere);
      // Other work between turns; without it a releasing worker can win its own lock back at once on
      // backends whose waiters poll, and the others would starve.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  try {
    await Promise.all(providers.map((provider, index) => work(index, provider)));
  } finally {
    await Promise.all(providers.map((provider) => provider.close()));
  }
  print('');
  print(`balance ${ledger.balance}; writes accepted ${ledger.accepted}, refused ${ledger.refused}`);
  print(
    lateWriteRefused
      ? 'The paused worker believed it held the lock; its token was older than the new holder\'s, so the ledger refused it.'
      : 'The late write was not refused: this backend gives no fencing token (see its README).',
  );
  return { accepted: ledger.accepted, refused: ledger.refused, lateWriteRefused, timeline };
}
