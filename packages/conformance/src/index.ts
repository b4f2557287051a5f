export { describeLockProvider } from './describe-lock-provider.js';
export { CONFORMANCE_SECTIONS } from './options.js';
export type { BackendOutage, ConformanceHarness, ConformanceOptions, ConformanceSection, HealOutage } from './options.js';
export { abortedWithin, freezeThread, isPending, nextEvent, within } from './context.js';
export { abortWhileWaiting, countAbortControllers } from './abort-while-waiting.js';
export type { AbortWhileWaitingOptions } from './abort-while-waiting.js';
export { observeUntil } from './cases/election.js';
export { ReportLog, expectForbidden, leakedSecrets } from './security-checks.js';
