export { describeLockProvider } from './describe-lock-provider.js';
export type { ConformanceHarness, ConformanceOptions } from './options.js';
export { abortedWithin, freezeThread, nextEvent, within } from './context.js';
