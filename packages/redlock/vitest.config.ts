import { WAITING_SUITE_WORKERS, fencelockVitestConfig } from '../../vitest.shared.js';

export default fencelockVitestConfig({ maxWorkers: WAITING_SUITE_WORKERS, testTimeout: 60_000 });
