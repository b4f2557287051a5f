import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createChangesetSandbox, type ChangesetSandbox, type ReleasePlan } from '../src/changeset-sandbox.js';
import { readManifest, REPO_ROOT } from '../src/workspace.js';

const CORE = '@fencelock/core';
const CONFORMANCE = '@fencelock/conformance';

/** The plan's new version for a package, or `undefined` when the plan leaves it alone. */
function plannedVersion(plan: ReleasePlan, name: string): string | undefined {
  const release = plan.releases.find((candidate) => candidate.name === name);
  return release === undefined || release.type === 'none' ? undefined : release.newVersion;
}

function nextPatch(version: string): string {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (match === null) throw new Error(`not a plain x.y.z version: ${version}`);
  return `${match[1]}.${match[2]}.${Number(match[3]) + 1}`;
}

// Every case works on a copy of the manifests in the OS temp dir: the repository is never versioned.
describe('the changeset flow', () => {
  let sandbox: ChangesetSandbox | undefined;
  afterEach(async () => {
    await sandbox?.remove();
    sandbox = undefined;
  });

  it('reads the pending changesets, which name workspace packages and give core and conformance one version', async () => {
    sandbox = await createChangesetSandbox({ pendingChangesets: true });
    const plan = await sandbox.status();
    for (const release of plan.releases) expect(sandbox.packages.has(release.name), release.name).toBe(true);
    expect(plannedVersion(plan, CONFORMANCE)).toBe(plannedVersion(plan, CORE));
  });

  it('versions core together with conformance when only conformance has a changeset (the fixed group)', async () => {
    const coreVersion = (await readManifest(path.join(REPO_ROOT, 'packages/core/package.json'))).version;
    const conformanceVersion = (await readManifest(path.join(REPO_ROOT, 'packages/conformance/package.json'))).version;
    expect(conformanceVersion).toBe(coreVersion);

    sandbox = await createChangesetSandbox();
    await sandbox.addChangeset('conformance-fix', { [CONFORMANCE]: 'patch' }, 'Fix a conformance case.');
    const plan = await sandbox.status();
    expect(plannedVersion(plan, CORE)).toBe(nextPatch(coreVersion));
    expect(plannedVersion(plan, CONFORMANCE)).toBe(nextPatch(coreVersion));

    await sandbox.version();
    expect(await sandbox.versionOf(CORE)).toBe(nextPatch(coreVersion));
    expect(await sandbox.versionOf(CONFORMANCE)).toBe(nextPatch(coreVersion));
  });

  it('leaves core and conformance alone when only an adapter changes', async () => {
    sandbox = await createChangesetSandbox();
    await sandbox.addChangeset('redis-fix', { '@fencelock/redis': 'patch' }, 'Fix the Redis adapter.');
    const plan = await sandbox.status();
    expect(plannedVersion(plan, '@fencelock/redis')).toBeDefined();
    expect(plannedVersion(plan, CORE)).toBeUndefined();
    expect(plannedVersion(plan, CONFORMANCE)).toBeUndefined();
  });
});
