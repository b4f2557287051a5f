import { isChildOfThisProcess, killChildLeftovers, topology, waitFor } from '@fencelock/test-infra';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeApi, TOKEN_HEADER } from '../src/fake-api.js';
import { runRateLimited } from '../src/run-rate-limited.js';

// Worker process ids of the current test.
const started: number[] = [];
afterEach(() => killChildLeftovers(started.splice(0)));

describe('the fake API', () => {
  it('refuses a request over its cap with 429, and one without a token with 400', async () => {
    let open = (): void => undefined;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const api = await startFakeApi({ cap: 2, latencyMs: 0, answerWhen: () => gate });
    try {
      const call = (token: string | undefined) => fetch(`${api.url}/v1/quote`, { headers: token === undefined ? {} : { [TOKEN_HEADER]: token } });
      const held = [call('1'), call('2')];
      await waitFor(async () => (api.inFlight() === 2 ? true : undefined), { what: 'two requests in flight', timeoutMs: 10_000 });
      expect((await call('3')).status).toBe(429);
      expect((await call(undefined)).status).toBe(400);
      open();
      expect((await Promise.all(held)).map((response) => response.status)).toEqual([200, 200]);
      expect(api.refused()).toBe(2);
      expect(api.maxInFlight()).toBe(2);
      expect(api.calls().map((entry) => entry.token)).toEqual([1n, 2n]);
    } finally {
      open();
      await api.close();
    }
  });
});

describe('semaphore-rate-limit example', () => {
  it('four worker processes calling at once never put more than the cap in flight, and none is refused', async () => {
    const lines: string[] = [];
    const result = await runRateLimited({
      redisUrl: topology().redisUrl,
      workers: 4,
      callsPerWorker: 4,
      cap: 2,
      print: (line) => lines.push(line),
      onWorkerStarted: (pid) => started.push(pid),
    });

    // What the API itself counted: never over the cap, nothing refused, every call answered.
    expect(result.api.maxInFlight).toBeLessThanOrEqual(2);
    expect(result.api.refused).toBe(0);
    expect(result.api.calls).toHaveLength(16);
    expect(result.reports.map((report) => report.ok)).toEqual([4, 4, 4, 4]);
    // Four workers for two permits: some calls had to wait for one.
    expect(result.reports.reduce((sum, report) => sum + report.waited, 0)).toBeGreaterThan(0);
    // Each call ran under its own permit, with its own fencing token.
    const tokens = result.reports.flatMap((report) => report.tokens.map(BigInt));
    expect(new Set(tokens).size).toBe(16);
    expect(new Set(result.api.calls.map((call) => call.token))).toEqual(new Set(tokens));
    // Every worker process is gone once runRateLimited returns.
    expect(started).toHaveLength(4);
    expect(started.filter(isChildOfThisProcess)).toEqual([]);
    expect(lines.at(-1)).toContain('refused 0');
  });
});
