/**
 * What one acquire + release cycle costs the client process: CPU time and bytes allocated on the V8
 * heap, and who allocated them.
 *
 * - CPU: `process.cpuUsage()` (user + system) over a pass of cycles.
 * - Bytes: V8's own accounting, exact — the heap's used size at the end of a pass minus at its start,
 *   plus what every garbage collection in between freed (`v8.GCProfiler` reports the used size
 *   before and after each one).
 * - Who spent the CPU: a V8 CPU profile over a pass of its own, its ticks charged by the same rule
 *   and scaled to that pass's `process.cpuUsage()`.
 * - Who: a sampling heap profile over a pass (objects collected before it ends included), each sample
 *   charged by the rule of allocation-owners.ts, the shares scaled to that pass's exact bytes. The
 *   profile names the function a sample was taken in after inlining: run the split in a process
 *   started with `--no-turbo-inlining` (allocation.ts does), or an inlined callee's allocations are
 *   charged to its caller.
 *
 * Every pass is bounded by cycles AND time.
 */
import { Session } from 'node:inspector/promises';
import { GCProfiler, getHeapStatistics } from 'node:v8';
import { attribute, type OwnerGroup, type ProfileNode, type SampledProfile } from './allocation-owners.js';
import { round } from './stats.js';

/** Bounds of a measurement. */
export interface CycleOptions {
  /** Cycles of each measured pass. */
  readonly cycles: number;
  /** Most time of each pass, ms (a pass stops at whichever bound comes first). */
  readonly maxMs: number;
  /** Unmeasured cycles first (default min(2000, cycles)): the JIT settles, caches fill. */
  readonly warmupCycles?: number;
}

/** CPU and bytes per cycle. */
export interface CycleCosts {
  /** Cycles of the CPU pass (all rounds). */
  readonly cpuCycles: number;
  /** User + system CPU time of the process per cycle, µs (the median of the rounds when there are rounds). */
  readonly cpuMicrosPerCycle: number;
  /** Cycles of the allocation pass. */
  readonly allocationCycles: number;
  /** Bytes allocated on the V8 heap per cycle, by anyone in the process (V8's exact accounting). */
  readonly bytesPerCycle: number;
}

/** Bytes per cycle charged to one owner. */
export interface OwnerShare {
  /** `fencelock`, a package name (`ioredis`, `redlock`, …), `harness` or `runtime`. */
  readonly name: string;
  readonly group: OwnerGroup;
  readonly bytesPerCycle: number;
}

/** Bytes per cycle allocated by one function (the frame charged, see allocation-owners.ts). */
export interface FunctionShare {
  readonly owner: string;
  readonly frame: string;
  readonly bytesPerCycle: number;
}

/** Who allocated the bytes of a pass, and who spent the CPU time of another. */
export interface AllocationSplit {
  readonly cycles: number;
  /** Bytes per cycle of this pass (V8's exact accounting). */
  readonly bytesPerCycle: number;
  /** The same bytes by owner, largest first. */
  readonly owners: readonly OwnerShare[];
  /** The largest allocating functions, largest first. */
  readonly functions: readonly FunctionShare[];
  /** Who spent the client CPU, from a CPU profile of a pass of its own (absent in older results). */
  readonly cpu?: CpuSplit;
}

/** Client CPU µs per cycle charged to one owner, or to one function. */
export interface CpuShare {
  /** `fencelock`, a package name, `harness` or `runtime` (by the rule of allocation-owners.ts). */
  readonly owner: string;
  readonly group: OwnerGroup;
  /** The charged frame (functions only). */
  readonly frame?: string;
  readonly microsPerCycle: number;
}

/** Who spent the client CPU of a pass. */
export interface CpuSplit {
  readonly cycles: number;
  /** User + system CPU time of the process per cycle over this pass, µs (the profiler's own cost included). */
  readonly microsPerCycle: number;
  /** The same time by owner, largest first (samples of V8 itself — `(program)`, `(garbage collector)` — are the runtime's). */
  readonly owners: readonly CpuShare[];
  /** The functions that spent the most, largest first. */
  readonly functions: readonly CpuShare[];
}

/** Options of {@link measureAllocationSplit}. */
export interface SplitOptions extends CycleOptions {
  /**
   * Mean bytes between two samples of the heap profile. Smaller is finer but biases V8's per-sample
   * scaling, which rounds to whole objects. @default 1024
   */
  readonly samplingIntervalBytes?: number;
  /** Allocating functions listed. @default 20 */
  readonly topFunctions?: number;
}

