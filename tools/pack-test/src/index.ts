/**
 * @fencelock/pack-test — checks the "pick a backend, npm install" path: packs the publishable
 * packages with `pnpm pack`, installs them with npm into a throwaway project outside the
 * workspace and runs a consumer there; and checks the changeset flow in a copy of the workspace.
 */
export { runProcess, runChecked, ProcessError, OUTPUT_LIMIT_CHARS } from './run-process.js';
export type { RunProcessOptions, RunProcessResult, ProcessErrorCode } from './run-process.js';
export { REPO_ROOT, DEPENDENCY_FIELDS, readManifest, packageDir, assertBuilt, isInside, workspacePackages } from './workspace.js';
export type { PackageManifest } from './workspace.js';
export { packPackage, readPackedManifest, workspaceRanges, PACK_TIMEOUT_MS } from './pack-package.js';
export type { PackedPackage } from './pack-package.js';
export { consumerEnv } from './consumer-env.js';
export { createConsumerProject, NPM_INSTALL_TIMEOUT_MS } from './consumer-project.js';
export type { ConsumerProject, ConsumerProjectOptions } from './consumer-project.js';
export { parseScriptOutput } from './script-output.js';
export { createChangesetSandbox, CHANGESET_TIMEOUT_MS } from './changeset-sandbox.js';
export type { BumpType, ChangesetSandbox, ChangesetSandboxOptions, PlannedRelease, ReleasePlan } from './changeset-sandbox.js';
