/**
 * The end of a session reaches every waiter, including one that subscribes after it. After a pause
 * longer than the session (a GC pause), the deadline timer can end the session before the reply to a
 * waiter's watching read is read from the socket; that waiter then subscribes to a session that has
 * already ended and, without this, would sleep until its own deadline instead of queueing again.
 */
import { within } from '@fencelock/conformance';
import { topology } from '@fencelock/test-infra';
import { expect, it } from 'vitest';
import { resolveOptions, sessionTiming } from '../src/options.js';
import { ZooKeeperSession } from '../src/zookeeper-session.js';

const { zkConnectionString } = topology();

it('a listener subscribed after the session ended is woken, and one unsubscribed first is not', async () => {
  const options = resolveOptions({ connectionString: zkConnectionString, sessionTimeoutMs: 4_000 });
  const session = ZooKeeperSession.open(zkConnectionString, 4_000, options.spinDelayMs, {
    timingFor: (timeoutMs) => sessionTiming(options, timeoutMs),
    access: options.access,
  });
  await session.ready(new AbortController().signal);
  await session.close();
  expect(session.alive).toBe(false);
  const woken = new Promise<void>((resolve) => session.onChange(resolve));
  let cancelledWoken = false;
  const off = session.onChange(() => {
    cancelledWoken = true;
  });
  off();
  await within(woken, 5_000, 'the late listener to be woken');
  expect(cancelledWoken).toBe(false);
});
