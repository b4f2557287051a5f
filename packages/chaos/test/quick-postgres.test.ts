// The quick chaos profile against postgres (see quick-profile.ts and docs/SAFETY.md).
import { describe } from 'vitest';
import { quickProfile } from './quick-profile.js';

describe('chaos quick profile: postgres', () => quickProfile('postgres'));
