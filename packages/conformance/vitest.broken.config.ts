import { fencelockVitestConfig } from '../../vitest.shared.js';

// Runs the suite against the deliberately broken providers; only the self-test starts it.
export default fencelockVitestConfig({ include: ['test/broken/*.fixture.ts'] });
