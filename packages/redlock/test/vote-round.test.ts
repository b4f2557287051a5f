/**
 * The vote round's counting and bounds, with masters whose answers the test gives by hand (the
 * requests themselves are covered against real masters in redlock.test.ts and topologies.test.ts):
 * a round returns at a majority, counts the masters it did not wait for as stragglers until they
 * answer or its bound passes, and reports masters silent past the bound as timed out.
 */
import { RequestTimeoutError } from '@fencelock/core/adapter';
import { isPending, within } from '@fencelock/conformance';
import { describe, expect, it } from 'vitest';
import type { MasterNode, VoteSink } from '../src/master-node.js';
import { NOT_AWAITED, Stragglers, voteRound } from '../src/vote-round.js';

// What voteRound reads of a master: its name, whether it is connecting or down, its client's status.
function masters(count: number): MasterNode[] {
  return Array.from({ length: count }, (_, i) => ({ name: `m${i}`, connecting: undefined, down: false, client: { status: 'ready' } }) as unknown as MasterNode);
}

/** Sends that keep each master's sink, so the test answers when it chooses. */
function ballots(): { send: (master: MasterNode, sink: VoteSink, index: number) => void; answer: (index: number, yes: boolean) => void; fail: (index: number, error: Error) => void } {
  const sinks = new Map<number, VoteSink>();
  return {
    send: (_master, sink, index) => {
      sinks.set(index, sink);
    },
    answer: (index, yes) => sinks.get(index)?.answered(index, yes),
    fail: (index, error) => sinks.get(index)?.failed(index, error),
  };
}

describe('voteRound', () => {
  it('returns at a majority of yes, reports the others as not awaited, and counts them as stragglers until they answer', async () => {
    const stragglers = new Stragglers();
    const { send, answer } = ballots();
    const round = voteRound(masters(5), send, { timeoutMs: 60_000, enoughYes: 3, stragglers });
    await Promise.resolve();
    answer(0, true);
    answer(2, false);
    answer(1, true);
    answer(4, true);
    const replies = await within(round, 5_000, 'the round to return at the majority');
    expect(replies.map((reply) => (reply.ok ? reply.value : 'error'))).toEqual([true, true, false, 'error', true]);
    expect(replies[3]).toBe(NOT_AWAITED);
    expect(await isPending(stragglers.settled())).toBe(true);
    answer(3, false);
    expect(await isPending(stragglers.settled())).toBe(false);
  });

  it('waits for every master without enoughYes, and a master that fails is counted with its error', async () => {
    const { send, answer, fail } = ballots();
    const round = voteRound(masters(3), send, { timeoutMs: 60_000 });
    await Promise.resolve();
    answer(0, true);
    answer(1, true);
    let done = false;
    void round.then(() => {
      done = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    const failure = new Error('READONLY');
    fail(2, failure);
    const replies = await within(round, 5_000, 'the round to end on the last answer');
    expect(replies[2]).toEqual({ ok: false, error: failure, unreachable: false });
  });

  it('reports masters silent past the bound as timed out, and rounds with the same bound each keep their own deadline', async () => {
    const stragglers = new Stragglers();
    const first = ballots();
    const second = ballots();
    const a = voteRound(masters(3), first.send, { timeoutMs: 30, enoughYes: 2, stragglers });
    const b = voteRound(masters(3), second.send, { timeoutMs: 30, enoughYes: 2, stragglers });
    await Promise.resolve();
    first.answer(0, true);
    second.answer(0, true);
    second.answer(1, true);
    // b returned at its majority; its straggler is counted until the shared bound passes.
    const early = await within(b, 5_000, 'the second round at its majority');
    expect(early[2]).toBe(NOT_AWAITED);
    const late = await within(a, 5_000, 'the first round at its bound');
    expect(late[0]).toEqual({ ok: true, value: true });
    for (const index of [1, 2]) {
      const reply = late[index]!;
      expect(reply.ok).toBe(false);
      if (!reply.ok) expect(reply.error).toBeInstanceOf(RequestTimeoutError);
    }
    await within(stragglers.settled(), 5_000, "the second round's straggler to end at the bound");
    // An answer after the bound changes nothing that was returned.
    first.answer(1, true);
    expect(late[1]!.ok).toBe(false);
  });

  it('returns at once when no master can be asked', async () => {
    const down = masters(3).map((master) => ({ ...master, name: master.name, down: true, client: { status: 'end' } }) as unknown as MasterNode);
    const replies = await voteRound(down, () => {
      throw new Error('a down master is not asked');
    }, { timeoutMs: 60_000, enoughYes: 2 });
    expect(replies.every((reply) => !reply.ok && reply.unreachable)).toBe(true);
  });
});
