import { describe, expect, it } from 'vitest';
import { PerfSamples, chargedOwner, perfSeconds, resolveJitAddresses, workKind } from '../src/perf-split.js';

// Three samples as `perf script -F comm,pid,tid,time,ip,sym,dso` prints them: a socket write in the
// kernel under ioredis under fencelock, fencelock's own code named through a stale perf-map entry,
// and V8's background marking on another thread.
const SCRIPT = [
  'node 4242/4242 12742.544920: ',
  '\tffffffff8225a6c1 do_syscall_64 ([kernel.kallsyms])',
  '\t          1a2b3c __GI___libc_write (/usr/lib/x86_64-linux-gnu/libc.so.6)',
  '\t    7f0000001010 JS:*sendCommand file:///app/node_modules/.pnpm/ioredis@5.9.2/node_modules/ioredis/built/Redis.js:327:16 (/tmp/perf-4242.map)',
  '\t    7f0000002020 JS:*#acquireAt file:///app/packages/redis/dist/index.js:654:19 (/tmp/perf-4242.map)',
  '',
  'node 4242/4242 12742.545020: ',
  '\t    7f0000003030 JS:*encode file:///app/node_modules/protobufjs/src/writer.js:10:1 (/tmp/perf-4242.map)',
  '\t    7f0000002020 JS:*#acquireAt file:///app/packages/redis/dist/index.js:654:19 (/tmp/perf-4242.map)',
  '',
  'V8 DefaultWorke 4242/4250 12742.545120: ',
  '\t          99aabb v8::internal::ConcurrentMarking::RunMajor (/usr/bin/node)',
  '',
].join('\n');

// Created in this order: an old function at 0x7f0000003000 (gone since), then fencelock's code over the same memory.
const MAP = [
  '7f0000001000 100 JS:*sendCommand file:///app/node_modules/.pnpm/ioredis@5.9.2/node_modules/ioredis/built/Redis.js:327:16',
  '7f0000002000 100 JS:*#acquireAt file:///app/packages/redis/dist/index.js:654:19',
  '7f0000003000 100 JS:*encode file:///app/node_modules/protobufjs/src/writer.js:10:1',
  '7f0000002f00 200 JS:*#attemptArgs file:///app/packages/redis/dist/index.js:802:3',
].join('\n');

describe('bench:perf-split', () => {
  it('sorts a sample by its innermost frame, and charges it to the innermost frame of a package', () => {
    expect(workKind({ symbol: 'do_syscall_64', dso: '[kernel.kallsyms]' }, true)).toBe('kernel');
    expect(workKind({ symbol: 'JS:*x file:///a.js:1:1', dso: '/tmp/perf-1.map' }, true)).toBe('JavaScript');
    expect(workKind({ symbol: 'Builtins_LoadIC', dso: '/usr/bin/node' }, true)).toBe('V8 builtins');
    expect(workKind({ symbol: 'v8::internal::Heap::Scavenge', dso: '/usr/bin/node' }, true)).toBe('garbage collector');
    expect(workKind({ symbol: 'v8::internal::compiler::GraphReducer::ReduceTop', dso: '/usr/bin/node' }, true)).toBe('compilers');
    expect(workKind({ symbol: 'malloc', dso: '/usr/lib/x86_64-linux-gnu/libc.so.6' }, true)).toBe('C library');
    expect(workKind({ symbol: 'uv__io_poll', dso: '/usr/bin/node' }, true)).toBe('V8 and Node, other');
    expect(workKind({ symbol: 'malloc', dso: '/usr/lib/x86_64-linux-gnu/libc.so.6' }, false)).toBe('other threads');
    // Node's own code owns nothing: its caller does.
    const charged = chargedOwner([
      { symbol: 'JS:*writeGeneric node:internal/stream_base_commons:147:22', dso: '/tmp/perf-1.map' },
      { symbol: 'JS:*send file:///app/packages/redis-shared/dist/index.js:805:7', dso: '/tmp/perf-1.map' },
    ]);
    expect(charged).toEqual({ owner: { group: 'fencelock', name: 'fencelock' }, frame: 'send (redis-shared/dist/index.js:805)' });
    expect(chargedOwner([{ symbol: 'uv__io_poll', dso: '/usr/bin/node' }]).owner.group).toBe('runtime');
  });

  it('names code V8 made by the newest map entry that covers it, not an older one', () => {
    const names = resolveJitAddresses(MAP, [0x7f0000001010, 0x7f0000002020, 0x7f0000003030, 0x7f0000009999]);
    expect(names.get(0x7f0000001010)).toContain('sendCommand');
    expect(names.get(0x7f0000002020)).toContain('#acquireAt');
    expect(names.get(0x7f0000003030)).toContain('#attemptArgs');
    expect(names.has(0x7f0000009999)).toBe(false);
  });

  it('adds the samples up per cycle, by kind and by owner, with the JIT frames renamed from the map', () => {
    const samples = new PerfSamples();
    for (const line of SCRIPT.split('\n')) samples.line(line);
    const jit = resolveJitAddresses(MAP, samples.jitAddresses());
    // 3 samples of 100 µs over 2 cycles.
    const split = samples.result({ id: 'redis/fencelock', label: 'fencelock' }, { cycles: 2, cpuMicros: 320 }, jit);
    expect(split.sampledMicrosPerCycle).toBe(150);
    expect(split.cpuMicrosPerCycle).toBe(160);
    expect(split.byKind).toMatchObject({ kernel: 50, JavaScript: 50, 'other threads': 50, 'V8 builtins': 0 });
    // The kernel write counts for ioredis; the stale protobufjs name is fencelock's #attemptArgs; the marking thread has no package frame.
    expect(split.byGroup).toEqual({ fencelock: 50, library: 50, harness: 0, runtime: 50 });
    expect(split.byOwner.map((owner) => owner.name).sort()).toEqual(['fencelock', 'ioredis', 'runtime']);
    expect(split.fencelockFunctions).toEqual([{ frame: '#attemptArgs (redis/dist/index.js:802)', micros: 50 }]);
    // Without the map, perf's stale name would have charged it to protobufjs.
    const stale = new PerfSamples();
    for (const line of SCRIPT.split('\n')) stale.line(line);
    expect(stale.result({ id: 'x', label: 'x' }, { cycles: 2, cpuMicros: 320 }).byOwner.map((owner) => owner.name)).toContain('protobufjs');
  });

  it('writes CLOCK_MONOTONIC nanoseconds as the seconds perf script --time reads', () => {
    expect(perfSeconds('12742544850581')).toBe('12742.544850581');
    expect(perfSeconds('5')).toBe('0.000000005');
  });
});
