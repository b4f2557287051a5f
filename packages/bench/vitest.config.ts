import { fencelockVitestConfig } from '../../vitest.shared.js';

export default fencelockVitestConfig({ testTimeout: 120_000 });
