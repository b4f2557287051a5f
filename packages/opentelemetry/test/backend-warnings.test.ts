import { createLockProvider } from '@fencelock/core/adapter';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AttributeName, MetricName, instrumentLockProvider } from '../src/index.js';
import { nextEvent } from './support/events.js';
import { OtelHarness } from './support/otel-harness.js';
import { TEST_WARNING as WARNING, warningBackend } from './support/warning-backend.js';

describe('backend warnings', () => {
  let otel: OtelHarness;
  beforeEach(() => {
    otel = new OtelHarness();
  });
  afterEach(() => otel.shutdown());

  it('counts each warning of the configuration check once, by backend and code', async () => {
    const provider = createLockProvider(warningBackend());
    using _ = instrumentLockProvider(provider, { meterProvider: otel.meterProvider });
    await nextEvent(provider, 'backend-warning', () => true, 5_000);
    // Asked again: the same warning is not counted twice.
    expect(await provider.checkBackend?.()).toEqual([WARNING]);
    const metrics = await otel.collect();
    expect(
      metrics.sum(MetricName.BACKEND_WARNINGS, { [AttributeName.BACKEND]: 'checked', [AttributeName.WARNING_CODE]: WARNING.code }),
    ).toBe(1);
    await provider.close();
  });
});
