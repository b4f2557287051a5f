import { once } from 'node:events';
import net from 'node:net';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import {
  LockError,
  LockErrorCode,
  NEVER_ABORTED,
  RequestTimeoutError,
  SessionKeeper,
  driftMarginMs,
  monotonicNow,
  readAdapterOptions,
  settledBy,
  validateRequestTimeoutMs,
  validityDeadline,
  waitFor,
  withRequestTimeout,
  type GrantObserver,
} from '../src/adapter.js';

function recorder(): GrantObserver & { readonly log: string[]; lostError?: LockError } {
  const log: string[] = [];
  const member: GrantObserver & { log: string[]; lostError?: LockError } = {
    log,
    lost: (error) => {
      member.lostError = error;
      log.push('lost');
    },
    uncertain: () => log.push('uncertain'),
    recovered: () => log.push('recovered'),
    renewed: () => log.push('renewed'),
  };
  return member;
}

function until(check: () => boolean, ms = 5_000): Promise<void> {
  const start = monotonicNow();
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (check()) return resolve();
      if (monotonicNow() - start > ms) return reject(new Error('condition not met in time'));
      setTimeout(poll, 5);
    };
    poll();
  });
}

describe('drift', () => {
  it('is one rule: 1 % of the TTL plus 2 ms, from the send time', () => {
    expect(driftMarginMs(10_000)).toBe(102);
    expect(validityDeadline(1_000, 10_000)).toBe(1_000 + 10_000 - 102);
    expect(validityDeadline(0, 10_000, 0.05)).toBe(10_000 - 502);
  });
});

