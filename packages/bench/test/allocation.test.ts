/**
 * Scenario 4b with small counts: the owner rule on hand-made profiles, then the measurement on the
 * memory provider and on every Redis subject (real server, forked split process), and its place in
 * the report. Shapes and that work happened, never a figure (the figures come from `pnpm bench`).
 */
import { describe, expect, it } from 'vitest';
import { attribute, frameOwner, type ProfileNode } from '../src/allocation-owners.js';
import { lockCycle, runAllocationGroup, type AllocationResult } from '../src/allocation.js';
import { measureAllocationSplit, measureCycleCosts } from '../src/cycle-costs.js';
import { performanceTargets } from '../src/performance-targets.js';
import { checkTargets, computeRatios, machineInfo, renderMarkdown } from '../src/report.js';
import type { UncontendedResult } from '../src/uncontended.js';
import { redisServerMicros } from '../src/server-counters.js';
import { SCRIPT_COMMANDS, subjects } from '../src/subjects.js';
import { sharedAddresses } from '../src/bench-servers.js';

const PNPM_IOREDIS = 'file:///repo/node_modules/.pnpm/ioredis@5.9.2/node_modules/ioredis/built/Command.js';

describe('who allocated: the owner rule', () => {
  it('names a frame by its script: a package under node_modules, fencelock, the harness, or nobody', () => {
    expect(frameOwner(PNPM_IOREDIS)).toEqual({ group: 'library', name: 'ioredis' });
    expect(frameOwner('file:///repo/node_modules/.pnpm/@ioredis+commands@1.5.0/node_modules/@ioredis/commands/built/index.js')).toEqual({
      group: 'library',
      name: '@ioredis/commands',
    });
    // fencelock as a user installs it, and as this repository runs it (sources or built).
    expect(frameOwner('file:///app/node_modules/@fencelock/core/dist/index.js')).toMatchObject({ group: 'fencelock' });
    expect(frameOwner('file:///repo/packages/core/src/lock-provider.ts')).toMatchObject({ group: 'fencelock' });
    expect(frameOwner('file:///repo/packages/redis/dist/index.js')).toMatchObject({ group: 'fencelock' });
    // The bench itself, scratch and test folders, and other files are the harness.
    expect(frameOwner('file:///repo/packages/bench/src/allocation.ts')).toMatchObject({ group: 'harness' });
    expect(frameOwner('file:///repo/packages/core/scratch/alloc.ts')).toMatchObject({ group: 'harness' });
    expect(frameOwner('file:///repo/packages/core/test/helpers.ts')).toMatchObject({ group: 'harness' });
    expect(frameOwner('file:///home/user/app.mjs')).toMatchObject({ group: 'harness' });
    // Node's own code and V8 builtins pass the charge to their caller.
    expect(frameOwner('node:internal/crypto/random')).toBeUndefined();
    expect(frameOwner('')).toBeUndefined();
  });

  it('charges each sample to the innermost package frame on its stack', () => {
    let id = 0;
    const node = (url: string, functionName: string, children: ProfileNode[] = []): ProfileNode => ({
      id: (id += 1),
      callFrame: { functionName, url, lineNumber: 9 },
      children,
    });
    const randomUuid = node('node:internal/crypto/random', 'randomUUID');
    const mapDelete = node('', 'delete');
    const toWritable = node(PNPM_IOREDIS, 'toWritable');
    const write = node('node:net', 'write');
    const fencelock = node('file:///repo/packages/core/src/lock-provider.ts', '#acquire', [randomUuid, mapDelete, toWritable]);
    const ioredisCaller = node(PNPM_IOREDIS, 'sendCommand', [write]);
    const socketRead = node('node:internal/stream_base_commons', 'onStreamRead');
    const harness = node('file:///repo/packages/bench/src/cycle-costs.ts', 'runBounded', [fencelock, ioredisCaller]);
    const head = node('', '(root)', [harness, socketRead]);
    const attribution = attribute({
      head,
      samples: [
        { nodeId: randomUuid.id, size: 600 },
        { nodeId: mapDelete.id, size: 100 },
        { nodeId: fencelock.id, size: 50 },
        { nodeId: toWritable.id, size: 300 },
        { nodeId: write.id, size: 40 },
        { nodeId: harness.id, size: 7 },
        { nodeId: socketRead.id, size: 20 },
      ],
    });
    expect(attribution.totalBytes).toBe(1_117);
    const byOwner = Object.fromEntries([...attribution.byOwner].map(([name, entry]) => [name, entry.bytes]));
    expect(byOwner).toEqual({ fencelock: 750, ioredis: 340, harness: 7, runtime: 20 });
    expect(attribution.byFunction[0]).toMatchObject({ frame: '#acquire (core/src/lock-provider.ts:10)', bytes: 750 });
    expect(attribution.byFunction.map((share) => share.bytes)).toEqual([750, 300, 40, 20, 7]);
  });
});