/** Warm-up, then a CPU pass and an allocation pass of `cycle`. */
export async function measureCycleCosts(cycle: () => Promise<void>, options: CycleOptions): Promise<CycleCosts> {
  await runBounded(cycle, options.warmupCycles ?? Math.min(2_000, options.cycles), options.maxMs);
  const cpu = await measureCpu(cycle, options.cycles, options.maxMs);
  const bytes = await measureBytes(cycle, options.cycles, options.maxMs);
  return { cpuCycles: cpu.cycles, cpuMicrosPerCycle: cpu.microsPerCycle, allocationCycles: bytes.cycles, bytesPerCycle: bytes.bytesPerCycle };
}

/**
 * User + system CPU per cycle over at most `cycles` cycles and `maxMs`, µs, and the wall time of the
 * same cycles (NaN with no cycle).
 */
export async function measureCpu(cycle: () => Promise<void>, cycles: number, maxMs: number): Promise<{ cycles: number; microsPerCycle: number; wallMicrosPerCycle: number }> {
  const start = process.cpuUsage();
  const started = performance.now();
  const done = await runBounded(cycle, cycles, maxMs);
  const wallMicros = (performance.now() - started) * 1_000;
  const used = process.cpuUsage(start);
  return {
    cycles: done,
    microsPerCycle: done === 0 ? Number.NaN : round((used.user + used.system) / done, 2),
    wallMicrosPerCycle: done === 0 ? Number.NaN : round(wallMicros / done, 2),
  };
}

/** Bytes allocated on the V8 heap per cycle over at most `cycles` cycles and `maxMs` (NaN with no cycle). */
export async function measureBytes(cycle: () => Promise<void>, cycles: number, maxMs: number): Promise<{ cycles: number; bytesPerCycle: number }> {
  const { cycles: done, bytes } = await countBytes(() => runBounded(cycle, cycles, maxMs));
  return { cycles: done, bytesPerCycle: done === 0 ? Number.NaN : round(bytes / done, 1) };
}

/** Runs `cycle` at most `cycles` times and for at most `maxMs`; resolves how many cycles ran. */
export async function runBounded(cycle: () => Promise<void>, cycles: number, maxMs: number): Promise<number> {
  const deadline = performance.now() + maxMs;
  let done = 0;
  while (done < cycles && performance.now() < deadline) {
    await cycle();
    done += 1;
  }
  return done;
}

/** Warm-up, then a pass of `cycle` under the sampling heap profiler: its bytes by owner and by function. */
export async function measureAllocationSplit(cycle: () => Promise<void>, options: SplitOptions): Promise<AllocationSplit> {
  await runBounded(cycle, options.warmupCycles ?? Math.min(2_000, options.cycles), options.maxMs);
  const session = new Session();
  session.connect();
  try {
    await session.post('HeapProfiler.enable');
    // Objects collected before the profile is taken stay in it: nearly everything a cycle allocates is.
    const sampling = {
      samplingInterval: options.samplingIntervalBytes ?? 1_024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    };
    await session.post('HeapProfiler.startSampling', sampling);
    const { cycles, bytes } = await countBytes(() => runBounded(cycle, options.cycles, options.maxMs));
    const { profile } = await session.post('HeapProfiler.stopSampling');
    const attribution = attribute(sampledProfile(profile));
    const perCycle = scaledPerCycle(attribution.totalBytes, bytes, cycles, 1);
    return {
      cycles,
      bytesPerCycle: cycles === 0 ? Number.NaN : round(bytes / cycles, 1),
      owners: [...attribution.byOwner.values()]
        .map(({ owner, bytes: sampled }) => ({ name: owner.name, group: owner.group, bytesPerCycle: perCycle(sampled) }))
        .sort((a, b) => b.bytesPerCycle - a.bytesPerCycle),
      functions: attribution.byFunction
        .slice(0, options.topFunctions ?? 20)
        .map(({ owner, frame, bytes: sampled }) => ({ owner: owner.name, frame, bytesPerCycle: perCycle(sampled) })),
      cpu: await measureCpuSplit(session, cycle, options),
    };
  } finally {
    await session.post('HeapProfiler.disable').catch(() => undefined);
    session.disconnect();
  }
}

