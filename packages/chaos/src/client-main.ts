/**
 * A client process of the chaos harness (forked by the parent with `--import tsx`). It builds one
 * provider for its backend, runs its seeded workload, and sends every recorded event to the parent
 * over IPC; the parent writes the history. It stops on `stop`, when its time is up, or when the
 * parent goes away — never later than its duration + 30 s.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createFencedStoreClient, createLockRecorder, type HistoryEventInput } from '@fencelock/history-checker';
import { BACKEND_TRAITS } from './backend-traits.js';
import { createChaosProvider } from './chaos-provider.js';
import type { ClientMessage, ClientStartConfig, ParentMessage } from './protocol.js';
import { createRng } from './rng.js';
import { runWorkload } from './workload.js';

const STOP_GRACE_MS = 30_000;
const CLOSE_TIMEOUT_MS = 5_000;

function send(message: ClientMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected || process.send === undefined) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

async function main(): Promise<void> {
  const config = JSON.parse(process.argv[2] ?? '{}') as ClientStartConfig;
  const stop = new AbortController();
  const hardExit = setTimeout(() => process.exit(3), config.durationMs + STOP_GRACE_MS);
  hardExit.unref();
  process.on('message', (message: ParentMessage) => {
    if (message.type === 'stop') stop.abort();
  });
  process.on('disconnect', () => {
    stop.abort();
    setTimeout(() => process.exit(4), 2_000).unref();
  });

  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const sink = (event: HistoryEventInput): void => void send({ type: 'event', event });
  const provider = await createChaosProvider(config.backend);
  const recorder = createLockRecorder({ proc: config.proc, sink });
  const unwatch = recorder.watch(provider);
  void send({ type: 'ready' });
  let operations = 0;
  try {
    operations = await runWorkload({
      proc: config.proc,
      provider,
      recorder,
      sink,
      store: createFencedStoreClient(config.storeUrl, { timeoutMs: 2_000 }),
      rng: createRng(config.seed),
      keys: config.keys,
      probeKey: config.probeKey,
      ttlMs: config.backend.ttlMs,
      session: BACKEND_TRAITS[config.backend.backend].session,
      params: config.workload,
      signal: stop.signal,
      endAt: performance.now() + config.durationMs,
    });
  } finally {
    await Promise.race([provider.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, CLOSE_TIMEOUT_MS).unref())]);
    unwatch();
  }
  loopDelay.disable();
  await send({ type: 'done', operations, loopDelayMaxMs: loopDelay.max / 1e6 });
}

main().then(
  () => process.exit(0),
  async (error: unknown) => {
    await send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    process.exit(1);
  },
);