describe('bytes and CPU per cycle', () => {
  it('counts what a known allocation costs, and splits it by owner', async () => {
    const kept: unknown[] = [];
    // 64 small arrays per cycle, each kept until the next cycle: not optimised away.
    const cycle = async (): Promise<void> => {
      kept.length = 0;
      for (let i = 0; i < 64; i += 1) kept.push([i, i + 1, i + 2]);
    };
    const costs = await measureCycleCosts(cycle, { cycles: 300, maxMs: 10_000, warmupCycles: 50 });
    expect(costs.cpuCycles).toBe(300);
    expect(costs.allocationCycles).toBe(300);
    expect(costs.cpuMicrosPerCycle).toBeGreaterThan(0);
    // At least 64 arrays of 3 elements (a header and a backing store each) per cycle.
    expect(costs.bytesPerCycle).toBeGreaterThan(64 * 3 * 4);
    const split = await measureAllocationSplit(cycle, { cycles: 300, maxMs: 10_000, warmupCycles: 50, samplingIntervalBytes: 256 });
    expect(split.cycles).toBe(300);
    expect(split.owners[0]?.name).toBe('harness');
    expect(split.functions[0]).toMatchObject({ owner: 'harness' });
    // The CPU profile of a pass of its own: the loop's time is the harness's, the ticks add up.
    expect(split.cpu?.cycles).toBe(300);
    expect(split.cpu?.owners.map((share) => share.owner)).toContain('harness');
    expect(split.cpu?.owners.map((share) => share.owner)).not.toContain('fencelock');
    const charged = (split.cpu?.owners ?? []).reduce((total, share) => total + share.microsPerCycle, 0);
    expect(charged).toBeCloseTo(split.cpu?.microsPerCycle ?? Number.NaN, 0);
  });

  const results: AllocationResult[] = [];
  const measured = subjects().filter((subject) => (subject.backend === 'memory' || subject.backend === 'redis') && subject.contentionOnly !== true);
  const check = (result: AllocationResult, rounds: number): void => {
    expect(result).toMatchObject({ cpuCycles: 200, allocationCycles: 200 });
    expect(result.roundCpuMicrosPerCycle).toHaveLength(rounds);
    expect(result.cpuMicrosPerCycle).toBeGreaterThan(0);
    expect(result.bytesPerCycle).toBeGreaterThan(0);
    expect(result.split.cycles).toBe(200);
    expect(result.split.functions.length).toBeGreaterThan(0);
    expect(result.ownBytesPerCycle).toBeGreaterThan(0);
  };

  it('measures the memory provider and its in-process baseline, each split in a forked process', async () => {
    const group = measured.filter((s) => s.backend === 'memory');
    expect(group.map((s) => s.id)).toEqual(['memory/fencelock', 'memory/async-mutex']);
    const rethrow = (subject: { id: string }, error: unknown): never => {
      throw new Error(`${subject.id} failed`, { cause: error });
    };
    const groupResults = await runAllocationGroup(group, { cycles: 200, maxMs: 20_000, rounds: 1, warmupCycles: 50, samplingIntervalBytes: 256 }, rethrow);
    expect(groupResults.map((r) => r.subject)).toEqual(group.map((s) => s.id));
    for (const result of groupResults) {
      check(result, 1);
      // Each one's own bytes are its package's: fencelock's for the provider, async-mutex's for the baseline.
      const owners = result.split.owners.map((share) => share.name);
      expect(owners).toContain(result.kind === 'fencelock' ? 'fencelock' : 'async-mutex');
      if (result.kind !== 'fencelock') expect(owners).not.toContain('fencelock');
      // No client library, no server, no server time.
      expect(result.clientLibraryBytesPerCycle).toBe(0);
      expect(result.serverMicrosPerCycle).toBeUndefined();
    }
    results.push(...groupResults);
  }, 120_000);

  it('measures every Redis subject, CPU in interleaved rounds, each split in a forked process', async () => {
    const group = measured.filter((s) => s.backend === 'redis');
    const rethrow = (subject: { id: string }, error: unknown): never => {
      throw new Error(`${subject.id} failed`, { cause: error });
    };
    const serverMicros = (subject: (typeof group)[number]): (() => Promise<number>) => redisServerMicros([sharedAddresses().redisUrl], subject.redisCommands ?? SCRIPT_COMMANDS);
    const options = { cycles: 200, maxMs: 20_000, rounds: 2, warmupCycles: 50, samplingIntervalBytes: 256, serverMicros };
    const groupResults = await runAllocationGroup(group, options, rethrow);
    expect(groupResults.map((r) => r.subject)).toEqual(group.map((s) => s.id));
    for (const result of groupResults) {
      check(result, 2);
      // Every cycle runs commands on the server: the rounds saw its time grow.
      expect(result.serverMicrosPerCycle).toBeGreaterThan(0);
      const owners = result.split.owners.map((share) => share.name);
      expect(owners).toContain('ioredis');
      expect(result.clientLibraryBytesPerCycle).toBeGreaterThan(0);
      if (result.kind === 'fencelock') expect(owners).toContain('fencelock');
      else expect(owners).not.toContain('fencelock');
      // The client's CPU, profiled: ioredis spends some of it, fencelock only in fencelock's loop.
      const cpuOwners = (result.split.cpu?.owners ?? []).map((share) => share.owner);
      expect(cpuOwners).toContain('ioredis');
      expect(cpuOwners.includes('fencelock')).toBe(result.kind === 'fencelock');
    }
    results.unshift(...groupResults);
  }, 240_000);

  it('sums the server time over every server it reads (Redlock: its masters)', async () => {
    const url = sharedAddresses().redisUrl;
    // One cycle first, so that the server has spent time on scripts.
    const session = await measured.find((s) => s.id === 'redis/fencelock')!.open();
    await lockCycle(session, `allocation:sum:${Date.now()}`)();
    await session.close();
    // The same server twice: its script time counted twice, nothing else (no other client runs now).
    const once = await redisServerMicros([url], SCRIPT_COMMANDS)();
    const twice = await redisServerMicros([url, url], SCRIPT_COMMANDS)();
    expect(once).toBeGreaterThan(0);
    expect(twice).toBe(2 * once);
  });

  it('reports the figures: ratios, targets and section 4b', () => {
    expect(results.map((r) => r.subject)).toEqual(measured.map((subject) => subject.id));
    const ratios = computeRatios([], [], [], results).filter((r) => r.scenario === 'client CPU per cycle (lower is better)');
    // Each fencelock subject against every baseline of its backend: the Redis ones, and async-mutex for the memory provider.
    expect(ratios.map((r) => r.baseline)).toEqual(measured.filter((s) => s.kind !== 'fencelock').map((s) => s.label));
    const targets = checkTargets([], [], [], [], undefined, results).filter((t) => /client CPU per cycle/.test(t.target));
    expect(targets).toHaveLength(3);
    // The bytes targets are the performance issue's, in their own section.
    const bytes = performanceTargets({ uncontended: [], parallelKeys: [], allocation: results, waiters: [] }).filter((t) => t.id.startsWith('own-bytes:'));
    expect(bytes).toHaveLength(2);
    for (const target of [...targets, ...bytes]) {
      expect(Number.isFinite(target.measured)).toBe(true);
      expect(typeof target.met).toBe('boolean');
    }
    // Section 1's throughput, as given: 250 µs per fencelock cycle, 200 µs per raw one.
    const throughput = (result: AllocationResult, opsPerSec: number): UncontendedResult => ({
      subject: result.subject, backend: result.backend, kind: result.kind, label: result.label,
      cycles: 1, seconds: 1, opsPerSec, bestOpsPerSec: opsPerSec, roundOpsPerSec: [opsPerSec], p50Ms: 0, p90Ms: 0, p99Ms: 0, maxMs: 0,
    });
    const ours = results.find((r) => r.subject === 'redis/fencelock')!;
    const raw = results.find((r) => r.subject === 'redis/raw-ioredis')!;
    const markdown = renderMarkdown({
      startedAt: new Date(0).toISOString(),
      machine: machineInfo(),
      settings: {},
      uncontended: [throughput(ours, 4_000), throughput(raw, 5_000)],
      parallelKeys: [],
      contention: [],
      waiters: [],
      memory: [],
      allocation: results,
      ratios,
      targets,
      errors: {},
    });
    expect(markdown).toContain('## 4b. Allocation and client CPU per acquire + release cycle');
    for (const result of results) expect(markdown).toContain(`| ${result.backend} | ${result.label} | ${result.kind} |`);
    // The server's time stands beside the client's CPU, a dash where there is no server.
    expect(markdown).toContain('| CPU µs/cycle | server µs/cycle |');
    for (const result of results) {
      const server = result.serverMicrosPerCycle === undefined ? '—' : result.serverMicrosPerCycle.toFixed(1);
      expect(markdown).toContain(`| ${result.backend} | ${result.label} | ${result.kind} | ${result.cpuMicrosPerCycle.toFixed(1)} | ${server} |`);
    }
    expect(markdown).toContain('Largest allocations of fencelock, @fencelock/core MemoryLockProvider');
    // Who spent the client CPU, per subject, and where the Redis cycle's extra time goes.
    expect(markdown).toContain('| profiled CPU µs/cycle | own µs | client library µs | harness µs | runtime µs |');
    for (const result of results) expect(markdown).toContain(`| ${result.backend} | ${result.label} | ${result.kind} | ${result.split.cpu!.microsPerCycle.toFixed(1)} |`);
    // Each gap to a baseline, split: the wall time of 4b's CPU rounds (not section 1's 250 against 200),
    // server and client CPU of the same rounds, the rest left over.
    const oursWall = ours.wallMicrosPerCycle!;
    const rawWall = raw.wallMicrosPerCycle!;
    // The client waits for the server's work on every cycle: its wall time exceeds the server's.
    expect(oursWall).toBeGreaterThan(ours.serverMicrosPerCycle!);
    expect(rawWall).toBeGreaterThan(raw.serverMicrosPerCycle!);
    expect(markdown).toContain(`| ${ours.cpuMicrosPerCycle.toFixed(1)} | ${ours.serverMicrosPerCycle!.toFixed(1)} | ${oursWall.toFixed(0)} |`);
    const server = (ours.serverMicrosPerCycle ?? Number.NaN) - (raw.serverMicrosPerCycle ?? Number.NaN);
    const cpu = ours.cpuMicrosPerCycle - raw.cpuMicrosPerCycle;
    const gap = oursWall - rawWall;
    const signed = (value: number): string => `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(0)}`;
    expect(markdown).toContain(`| redis | ${ours.label} | ${raw.label} | raw | ${oursWall.toFixed(0)} | ${rawWall.toFixed(0)} | ${signed(gap)} | ${signed(server)} | ${signed(cpu)} |`);
    expect(markdown).toContain(` | ${signed(gap - server - cpu)} |\n`);
  });
});
