/**
 * @fencelock/postgres packed and installed with npm outside the workspace, next to `pg` from the
 * registry (its peer dependency, as the README says): ESM and CommonJS consumers acquire, refuse a
 * rival and release against the shared PostgreSQL, and TypeScript consumers type-check under
 * node16 and bundler resolution.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { topology } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsumerProject, type ConsumerProject } from '../src/consumer-project.js';
import { packPackage, readPackedManifest, workspaceRanges, type PackedPackage } from '../src/pack-package.js';
import { parseScriptOutput } from '../src/script-output.js';
import { assertBuilt, REPO_ROOT } from '../src/workspace.js';

const FIXTURES = fileURLToPath(new URL('../fixtures-postgres/', import.meta.url));
const INSTALLED = ['@fencelock/core', '@fencelock/postgres'] as const;
// What the postgres README tells users to install next to it, from the npm registry.
const REGISTRY_PACKAGES = ['pg@^8.11.0', '@types/pg@^8.11.0', '@types/node@^20'];
const SCRIPT_TIMEOUT_MS = 30_000;
const TSC_TIMEOUT_MS = 180_000;
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

describe('@fencelock/postgres, packed and installed with npm outside the workspace', () => {
  let packDir: string | undefined;
  let project: ConsumerProject | undefined;
  const packed = new Map<string, PackedPackage>();

  const consumer = (): ConsumerProject => {
    if (project === undefined) throw new Error('the consumer project was not created');
    return project;
  };

  beforeAll(async () => {
    for (const name of INSTALLED) assertBuilt(name);
    packDir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-pack-postgres-'));
    for (const name of INSTALLED) packed.set(name, await packPackage(name, packDir));
    project = await createConsumerProject({
      tarballs: INSTALLED.map((name) => packed.get(name)?.tarball ?? ''),
      registryPackages: REGISTRY_PACKAGES,
      filesFrom: FIXTURES,
    });
  }, 300_000);

  afterAll(async () => {
    await project?.remove();
    if (packDir !== undefined) await rm(packDir, { recursive: true, force: true });
  });

  it('ships the ESM and CJS builds with their types, pg as a peer, and no workspace: ranges', async () => {
    const tarball = packed.get('@fencelock/postgres');
    if (tarball === undefined) throw new Error('@fencelock/postgres was not packed');
    expect(tarball.files).toEqual(expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']));
    expect(tarball.files.filter((file) => file.endsWith('.test.ts'))).toEqual([]);
    const manifest = await readPackedManifest(tarball.tarball);
    expect(workspaceRanges(manifest)).toEqual([]);
    expect(manifest.peerDependencies?.['pg']).toEqual(expect.any(String));
    expect(manifest.peerDependencies?.['@fencelock/core']).toBe(`^${packed.get('@fencelock/core')?.version ?? ''}`);
    expect(manifest.dependencies?.['pg']).toBeUndefined();
  });

  it('resolves the package from the consumer project, to the build for each module system', async () => {
    const required = await consumer().run(process.execPath, ['-p', "require.resolve('@fencelock/postgres')"], SCRIPT_TIMEOUT_MS);
    expect(required.stdout.trim()).toBe(path.join(consumer().dir, 'node_modules/@fencelock/postgres/dist/index.cjs'));
    const imported = await consumer().run(
      process.execPath,
      ['--input-type=module', '-e', "import { fileURLToPath } from 'node:url'; console.log(fileURLToPath(import.meta.resolve('@fencelock/postgres')))"],
      SCRIPT_TIMEOUT_MS,
    );
    expect(imported.stdout.trim()).toBe(path.join(consumer().dir, 'node_modules/@fencelock/postgres/dist/index.js'));
  });

  it(
    'acquires, refuses a rival, prints the fencing token and releases, from an ES module and from CommonJS',
    async () => {
      const { postgresUrl } = topology();
      const key = `pack-test:${randomUUID()}`;
      const fromEsm = await runConsumer('postgres.mjs', postgresUrl, key);
      const fromCjs = await runConsumer('postgres.cjs', postgresUrl, key);
      // A durable per-key counter: the second acquisition of the key gets the next token.
      expect(BigInt(fromCjs.token ?? '0')).toBe(BigInt(fromEsm.token ?? '0') + 1n);
    },
    3 * SCRIPT_TIMEOUT_MS,
  );

  it(
    'type-checks TypeScript consumers under node16 (ESM and CJS) and bundler resolution',
    async () => {
      const configs = ['tsconfig.node16.json', 'tsconfig.bundler.json'];
      const results = await Promise.all(configs.map((config) => consumer().node(TSC, ['-p', config], TSC_TIMEOUT_MS)));
      expect(results.map((result, index) => ({ config: configs[index], code: result.code, output: result.stdout + result.stderr }))).toEqual(
        configs.map((config) => ({ config, code: 0, output: '' })),
      );
    },
    TSC_TIMEOUT_MS + 10_000,
  );

  /** Runs a consumer script to its end and checks what every run must print. */
  async function runConsumer(script: string, connection: string, key: string): Promise<Record<string, string>> {
    const result = await consumer().node(script, [connection, key], SCRIPT_TIMEOUT_MS);
    // Exiting 0 on its own also proves close() leaves nothing (the session, the LISTEN) that keeps Node running.
    expect({ script, code: result.code, timedOut: result.timedOut, stderr: result.stderr }).toEqual({ script, code: 0, timedOut: false, stderr: '' });
    const values = parseScriptOutput(result.stdout);
    expect(values, script).toEqual({
      token: expect.stringMatching(/^[1-9]\d*$/),
      held: 'true',
      rival: 'refused',
      error: 'LOCK_INVALID_ARGUMENT',
      lockError: 'true',
      released: 'true',
    });
    return values;
  }
});
