#!/usr/bin/env node
// Launcher for the test-infra CLI: works before any build by compiling the TypeScript
// sources on the fly with tsx (a devDependency of this package and of the repo root).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