/** A TCP echo server on loopback in a worker thread: it answers while this thread is blocked. */
async function echoServer(): Promise<{ port: number; close: () => Promise<number> }> {
  const worker = new Worker(
    `const net = require('node:net');
     const { parentPort } = require('node:worker_threads');
     const server = net.createServer((socket) => socket.on('data', (data) => socket.write(data)));
     server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
    { eval: true },
  );
  const port = await new Promise<number>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return { port, close: () => worker.terminate() };
}

/** Blocks this thread for `ms`, as a GC pause or a stopped process would. */
function freezeThread(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe('withRequestTimeout', () => {
  it('a reply that arrived while the process was paused wins over the timeout that ran out meanwhile', async () => {
    const server = await echoServer();
    const socket = net.connect(server.port, '127.0.0.1');
    try {
      await once(socket, 'connect');
      const reply = once(socket, 'data').then(([data]) => String(data));
      socket.write('pong');
      const bounded = withRequestTimeout(reply, 20, 'echo');
      // The echo comes back during the pause; the 20 ms bound runs out during it too.
      freezeThread(300);
      await expect(bounded).resolves.toBe('pong');
    } finally {
      socket.destroy();
      await server.close();
    }
  });


  it('rejects with RequestTimeoutError when no reply comes, and passes replies and errors through', async () => {
    await expect(withRequestTimeout(new Promise(() => undefined), 20, 'pinging')).rejects.toBeInstanceOf(RequestTimeoutError);
    await expect(withRequestTimeout(Promise.resolve(7), 20, 'x')).resolves.toBe(7);
    await expect(withRequestTimeout(Promise.reject(new Error('boom')), 20, 'x')).rejects.toThrow('boom');
  });
});

describe('waitFor', () => {
  it('ends at the deadline, never before it', async () => {
    const deadline = monotonicNow() + 30;
    await expect(waitFor({ deadline })).resolves.toEqual({ woken: false });
    expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
  });

  it('ends when woken, and unsubscribes', async () => {
    let wake: ((value: number) => void) | undefined;
    let unsubscribed = 0;
    const waiting = waitFor<number>({
      deadline: Number.POSITIVE_INFINITY,
      until: (w) => {
        wake = w;
        return () => (unsubscribed += 1);
      },
    });
    wake!(5);
    await expect(waiting).resolves.toEqual({ woken: true, value: 5 });
    expect(unsubscribed).toBe(1);
  });

  it('with NEVER_ABORTED, ends at its deadline like a wait without a signal', async () => {
    expect(NEVER_ABORTED.aborted).toBe(false);
    const deadline = monotonicNow() + 20;
    await expect(waitFor({ deadline, signal: NEVER_ABORTED })).resolves.toEqual({ woken: false });
    expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
    expect(Object.isFrozen(NEVER_ABORTED)).toBe(true);
  });

  it('rejects with the abort reason and removes its listener', async () => {
    const controller = new AbortController();
    let unsubscribed = 0;
    const waiting = waitFor({ deadline: monotonicNow() + 60_000, signal: controller.signal, until: () => () => (unsubscribed += 1) });
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
    expect(unsubscribed).toBe(1);
    await expect(waitFor({ deadline: Number.POSITIVE_INFINITY, signal: controller.signal })).rejects.toThrow('stop');
  });
});

describe('settledBy', () => {
  it('resolves true as soon as the work settles, fulfilled or rejected, before the deadline', async () => {
    const far = monotonicNow() + 60_000;
    let finish: (() => void) | undefined;
    const work = new Promise<void>((resolve) => (finish = resolve));
    const waiting = settledBy(work, far);
    finish!();
    await expect(waiting).resolves.toBe(true);
    await expect(settledBy(Promise.reject(new Error('refused')), far)).resolves.toBe(true);
    expect(monotonicNow()).toBeLessThan(far);
  });

  it('resolves false at the deadline while the work goes on, and at once for a deadline passed', async () => {
    const deadline = monotonicNow() + 30;
    await expect(settledBy(new Promise(() => undefined), deadline)).resolves.toBe(false);
    expect(monotonicNow()).toBeGreaterThanOrEqual(deadline);
    await expect(settledBy(Promise.resolve(), monotonicNow() - 1)).resolves.toBe(false);
  });
});

describe('adapter options', () => {
  it('refuses unknown options and requests that do not fit in the TTL', () => {
    expect(() => readAdapterOptions({ requestTimeoutMs: 1, reqestTimeoutMs: 2 } as { requestTimeoutMs: number }, ['requestTimeoutMs'])).toThrow(
      /unknown option "reqestTimeoutMs"/,
    );
    expect(() => readAdapterOptions('x' as unknown as object, [])).toThrow(TypeError);
    expect(validateRequestTimeoutMs(1_000, 3_000, 'defaultTtlMs')).toBe(1_000);
    expect(() => validateRequestTimeoutMs(1_001, 3_000, 'defaultTtlMs')).toThrow(RangeError);
  });
});

describe('SessionKeeper', () => {
  it('keeps alive at a third of the GRANTED TTL and renews validity from the send time', async () => {
    const sends: number[] = [];
    const opened = monotonicNow();
    const keeper = new SessionKeeper({
      name: 'test session',
      ttlMs: 300,
      openedAt: opened,
      requestTimeoutMs: 1_000,
      keepAlive: async () => {
        sends.push(monotonicNow());
        return 300;
      },
    });
    const member = recorder();
    keeper.join(member);
    await until(() => sends.length >= 2);
    // Not before a third of the TTL. Timers run on libuv's millisecond clock, which may call them up
    // to a millisecond before performance.now() reaches the due time: that much is allowed for.
    expect(sends[0]! - opened).toBeGreaterThanOrEqual(100 - 2);
    expect(member.log).toContain('renewed');
    // Counted from the send time of the LAST keepalive (taken just before the function runs): not
    // later than that send, and later than anything counted from the keepalive before it.
    const lastSend = sends[sends.length - 1]!;
    expect(keeper.validUntil).toBeLessThanOrEqual(validityDeadline(lastSend, 300));
    expect(keeper.validUntil).toBeGreaterThan(validityDeadline(sends[sends.length - 2]!, 300));
    keeper.close();
    expect(member.log).not.toContain('lost');
  });

  it('goes uncertain on a failed keepalive, recovers on the next answer, and is lost at its own deadline when silent', async () => {
    let mode: 'fail' | 'ok' | 'hang' = 'fail';
    const keeper = new SessionKeeper({
      name: 'test session',
      ttlMs: 600,
      openedAt: monotonicNow(),
      requestTimeoutMs: 1_000,
      keepAlive: (timeoutMs) =>
        mode === 'ok'
          ? Promise.resolve(undefined)
          : mode === 'fail'
            ? Promise.reject(new Error('unreachable'))
            : withRequestTimeout(new Promise<undefined>(() => undefined), timeoutMs, 'keepalive'),
    });
    const member = recorder();
    keeper.join(member);
    await until(() => member.log.includes('uncertain'));
    mode = 'ok';
    await until(() => member.log.includes('recovered'));
    mode = 'hang';
    await until(() => member.log.includes('lost'));
    expect(monotonicNow()).toBeGreaterThanOrEqual(keeper.validUntil);
    expect(member.lostError).toMatchObject({ code: LockErrorCode.LOST, reason: 'session-lost' });
    expect(keeper.alive).toBe(false);
    const late = recorder();
    keeper.join(late);
    expect(late.log).toEqual(['lost']);
  });

  it('stays alive on a backend that answers every keepalive slowly: a slow answer still renews from its send time', async () => {
    const ttlMs = 1_200;
    const timeouts: number[] = [];
    let answered = 0;
    const keeper = new SessionKeeper({
      name: 'test session',
      ttlMs,
      openedAt: monotonicNow(),
      requestTimeoutMs: 5_000,
      // Each answer takes longer than a sixth of the TTL, well within the validity that remains.
      keepAlive: (timeoutMs) => {
        timeouts.push(timeoutMs);
        return withRequestTimeout(
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ttlMs / 4)),
          timeoutMs,
          'keepalive',
        ).then((value) => {
          answered += 1;
          return value;
        });
      },
    });
    const member = recorder();
    keeper.join(member);
    await until(() => answered >= 5 || member.log.includes('lost'), 10_000);
    expect(member.log).not.toContain('lost');
    expect(keeper.alive).toBe(true);
    // A keepalive may take the validity that remains, not a fixed slice of the TTL.
    expect(timeouts[0]!).toBeGreaterThan(ttlMs / 2);
    keeper.close();
  });

  it('sends another keepalive beside one that hangs, without abandoning it, and recovers on its answer', async () => {
    let calls = 0;
    let firstSettled = false;
    let inFlightAtSecond: boolean | undefined;
    const keeper = new SessionKeeper({
      name: 'test session',
      ttlMs: 1_200,
      openedAt: monotonicNow(),
      requestTimeoutMs: 5_000,
      keepAlive: (timeoutMs) => {
        calls += 1;
        if (calls === 1) {
          return withRequestTimeout(new Promise<undefined>(() => undefined), timeoutMs, 'keepalive').finally(() => {
            firstSettled = true;
          });
        }
        inFlightAtSecond ??= !firstSettled;
        return Promise.resolve(undefined);
      },
    });
    const member = recorder();
    keeper.join(member);
    await until(() => member.log.includes('recovered') || member.log.includes('lost'));
    // The hung one was still waiting for its answer when the second went out: a hedge, not a retry.
    expect(inFlightAtSecond).toBe(true);
    expect(member.log.slice(0, 2)).toEqual(['uncertain', 'renewed']);
    expect(member.log).toContain('recovered');
    expect(keeper.alive).toBe(true);
    keeper.close();
  });

  it('is lost at once when the backend says the session is gone', async () => {
    const keeper = new SessionKeeper({
      name: 'test session',
      ttlMs: 60_000,
      openedAt: monotonicNow(),
      requestTimeoutMs: 1_000,
      keepAlive: async () => {
        throw new LockError(LockErrorCode.LOST, 'lease not found', { reason: 'session-lost' });
      },
    });
    const member = recorder();
    keeper.join(member);
    await expect(keeper.keepAliveNow()).rejects.toMatchObject({ code: LockErrorCode.LOST });
    expect(member.log).toEqual(['lost']);
  });
});
