import { describe } from 'vitest';
import { registerBadInputCases } from './cases/bad-input.js';
import { registerBasicCases } from './cases/basic.js';
import { registerContentionCases } from './cases/contention.js';
import { registerElectionCases } from './cases/election.js';
import { registerExpiryCases } from './cases/expiry.js';
import { registerFaultCases } from './cases/faults.js';
import { registerFencingCases } from './cases/fencing.js';
import { registerLifecycleCases } from './cases/lifecycle.js';
import { registerLoadCases } from './cases/load.js';
import { registerReadWriteCases } from './cases/read-write.js';
import { registerReleaseCases } from './cases/release.js';
import { registerSemaphoreCases } from './cases/semaphore.js';
import { createSuiteContext } from './context.js';
import type { ConformanceOptions } from './options.js';

/**
 * Registers the fencelock conformance suite for one provider, as vitest tests:
 *
 * ```ts
 * import { describeLockProvider } from '@fencelock/conformance';
 * describeLockProvider({ name: 'my backend', createProvider: () => createMyProvider(options) });
 * ```
 *
 * What it asserts is decided by the provider's own capabilities: a capability the provider lacks is
 * checked for its honest refusal, not skipped. Fault cases that need a missing harness power are
 * registered as skipped, with the power in their name.
 */
export function describeLockProvider(options: ConformanceOptions): void {
  describe(`fencelock conformance: ${options.name}`, () => {
    const ctx = createSuiteContext(options);
    registerBasicCases(ctx);
    registerContentionCases(ctx);
    registerLoadCases(ctx);
    registerExpiryCases(ctx);
    registerFencingCases(ctx);
    registerReadWriteCases(ctx);
    registerLifecycleCases(ctx);
    registerBadInputCases(ctx);
    registerFaultCases(ctx);
    registerReleaseCases(ctx);
    registerSemaphoreCases(ctx);
    registerElectionCases(ctx);
  });
}
