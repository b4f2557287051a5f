import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
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

describe('TurnCork', () => {
  it('sends what is written in one turn, microtasks included, as one write, in order', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork();
    for (const request of ['a', 'b']) {
      cork.cork(stream);
      stream.write(request);
    }
    await Promise.resolve();
    cork.cork(stream);
    stream.write('c');
    expect(writes).toEqual([]);
    await nextTurn();
    expect(writes).toEqual([['a', 'b', 'c']]);
  });

  it('corks again in the next turn, and leaves the socket uncorked in between', async () => {
    const { stream, writes } = recordingStream();
    const cork = new TurnCork();
    cork.cork(stream);
    stream.write('a');
    await nextTurn();
    expect(stream.writableCorked).toBe(0);
    cork.cork(stream);
    stream.write('b');
    await nextTurn();
    expect(writes).toEqual([['a'], ['b']]);
    expect(stream.writableCorked).toBe(0);
  });

  it('leaves alone a socket that cannot be corked, and no socket at all', () => {
    const cork = new TurnCork();
    expect(() => cork.cork(undefined)).not.toThrow();
    expect(() => cork.cork(null)).not.toThrow();
    let corked = 0;
    // A half of the pair is not a socket to cork: corked, it could never be uncorked.
    cork.cork({ cork: () => void (corked += 1) });
    expect(corked).toBe(0);
  });
});
