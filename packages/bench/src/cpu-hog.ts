/**
 * One CPU hog (forked by cpu-hogs.ts with IPC; argv: `<maxMs> <sliceMs>`): spins the CPU in slices
 * of `sliceMs`, yielding to the event loop between slices so that it can notice its parent going
 * away. It exits by itself at `maxMs`, after at most ⌈maxMs / sliceMs⌉ + 1 slices, or as soon as the
 * IPC channel to its parent closes (the parent stopped, crashed or was killed): a hog never
 * outlives the scenario that started it, even when nobody stops it.
 *
 * After every slice it reports `{ type: 'spinning', slices, cpuMs }` (its own CPU time so far).
 */

/** Hog → parent report, sent after every slice. */
export interface HogMessage {
  readonly type: 'spinning';
  /** Slices spun so far. */
  readonly slices: number;
  /** User + system CPU time of the hog process so far, ms. */
  readonly cpuMs: number;
}

const [maxText, sliceText] = process.argv.slice(2);
const maxMs = Number(maxText);
const sliceMs = Number(sliceText);
if (!(maxMs > 0) || !(sliceMs > 0) || process.send === undefined) {
  throw new Error('usage: cpu-hog <maxMs> <sliceMs> (forked with IPC)');
}

const deadline = performance.now() + maxMs;
const maxSlices = Math.ceil(maxMs / sliceMs) + 1;
// performance.now() costs tens of ns, so a slice of 50 ms is well under a million turns: this only
// stops a slice whose clock somehow stands still.
const MAX_TURNS_PER_SLICE = 100_000_000;
let slices = 0;
let sink = 0;

process.on('disconnect', () => process.exit(0));

function spin(): void {
  if (slices >= maxSlices || performance.now() >= deadline || !process.connected) process.exit(0);
  const sliceEnd = Math.min(deadline, performance.now() + sliceMs);
  for (let turn = 0; turn < MAX_TURNS_PER_SLICE && performance.now() < sliceEnd; turn += 1) sink = (sink + Math.sqrt(turn)) % 1e9;
  slices += 1;
  const cpu = process.cpuUsage();
  const report: HogMessage = { type: 'spinning', slices, cpuMs: (cpu.user + cpu.system) / 1000 };
  try {
    process.send?.(report);
  } catch {
    process.exit(0);
  }
  // setImmediate, not a loop: the 'disconnect' event gets its turn between slices.
  setImmediate(spin);
}

setImmediate(spin);
