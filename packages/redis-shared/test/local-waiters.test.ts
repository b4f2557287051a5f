import { describe, expect, it } from 'vitest';
import { LocalWaiters, lengthPrefixed, splitDirectGrant, splitLengthPrefixed } from '../src/index.js';

const subscription = { isConfirmed: () => true, open: async () => undefined };

/** Resolves 'woken' when `wait` ends before the controller aborts it, 'aborted' otherwise. */
async function outcome(wait: Promise<void>): Promise<'woken' | 'aborted'> {
  return wait.then(
    () => 'woken' as const,
    () => 'aborted' as const,
  );
}

/** Two waiters of key `k` (owner-1 first), both waiting until woken or the controller aborts them. */
function twoWaiters() {
  const waiters = new LocalWaiters(subscription);
  const first = waiters.wakeup('k', 'owner-1');
  const second = waiters.wakeup('k', 'owner-2');
  const controller = new AbortController();
  const firstWait = outcome(first.wait(60_000, controller.signal));
  const secondWait = outcome(second.wait(60_000, controller.signal));
  return { waiters, first, second, controller, firstWait, secondWait };
}

describe('LocalWaiters', () => {
  it('an announcement naming the head wakes that waiter only, and none when the head waits elsewhere', async () => {
    const { waiters, first, second, controller, firstWait, secondWait } = twoWaiters();
    waiters.wakeOne('k', 'owner-in-another-process');
    waiters.wakeOne('k', 'owner-2');
    expect(await secondWait).toBe('woken');
    controller.abort(new Error('end of test'));
    // The first waiter was neither the head nor woken by the foreign head.
    expect(await firstWait).toBe('aborted');
    first.close();
    second.close();
  });

  it('an announcement naming no head wakes the longest-waiting waiter', async () => {
    const { waiters, first, second, controller, firstWait, secondWait } = twoWaiters();
    waiters.wakeOne('k');
    expect(await firstWait).toBe('woken');
    controller.abort(new Error('end of test'));
    expect(await secondWait).toBe('aborted');
    first.close();
    second.close();
  });

  it('a subscription confirmed again wakes every waiter of every key, and a closed one no more', async () => {
    const { waiters, first, second, firstWait, secondWait } = twoWaiters();
    const other = waiters.wakeup('other-key', 'owner-3');
    const closed = waiters.wakeup('other-key', 'owner-4');
    closed.close();
    const controller = new AbortController();
    const otherWait = outcome(other.wait(60_000, controller.signal));
    const closedWait = outcome(closed.wait(60_000, controller.signal));
    waiters.wakeAll();
    expect([await firstWait, await secondWait, await otherWait]).toEqual(['woken', 'woken', 'woken']);
    controller.abort(new Error('end of test'));
    expect(await closedWait).toBe('aborted');
    first.close();
    second.close();
    other.close();
  });
});

describe('LocalWaiters, a waiter registered after its first attempt', () => {
  it('is woken at once by an announcement since that attempt that names it or no head, not by others', async () => {
    const waiters = new LocalWaiters(subscription);
    const since = waiters.announcements;
    waiters.wakeOne('other-key');
    waiters.wakeOne('k', 'owner-elsewhere');
    waiters.wakeOne('k', 'owner-1');
    const controller = new AbortController();
    const late = waiters.wakeup('k', 'owner-1', since);
    expect(await outcome(late.wait(60_000, controller.signal))).toBe('woken');
    late.close();
    // Only the announcements after `since` count: those for other keys and other heads do not.
    const unrelated = waiters.wakeup('k', 'owner-2', since);
    const wait = outcome(unrelated.wait(60_000, controller.signal));
    controller.abort(new Error('end of test'));
    expect(await wait).toBe('aborted');
    unrelated.close();
    const fresh = waiters.wakeup('k', 'owner-1', waiters.announcements);
    const freshController = new AbortController();
    const freshWait = outcome(fresh.wait(60_000, freshController.signal));
    freshController.abort(new Error('end of test'));
    expect(await freshWait).toBe('aborted');
    fresh.close();
  });

  it('counts as woken when more announcements came than are remembered', async () => {
    const waiters = new LocalWaiters(subscription);
    const since = waiters.announcements;
    for (let i = 0; i < 1_000; i += 1) waiters.wakeOne(`key-${i}`);
    const late = waiters.wakeup('k', 'owner-1', since);
    expect(await outcome(late.wait(60_000, new AbortController().signal))).toBe('woken');
    late.close();
  });
});

describe('length-prefixed announcement ids', () => {
  it('round-trip, and malformed messages are refused', () => {
    const id = 'a:b:c';
    expect(splitLengthPrefixed(`${lengthPrefixed(id)}fencelock:lock:{k}`)).toEqual({ id, rest: 'fencelock:lock:{k}' });
    expect(splitLengthPrefixed(`${lengthPrefixed('')}key`)).toEqual({ id: '', rest: 'key' });
    expect(splitLengthPrefixed('fencelock:lock:{k}')).toBeUndefined();
    expect(splitLengthPrefixed('99:short')).toBeUndefined();
    expect(splitLengthPrefixed(':x')).toBeUndefined();
    // Lengths count UTF-8 bytes, as Lua's # does.
    const wide = 'é€😀';
    expect(lengthPrefixed(wide)).toBe(`9:${wide}`);
    expect(splitLengthPrefixed(`9:${wide}key`)).toEqual({ id: wide, rest: 'key' });
  });
});

describe('LocalWaiters, direct grants', () => {
  it('hands a grant to the waiter it names, once, and to no other waiter of the key', async () => {
    const { waiters, first, second, controller, firstWait, secondWait } = twoWaiters();
    waiters.wakeOne('k', 'owner-2', { attempt: 3, token: '42' });
    expect(await secondWait).toBe('woken');
    expect(second.takeGrant()).toEqual({ attempt: 3, token: '42' });
    expect(second.takeGrant()).toBeUndefined();
    expect(first.takeGrant()).toBeUndefined();
    controller.abort(new Error('end of test'));
    expect(await firstWait).toBe('aborted');
    first.close();
    second.close();
  });

  it('keeps a grant announced between the first attempt and the wait for the waiter it names', async () => {
    const waiters = new LocalWaiters(subscription);
    const since = waiters.announcements;
    waiters.wakeOne('k', 'owner-elsewhere', { attempt: 1, token: '7' });
    waiters.wakeOne('k', 'owner-1', { attempt: 1, token: '8' });
    const late = waiters.wakeup('k', 'owner-1', since);
    expect(await outcome(late.wait(60_000, new AbortController().signal))).toBe('woken');
    expect(late.takeGrant()).toEqual({ attempt: 1, token: '8' });
    late.close();
  });
});

describe('direct-grant announcements', () => {
  it('reads the owner id, the attempt, the token and the lock key, whatever the key holds', () => {
    const key = 'a:b=1:2 é';
    expect(splitDirectGrant(`=${lengthPrefixed('owner-1')}12:345:${key}`)).toEqual({ ownerId: 'owner-1', attempt: 12, token: '345', lockKey: key });
  });

  it('is not fooled by a release announcement or a malformed message', () => {
    expect(splitDirectGrant(`${lengthPrefixed('owner-1')}k`)).toBeUndefined();
    expect(splitDirectGrant(`=${lengthPrefixed('owner-1')}x:345:k`)).toBeUndefined();
    expect(splitDirectGrant(`=${lengthPrefixed('owner-1')}12:0345:k`)).toBeUndefined();
    expect(splitDirectGrant('=99:short')).toBeUndefined();
  });
});
