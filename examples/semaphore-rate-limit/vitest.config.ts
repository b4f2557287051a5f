import { fencelockVitestConfig } from '../../vitest.shared.js';

export default fencelockVitestConfig({ testTimeout: 60_000 });
