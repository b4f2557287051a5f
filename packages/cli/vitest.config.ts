import { fencelockVitestConfig } from '../../vitest.shared.js';

// The end-to-end tests spawn the bin, built once by the global setup.
export default fencelockVitestConfig({ testTimeout: 60_000, globalSetup: ['test/global-setup.ts'] });