// A profile's sampled amounts, scaled so that they add up to the pass's exact `total`, per cycle.
function scaledPerCycle(sampledTotal: number, total: number, cycles: number, digits: number): (sampled: number) => number {
  return (sampled) => (cycles === 0 || sampledTotal === 0 ? 0 : round((sampled * total) / sampledTotal / cycles, digits));
}

// Microseconds between two CPU profile ticks: fine enough for a cycle of a few hundred µs, and
// each tick costs the process a little, so not finer.
const CPU_SAMPLING_INTERVAL_US = 200;
// Functions kept from the CPU profile: enough that fencelock's own appear beside the client library's.
const CPU_FUNCTIONS_KEPT = 60;

// A pass of `cycle` under V8's CPU profiler: the process's CPU time per cycle, charged by owner and
// function with the allocation rule (a sample's time goes to the innermost package frame).
async function measureCpuSplit(session: Session, cycle: () => Promise<void>, options: SplitOptions): Promise<CpuSplit> {
  await session.post('Profiler.enable');
  try {
    await session.post('Profiler.setSamplingInterval', { interval: CPU_SAMPLING_INTERVAL_US });
    await session.post('Profiler.start');
    const started = process.cpuUsage();
    const cycles = await runBounded(cycle, options.cycles, options.maxMs);
    const used = process.cpuUsage(started);
    const { profile } = await session.post('Profiler.stop');
    const attribution = attribute(timedProfile(profile));
    const micros = used.user + used.system;
    const perCycle = scaledPerCycle(attribution.totalBytes, micros, cycles, 2);
    return {
      cycles,
      microsPerCycle: cycles === 0 ? Number.NaN : round(micros / cycles, 2),
      owners: [...attribution.byOwner.values()]
        .map(({ owner, bytes: sampled }) => ({ owner: owner.name, group: owner.group, microsPerCycle: perCycle(sampled) }))
        .sort((a, b) => b.microsPerCycle - a.microsPerCycle),
      functions: attribution.byFunction
        .slice(0, CPU_FUNCTIONS_KEPT)
        .map(({ owner, frame, bytes: sampled }) => ({ owner: owner.name, group: owner.group, frame, microsPerCycle: perCycle(sampled) })),
    };
  } finally {
    await session.post('Profiler.disable').catch(() => undefined);
  }
}

// A CPU profile in the shape attribute() reads: a tree from the flat node list, and one sample per
// tick weighted by its time delta (µs). Idle ticks are not CPU time and are left out.
function timedProfile(profile: { nodes: readonly CpuNode[]; samples?: readonly number[]; timeDeltas?: readonly number[] }): SampledProfile {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const build = (node: CpuNode): ProfileNode => ({
    id: node.id,
    callFrame: node.callFrame,
    children: (node.children ?? []).flatMap((id) => {
      const child = byId.get(id);
      return child === undefined ? [] : [build(child)];
    }),
  });
  const root = profile.nodes[0];
  if (root === undefined) throw new Error('the CPU profile has no nodes');
  const samples: { size: number; nodeId: number }[] = [];
  const ticks = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let index = 0; index < ticks.length; index += 1) {
    const nodeId = ticks[index] ?? -1;
    if (byId.get(nodeId)?.callFrame.functionName === '(idle)') continue;
    samples.push({ size: deltas[index] ?? 0, nodeId });
  }
  return { head: build(root), samples };
}

interface CpuNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}

// Bytes allocated on the V8 heap while `run` runs: used size after − before + what each GC freed.
async function countBytes(run: () => Promise<number>): Promise<{ cycles: number; bytes: number }> {
  const collections = new GCProfiler();
  collections.start();
  const usedBefore = getHeapStatistics().used_heap_size;
  const cycles = await run();
  const usedAfter = getHeapStatistics().used_heap_size;
  let freed = 0;
  for (const gc of collections.stop().statistics) freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize;
  return { cycles, bytes: usedAfter - usedBefore + freed };
}

// Node 20's typings of the profile predate its `samples` list (one entry per sampled allocation).
function sampledProfile(profile: object): SampledProfile {
  const samples: unknown = (profile as { samples?: unknown }).samples;
  if (!Array.isArray(samples)) throw new Error('the sampling heap profile has no samples list (Node too old?)');
  return profile as SampledProfile;
}
