/**
 * The gap account: its parts add up to the gap, the twin cuts it where it should, and a short real
 * run on the shared Redis reads every figure (client CPU, the servers' CPU and commands).
 */
import { topology } from '@fencelock/test-infra';
import { describe, expect, it } from 'vitest';
import { gapAccount, gapAccountMarkdown, gapPart, measureCycleCosts, type CycleCost } from '../src/gap-account.js';
import { parseSchedstatNanos, processCpuMicros, redisServerMicros } from '../src/server-counters.js';
import { startedServerPids } from '@fencelock/test-infra';
import { SCRIPT_COMMANDS, subjectById } from '../src/subjects.js';

const cost = (subject: string, wall: number, cpu: number, serverCpu: number | undefined, serverCommands: number | undefined): CycleCost => ({
  subject,
  backend: 'redis',
  kind: subject === 'ours' ? 'fencelock' : 'raw',
  label: `label of ${subject}`,
  cycles: 100,
  wall,
  p10: wall / 2,
  p50: wall * 0.9,
  cpu,
  serverCpu,
  serverCommands,
});

describe('gap account', () => {
  it('splits a gap into client CPU, server CPU and a rest that add up to it', () => {
    const part = gapPart(cost('ours', 200, 90, 70, 16), cost('base', 170, 80, 55, 4));
    expect(part).toEqual({ wall: 30, cpu: 10, serverCpu: 15, serverCommands: 12, rest: 5 });
    // No server figure on one side: none in the part, and the rest keeps the servers' share.
    const noServer = gapPart(cost('ours', 200, 90, undefined, undefined), cost('base', 170, 80, 55, 4));
    expect(noServer).toEqual({ wall: 30, cpu: 10, serverCpu: undefined, serverCommands: undefined, rest: 20 });
  });

  it('cuts the gap at the twin: requests + library = the gap, part by part', () => {
    const ours = cost('ours', 200, 95, 72, 17);
    const twin = cost('twin', 190, 88, 71, 16);
    const base = cost('base', 170, 80, 55, 4);
    const account = gapAccount(ours, twin, base);
    expect(account.ratio).toBeCloseTo(170 / 200, 10);
    expect(account.total).toEqual(gapPart(ours, base));
    expect(account.requests).toEqual(gapPart(twin, base));
    expect(account.library).toEqual(gapPart(ours, twin));
    const { requests, library, total } = account;
    for (const field of ['wall', 'cpu', 'serverCpu', 'serverCommands', 'rest'] as const) {
      expect((requests?.[field] ?? 0) + (library[field] ?? 0)).toBeCloseTo(total[field] ?? 0, 10);
    }
    // Against the twin itself there is no requests part: the whole gap is the library's.
    expect(gapAccount(ours, twin, twin).requests).toBeUndefined();
  });

  it("reads a thread's CPU time from its schedstat line, and refuses anything else", () => {
    expect(parseSchedstatNanos('85580 83670 2\n')).toBe(85_580);
    expect(() => parseSchedstatNanos('')).toThrow(/schedstat/);
    expect(() => parseSchedstatNanos('-1 0 0')).toThrow(/schedstat/);
  });

  it('counts the CPU a process spends, every thread of it', () => {
    const read = processCpuMicros([process.pid]);
    const before = read();
    const cpuBefore = process.cpuUsage();
    // Busy for a while: the reader sees (about) what the process itself counts.
    let x = 0;
    for (let i = 0; i < 20_000_000; i += 1) x += i % 7;
    expect(x).toBeGreaterThan(0);
    const used = process.cpuUsage(cpuBefore);
    const spent = read() - before;
    expect(spent).toBeGreaterThan(0.5 * (used.user + used.system));
    expect(spent).toBeLessThan(2 * (used.user + used.system) + 20_000);
  });

  it('measures real subjects on the shared Redis: every figure read, the twin and the library apart', async () => {
    const { redisUrl } = topology();
    // The CI runs the bench's tests on the servers test-infra started: their CPU must be readable.
    const redisPids = startedServerPids(undefined, ['redis']);
    expect(redisPids.length).toBe(1);
    const subjects = ['redis/fencelock', 'redis/protocol-twin', 'redis/raw-ioredis'].map((id) => subjectById(id));
    const errors: unknown[] = [];
    const costs = await measureCycleCosts(
      subjects,
      { keys: 1, rounds: 2, sliceMs: 40, warmupCycles: 20, warmupMs: 5_000 },
      { cpu: processCpuMicros(redisPids), commands: redisServerMicros([redisUrl], SCRIPT_COMMANDS) },
      (_, error) => errors.push(error),
    );
    expect(errors).toEqual([]);
    expect(costs.map((c) => c.subject)).toEqual(subjects.map((s) => s.id));
    for (const c of costs) {
      expect(c.cycles).toBeGreaterThan(0);
      expect(c.wall).toBeGreaterThan(0);
      expect(c.cpu).toBeGreaterThan(0);
      // The commands are part of what the server's CPU did.
      expect(c.serverCommands).toBeGreaterThan(0);
      expect(c.serverCpu).toBeGreaterThan(0);
      expect(c.p10).toBeLessThanOrEqual(c.p50);
    }
    const [ours, twin, raw] = costs as [CycleCost, CycleCost, CycleCost];
    // fencelock's scripts run more commands per cycle than SET NX PX and a compare-and-delete, as the twin's do.
    expect(ours.serverCommands).toBeGreaterThan(raw.serverCommands ?? Number.POSITIVE_INFINITY);
    expect(twin.serverCommands).toBeGreaterThan(raw.serverCommands ?? Number.POSITIVE_INFINITY);
    const table = gapAccountMarkdown(costs, [gapAccount(ours, twin, raw)], 'pnpm --filter @fencelock/bench bench:gap-account').join('\n');
    expect(table).toContain(`| redis | ${ours.label} |`);
    expect(table).toContain(`| ${ours.label} ÷ ${raw.label} |`);
  });
});
