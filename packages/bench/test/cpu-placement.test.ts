import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { benchPlacement, cpusOf, formatCpuList, parseCpuList, placeOnCpus, splitCpus } from '../src/cpu-placement.js';

describe('CPU lists', () => {
  it('reads taskset lists, ranges included', () => {
    expect(parseCpuList('0-3,5')).toEqual([0, 1, 2, 3, 5]);
    expect(parseCpuList(' 1 ')).toEqual([1]);
    expect(parseCpuList('4,0-1')).toEqual([0, 1, 4]);
    expect(formatCpuList([0, 1, 4])).toBe('0,1,4');
  });

  it('refuses what is not a list', () => {
    for (const text of ['', 'a', '3-1', '0,,1', '0x1']) expect(() => parseCpuList(text), text).toThrow(/not a CPU list/);
  });

  it('gives the client the first half (at least one CPU) and the servers the rest', () => {
    expect(splitCpus([0])).toBeUndefined();
    expect(splitCpus([0, 1])).toEqual({ client: [0], servers: [1] });
    expect(splitCpus([0, 1, 2])).toEqual({ client: [0], servers: [1, 2] });
    expect(splitCpus([2, 3, 6, 7])).toEqual({ client: [2, 3], servers: [6, 7] });
  });
});

// A taskset that keeps each PID's CPUs in a map, as the real one would.
function fakeTaskset(initial: Record<number, string>, failOn?: (args: readonly string[]) => boolean) {
  const affinity = new Map(Object.entries(initial).map(([pid, list]) => [Number(pid), list]));
  const calls: string[] = [];
  const taskset = (args: readonly string[]): string => {
    calls.push(args.join(' '));
    if (failOn?.(args) === true) throw new Error('taskset: failed to set pid affinity: Operation not permitted');
    const pid = Number(args[args.length - 1]);
    if (args[0] === '-a') {
      affinity.set(pid, args[3] as string);
      return '';
    }
    return `pid ${pid}'s current affinity list: ${affinity.get(pid) ?? '0'}\n`;
  };
  return { taskset, affinity, calls };
}

describe('placeOnCpus', () => {
  it('moves every thread of each server to the servers’ CPUs and the client to its own, and gives them back', () => {
    const fake = fakeTaskset({ 10: '0-3', 20: '0-3', 21: '1,3' });
    const placement = placeOnCpus(10, [20, 21], fake.taskset);
    expect(placement.placed).toBe(true);
    expect(placement.description).toBe('client on CPUs 0,1, servers on CPUs 2,3');
    expect([...fake.affinity]).toEqual([
      [10, '0,1'],
      [20, '2,3'],
      [21, '2,3'],
    ]);
    expect(fake.calls.filter((call) => !call.startsWith('-a'))).toHaveLength(3);
    placement.restore();
    expect([...fake.affinity]).toEqual([
      [10, '0,1,2,3'],
      [20, '0,1,2,3'],
      [21, '1,3'],
    ]);
    const calls = fake.calls.length;
    placement.restore();
    expect(fake.calls).toHaveLength(calls);
  });

  it('moves nothing with one CPU, or no servers, and says why', () => {
    const one = fakeTaskset({ 10: '0', 20: '0' });
    const alone = placeOnCpus(10, [20], one.taskset);
    expect(alone.placed).toBe(false);
    expect(alone.description).toMatch(/shared CPUs \(the bench may use 1 CPU only\)/);
    expect(one.calls.some((call) => call.startsWith('-a'))).toBe(false);
    const none = placeOnCpus(10, [], fakeTaskset({ 10: '0-1' }).taskset);
    expect(none.placed).toBe(false);
    expect(none.description).toMatch(/no servers/);
  });

  it('gives back what it moved when taskset fails half-way', () => {
    const fake = fakeTaskset({ 10: '0-1', 20: '0-1', 21: '0-1' }, (args) => args[0] === '-a' && args[4] === '21');
    const placement = placeOnCpus(10, [20, 21], fake.taskset);
    expect(placement.placed).toBe(false);
    expect(placement.description).toMatch(/taskset failed: taskset: failed to set pid affinity/);
    expect(fake.affinity.get(20)).toBe('0,1');
    expect(fake.affinity.get(10)).toBe('0-1');
  });
});

describe('benchPlacement', () => {
  it('moves nothing unless asked, and refuses a value it does not know', () => {
    const before = hasTaskset() ? cpusOf(process.pid) : undefined;
    const placement = benchPlacement({});
    expect(placement.placed).toBe(false);
    expect(placement.description).toBe('client and servers on shared CPUs');
    if (before !== undefined) expect(cpusOf(process.pid)).toEqual(before);
    expect(benchPlacement({ BENCH_PLACEMENT: 'shared' }).placed).toBe(false);
    expect(() => benchPlacement({ BENCH_PLACEMENT: 'pinned' })).toThrow(/BENCH_PLACEMENT must be "shared" \(the default\) or "apart", not "pinned"/);
  });
});

function hasTaskset(): boolean {
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('placeOnCpus with the real taskset', () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
  });
  const idle = (): ChildProcess => {
    // Ends by itself after a minute if the test dies before killing it.
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
    children.push(child);
    return child;
  };

  it('moves two processes of ours apart and back, or says why it cannot', () => {
    const client = idle().pid as number;
    const server = idle().pid as number;
    if (!hasTaskset()) {
      expect(placeOnCpus(client, [server]).description).toMatch(/taskset failed/);
      return;
    }
    const own = cpusOf(client);
    const placement = placeOnCpus(client, [server]);
    if (own.length < 2) {
      expect(placement.placed).toBe(false);
      return;
    }
    const split = splitCpus(own);
    expect(placement.placed).toBe(true);
    expect(cpusOf(client)).toEqual(split?.client);
    expect(cpusOf(server)).toEqual(split?.servers);
    placement.restore();
    expect(cpusOf(client)).toEqual(own);
    expect(cpusOf(server)).toEqual(own);
  });
});
