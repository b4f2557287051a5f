export { describeLockProvider } from './describe-lock-provider.js';
export type { ConformanceHarness, ConformanceOptions } from './options.js';
export { abortedWithin, freezeThread, isPending, nextEvent, within } from './context.js';
