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
import type { SuiteContext } from './context.js';
import { CONFORMANCE_SECTIONS, type ConformanceOptions, type ConformanceSection } from './options.js';

const SECTIONS: Readonly<Record<ConformanceSection, (ctx: SuiteContext) => void>> = {
  basics: registerBasicCases,
  contention: registerContentionCases,
  load: registerLoadCases,
  expiry: registerExpiryCases,
  fencing: registerFencingCases,
  'read-write': registerReadWriteCases,
  lifecycle: registerLifecycleCases,
  'bad-input': registerBadInputCases,
  faults: registerFaultCases,
  release: registerReleaseCases,
  semaphore: registerSemaphoreCases,
  election: registerElectionCases,
};

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
  const sections = options.sections ?? CONFORMANCE_SECTIONS;
  const unknown = sections.filter((section) => !CONFORMANCE_SECTIONS.includes(section));
  if (unknown.length > 0 || sections.length === 0) {
    throw new TypeError(`options.sections must name sections of the suite (${CONFORMANCE_SECTIONS.join(', ')}); got ${JSON.stringify(sections)}`);
  }
  describe(`fencelock conformance: ${options.name}`, () => {
    const ctx = createSuiteContext(options);
    // In the suite's own order, whatever the order given.
    for (const section of CONFORMANCE_SECTIONS) if (sections.includes(section)) SECTIONS[section](ctx);
  });
}
