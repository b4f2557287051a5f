// The quick chaos profile against redis (see quick-profile.ts and docs/SAFETY.md).
import { describe } from 'vitest';
import { quickProfile } from './quick-profile.js';

describe('chaos quick profile: redis', () => quickProfile('redis'));
