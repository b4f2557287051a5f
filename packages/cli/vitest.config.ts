import { WAITING_SUITE_WORKERS, fencelockVitestConfig } from '../../vitest.shared.js';

// The end-to-end tests spawn the bin, built once by the global setup.
export default fencelockVitestConfig({ maxWorkers: WAITING_SUITE_WORKERS, testTimeout: 60_000, globalSetup: ['test/global-setup.ts'] });
