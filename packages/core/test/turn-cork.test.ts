import { PassThrough } from 'node:stream';
import { describe, expect, it, vi } from 'vitest';
import { TurnCork } from '../src/adapter.js';

/** A stream that records each write that reaches it: one chunk, or (`_writev`) a batch. */
function recordingStream(): { stream: PassThrough; writes: string[][] } {
  const writes: string[][] = [];
  const stream = new PassThrough();
  stream._write = (chunk: Buffer, _encoding, callback) => {
    writes.push([chunk.toString()]);
    callback();
  };
  stream._writev = (chunks, callback) => {
    writes.push(chunks.map(({ chunk }) => String(chunk)));
    callback();
  };
  return { stream, writes };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Writes `request` on `stream` as an adapter does: the cork is told first. */
function send(cork: TurnCork, stream: PassThrough, request: string): void {
  cork.cork(stream);
  stream.write(request);
}

describe('TurnCork', () => {
  it("sends a turn's first request at once and the rest of the turn, microtasks included, in one write, in order", async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork();
    send(cork, stream, 'a');
    expect(writes).toEqual([['a']]);
    send(cork, stream, 'b');
    await Promise.resolve();
    send(cork, stream, 'c');
    expect(writes).toEqual([['a']]);
    await nextTurn();
    expect(writes).toEqual([['a'], ['b', 'c']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('starts over in the next turn: its first request leaves at once again', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork();
    send(cork, stream, 'a');
    send(cork, stream, 'b');
    await nextTurn();
    send(cork, stream, 'c');
    expect(writes).toEqual([['a'], ['b'], ['c']]);
    send(cork, stream, 'd');
    send(cork, stream, 'e');
    await nextTurn();
    expect(writes).toEqual([['a'], ['b'], ['c'], ['d', 'e']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('corks from the first request on when asked to: the whole turn in one write', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork({ firstAtOnce: false });
    send(cork, stream, 'a');
    send(cork, stream, 'b');
    expect(writes).toEqual([]);
    await nextTurn();
    send(cork, stream, 'c');
    await nextTurn();
    expect(writes).toEqual([['a', 'b'], ['c']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('with a batch limit, lets the held requests leave once that many are held, in order, the rest at the end of the turn', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork({ batchLimit: 3 });
    for (const request of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']) send(cork, stream, request);
    // The first at once; then three held at a time, each group leaving when the next request comes.
    expect(writes).toEqual([['a'], ['b', 'c', 'd'], ['e', 'f', 'g']]);
    await nextTurn();
    expect(writes).toEqual([['a'], ['b', 'c', 'd'], ['e', 'f', 'g'], ['h', 'i']]);
    expect(stream.writableCorked).toBe(0);
    // The count starts over with the next turn, from the first request held.
    const held = new TurnCork({ firstAtOnce: false, batchLimit: 2 });
    for (const request of ['j', 'k', 'l']) send(held, stream, request);
    await nextTurn();
    expect(writes.slice(4)).toEqual([['j', 'k'], ['l']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('refuses a batch limit that is not a whole number of at least 1', () => {
    for (const batchLimit of [0, -1, 1.5, Number.NaN]) expect(() => new TurnCork({ batchLimit })).toThrow(RangeError);
    expect(() => new TurnCork({ batchLimit: Number.POSITIVE_INFINITY })).not.toThrow();
  });

  it('leaves alone a socket that cannot be corked, and no socket at all', () => {
    const cork = new TurnCork();
    expect(() => cork.cork(undefined)).not.toThrow();
    expect(() => cork.cork(null)).not.toThrow();
    let corked = 0;
    // A half of the pair is not a socket to cork: corked, it could never be uncorked.
    const half = { cork: () => void (corked += 1) };
    cork.cork(half);
    cork.cork(half);
    expect(corked).toBe(0);
  });

  it('ends the turn of every cork in the process with one callback: a round over five connections schedules it once', async () => {
    const connections = Array.from({ length: 5 }, () => ({ cork: new TurnCork(), ...recordingStream() }));
    const nextTick = vi.spyOn(process, 'nextTick');
    try {
      for (const { cork, stream } of connections) send(cork, stream, 'a');
      for (const { cork, stream } of connections) send(cork, stream, 'b');
      expect(nextTick).toHaveBeenCalledTimes(1);
    } finally {
      nextTick.mockRestore();
    }
    for (const { writes } of connections) expect(writes).toEqual([['a']]);
    await nextTurn();
    for (const { stream, writes } of connections) {
      expect(writes).toEqual([['a'], ['b']]);
      expect(stream.writableCorked).toBe(0);
    }
    // The next turn starts over for each of them.
    for (const { cork, stream } of connections) send(cork, stream, 'c');
    for (const { writes } of connections) expect(writes).toEqual([['a'], ['b'], ['c']]);
  });
});
