/**
 * Many acquires at once on one provider: the session wakes every caller waiting for the connection
 * from its one client listener, so 64 concurrent acquires on a provider that is still connecting
 * add no listener per acquire (Node warns past 10 listeners of one event on one emitter).
 */
import { randomUUID } from 'node:crypto';
import { topology } from '@fencelock/test-infra';
import { afterEach, expect, it } from 'vitest';
import { type ZooKeeperLockProvider, createZooKeeperLockProvider } from '../src/index.js';

const CONCURRENT = 64;
let provider: ZooKeeperLockProvider | undefined;
const warnings: Error[] = [];
const onWarning = (warning: Error): void => {
  if (warning.name === 'MaxListenersExceededWarning') warnings.push(warning);
};

afterEach(async () => {
  process.off('warning', onWarning);
  await provider?.close();
});

it(`${CONCURRENT} acquires at once on a provider that is still connecting raise no MaxListenersExceededWarning`, async () => {
  process.on('warning', onWarning);
  provider = createZooKeeperLockProvider({ connectionString: topology().zkConnectionString, root: '/fencelock-many' });
  const run = randomUUID();
  // All issued in the same tick, before the client has connected.
  const handles = await Promise.all(Array.from({ length: CONCURRENT }, (_, index) => provider?.acquire(`many:${run}:${index}`)));
  expect(handles.every((handle) => handle?.isHeld() === true)).toBe(true);
  expect(new Set(handles.map((handle) => handle?.fencingToken)).size).toBe(CONCURRENT);
  await Promise.all(handles.map((handle) => handle?.release()));
  // Node emits warnings on the next tick.
  await new Promise((resolve) => setImmediate(resolve));
  expect(warnings.map((warning) => warning.message)).toEqual([]);
});
