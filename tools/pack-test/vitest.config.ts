import { fencelockVitestConfig } from '../../vitest.shared.js';

export default fencelockVitestConfig();
