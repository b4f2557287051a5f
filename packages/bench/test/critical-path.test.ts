import net from 'node:net';
import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { callPhases, criticalPathMarkdown, measureCriticalPaths, measuredCycle, medianPhases, WireProbe, type WireEvent } from '../src/critical-path.js';
import type { LockSession } from '../src/subjects.js';
import { subjectById } from '../src/subjects.js';

const send = (at: number, idle = 0): WireEvent => ({ kind: 'send', at, idle });
const reply = (at: number, idle = 0): WireEvent => ({ kind: 'reply', at, idle });

describe('callPhases', () => {
  it('cuts a call at its first send and the last reply before it returned', () => {
    // Two requests out (a pipelined acquire), two replies, then the caller resumes at 100; the loop
    // waited 45 µs of the 60 between the first send and the last reply.
    expect(callPhases(0, 100, [send(10, 5), send(12, 5), reply(60, 40), reply(70, 50)])).toEqual({
      beforeSend: 10,
      onTheWire: 60,
      idleOnTheWire: 45,
      afterReply: 30,
      total: 100,
    });
  });

  it('ignores what happened outside the call, and a reply read before anything was sent', () => {
    expect(callPhases(100, 200, [send(50), reply(90), reply(105), send(120), reply(180), send(250), reply(260)])).toEqual({
      beforeSend: 20,
      onTheWire: 60,
      idleOnTheWire: 0,
      afterReply: 20,
      total: 100,
    });
  });

  it('cannot cut a call that sent nothing, or read nothing after its send', () => {
    expect(callPhases(0, 100, [])).toBeUndefined();
    expect(callPhases(0, 100, [reply(10), reply(20)])).toBeUndefined();
    expect(callPhases(0, 100, [reply(10), send(20)])).toBeUndefined();
  });

  it('takes the median of each phase on its own', () => {
    const calls = [callPhases(0, 10, [send(1), reply(9, 3)]), callPhases(0, 30, [send(5), reply(20, 1)]), callPhases(0, 20, [send(2), reply(10, 7)])];
    expect(medianPhases(calls.map((call) => call!))).toEqual({ beforeSend: 2, onTheWire: 8, idleOnTheWire: 3, afterReply: 10, total: 20 });
  });
});

describe('WireProbe', () => {
  it('sees a socket write leave and its echo come back, and puts Node back when removed', async () => {
    const server = net.createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    const writeGeneric = (net.Socket.prototype as unknown as { _writeGeneric: unknown })._writeGeneric;
    const write = Duplex.prototype.write;
    const probe = new WireProbe();
    try {
      probe.install();
      const echoed = new Promise<void>((resolve) => socket.once('data', () => resolve()));
      socket.write('ping');
      await echoed;
      const events = probe.take();
      // The echo server runs in this process too: its read and its write are seen between ours.
      expect(events.map((event) => event.kind)).toEqual(['send', 'reply', 'send', 'reply']);
      expect(events.map((event) => event.at)).toEqual(events.map((event) => event.at).sort((a, b) => a - b));
      // Between our send and the echo the loop may have waited (not always: in-process, the echo can be
      // ready each time the loop looks), never for longer than the time between them.
      expect(events[3]!.idle - events[0]!.idle).toBeGreaterThanOrEqual(0);
      expect(events[3]!.idle - events[0]!.idle).toBeLessThanOrEqual(events[3]!.at - events[0]!.at);
    } finally {
      probe.uninstall();
      socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
    expect((net.Socket.prototype as unknown as { _writeGeneric: unknown })._writeGeneric).toBe(writeGeneric);
    expect(Duplex.prototype.write).toBe(write);
    expect(Object.prototype.hasOwnProperty.call(Duplex.prototype, 'emit')).toBe(false);
    expect(probe.take()).toEqual([]);
  });
});

describe('measuredCycle', () => {
  // A session that notes, at each call, whether the previous call's turn of the event loop is over
  // (each call queues an immediate that ends it).
  function turnWatchingSession(): { session: LockSession; inPreviousTurn: boolean[] } {
    const inPreviousTurn: boolean[] = [];
    let previousTurnOpen = false;
    const call = (): void => {
      inPreviousTurn.push(previousTurnOpen);
      previousTurnOpen = true;
      setImmediate(() => {
        previousTurnOpen = false;
      });
    };
    const session: LockSession = {
      lock: async () => {
        call();
        return async () => call();
      },
      close: async () => undefined,
    };
    return { session, inPreviousTurn };
  }

  it('starts each call in the continuation of the previous one, or in a turn of its own', async () => {
    const probe = new WireProbe();
    for (const ownTurns of [false, true]) {
      const { session, inPreviousTurn } = turnWatchingSession();
      for (let i = 0; i < 3; i += 1) await measuredCycle(session, 'k', probe, ownTurns);
      // The very first call has no previous one.
      expect(inPreviousTurn.slice(1), `ownTurns: ${ownTurns}`).toEqual(Array(5).fill(!ownTurns));
    }
  });
});

describe('measureCriticalPaths', () => {
  // One subject on a socket (RESP) and one on gRPC (HTTP/2 streams): each cycle must be cut.
  it.each([
    ['redis/raw-ioredis', false],
    ['etcd/raw-txn', false],
    ['redis/raw-ioredis', true],
  ])('cuts every cycle of %s (own turns: %s), and its phases add up to its calls', async (id, ownTurns) => {
    const [result] = await measureCriticalPaths([subjectById(id)], { rounds: 2, cyclesPerRound: 20, warmupCycles: 20, maxSliceMs: 20_000, ownTurns });
    expect(result).toBeDefined();
    const { acquire, release, cycles, cut } = result!;
    expect(cycles).toBe(40);
    expect(cut).toBe(40);
    for (const call of [acquire, release]) {
      expect(call.onTheWire).toBeGreaterThan(0);
      expect(call.beforeSend).toBeGreaterThanOrEqual(0);
      expect(call.afterReply).toBeGreaterThanOrEqual(0);
      // Each call's total holds its time on the wire, so their medians keep that order.
      expect(call.total).toBeGreaterThanOrEqual(call.onTheWire);
      // The loop waits on the server for part of the time on the wire, never more than all of it.
      // etcd's commit takes milliseconds, so the loop always waits for it; a loopback Redis may
      // have answered before the loop next polls (no wait at all, the median then 0 on a busy machine).
      if (id.startsWith('etcd/')) expect(call.idleOnTheWire).toBeGreaterThan(0);
      else expect(call.idleOnTheWire).toBeGreaterThanOrEqual(0);
      expect(call.idleOnTheWire).toBeLessThanOrEqual(call.onTheWire);
    }
    const table = criticalPathMarkdown([result!], 'cmd');
    expect(table.at(-1)).toContain('| 40 / 40 |');
    expect(table.at(-3)).toContain('| idle |');
  });
});
