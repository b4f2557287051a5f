/**
 * The allocation split of one subject (scenario 4b), in a process of its own that allocation.ts forks
 * with IPC and `--no-turbo-inlining` (so that each allocation is charged to the function that made
 * it, not to the one it was inlined into); argv: `<subject id> <cycles> <max ms> <sampling interval>`.
 * It opens the subject, measures (see `measureAllocationSplit`), sends `{ type: 'split', split }` or
 * `{ type: 'failed', error }`, closes the subject and exits.
 */
import { randomUUID } from 'node:crypto';
import { lockCycle } from './allocation.js';
import { measureAllocationSplit, type AllocationSplit } from './cycle-costs.js';
import { subjectById } from './subjects.js';

/** Worker → parent message. */
export type SplitMessage = { readonly type: 'split'; readonly split: AllocationSplit } | { readonly type: 'failed'; readonly error: string };

const [subjectId, cyclesText, maxMsText, intervalText] = process.argv.slice(2);
if (subjectId === undefined || cyclesText === undefined || maxMsText === undefined || intervalText === undefined || process.send === undefined) {
  throw new Error('usage: allocation-worker <subject id> <cycles> <max ms> <sampling interval> (forked with IPC)');
}
const send = (message: SplitMessage): Promise<void> =>
  new Promise((resolve) => {
    process.send?.(message, undefined, {}, () => resolve());
  });

const session = await subjectById(subjectId).open();
try {
  const split = await measureAllocationSplit(lockCycle(session, `allocation:${randomUUID()}`), {
    cycles: Number(cyclesText),
    maxMs: Number(maxMsText),
    samplingIntervalBytes: Number(intervalText),
  });
  await send({ type: 'split', split });
} catch (error) {
  await send({ type: 'failed', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) });
} finally {
  await session.close();
  process.disconnect();
}
