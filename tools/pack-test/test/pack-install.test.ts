import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { redisCommand, topology } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConsumerProject, type ConsumerProject } from '../src/consumer-project.js';
import { packPackage, readPackedManifest, workspaceRanges, type PackedPackage } from '../src/pack-package.js';
import { parseScriptOutput } from '../src/script-output.js';
import { assertBuilt, DEPENDENCY_FIELDS, isInside, readManifest, REPO_ROOT, workspacePackages } from '../src/workspace.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
// Installed into the consumer project: core and two adapters (with the Redis building block they need).
const INSTALLED = ['@fencelock/core', '@fencelock/redis-shared', '@fencelock/redis', '@fencelock/etcd'] as const;
// What the adapters' READMEs tell users to install next to them, from the npm registry.
const REGISTRY_PACKAGES = ['ioredis@^5.4.0', 'etcd3@^1.1.2', '@types/node@^20'];
const SCRIPT_TIMEOUT_MS = 30_000;
const TSC_TIMEOUT_MS = 180_000;
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

describe('the packages, packed and installed with npm outside the workspace', () => {
  let packDir: string | undefined;
  let project: ConsumerProject | undefined;
  // Every publishable package (not private, under packages/), by name.
  const packed = new Map<string, PackedPackage>();
  const workspaceVersions = new Map<string, string>();

  const consumer = (): ConsumerProject => {
    if (project === undefined) throw new Error('the consumer project was not created');
    return project;
  };
  const tarball = (name: string): PackedPackage => {
    const found = packed.get(name);
    if (found === undefined) throw new Error(`${name} was not packed`);
    return found;
  };

  beforeAll(async () => {
    for (const name of INSTALLED) assertBuilt(name);
    packDir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-pack-'));
    for (const [name, folder] of await workspacePackages()) {
      const manifest = await readManifest(path.join(REPO_ROOT, folder, 'package.json'));
      workspaceVersions.set(name, manifest.version);
      if (folder.startsWith('packages/') && manifest.private !== true) {
        packed.set(name, await packPackage(name as `@fencelock/${string}`, packDir));
      }
    }
    project = await createConsumerProject({
      tarballs: INSTALLED.map((name) => tarball(name).tarball),
      registryPackages: REGISTRY_PACKAGES,
      filesFrom: FIXTURES,
    });
  }, 300_000);

  afterAll(async () => {
    await project?.remove();
    if (packDir !== undefined) await rm(packDir, { recursive: true, force: true });
  });

  it('publishes real versions instead of workspace: ranges, for every publishable package', async () => {
    expect([...packed.keys()]).toEqual(expect.arrayContaining([...INSTALLED, '@fencelock/conformance', '@fencelock/redlock']));
    for (const [name, { tarball }] of packed) {
      const manifest = await readPackedManifest(tarball);
      expect(workspaceRanges(manifest), name).toEqual([]);
      // What users install: a range on another fencelock package names the version it is
      // published with (`workspace:^` → `^0.1.0`), so it resolves to what was tested together.
      for (const field of DEPENDENCY_FIELDS.filter((candidate) => candidate !== 'devDependencies')) {
        for (const [dependency, range] of Object.entries(manifest[field] ?? {})) {
          const version = workspaceVersions.get(dependency);
          if (version === undefined) continue;
          expect([`^${version}`, `~${version}`, version], `${name} ${field}.${dependency}`).toContain(range);
        }
      }
    }
    const redis = await readPackedManifest(tarball('@fencelock/redis').tarball);
    expect(redis.peerDependencies?.['@fencelock/core']).toBe(`^${tarball('@fencelock/core').version}`);
  });

  it('ships the ESM and CJS builds with their types, and no tests', () => {
    for (const name of INSTALLED) {
      const files = tarball(name).files;
      expect(files, name).toEqual(
        expect.arrayContaining(['package.json', 'README.md', 'dist/index.js', 'dist/index.cjs', 'dist/index.d.ts', 'dist/index.d.cts']),
      );
      expect(files.filter((file) => file.endsWith('.test.ts')), name).toEqual([]);
    }
  });

  it('resolves the packages from the consumer project, to the build for each module system', async () => {
    const project = consumer();
    expect(isInside(project.dir, REPO_ROOT)).toBe(false);
    const required = await project.run(process.execPath, ['-p', "require.resolve('@fencelock/redis')"], SCRIPT_TIMEOUT_MS);
    expect(required.stdout.trim()).toBe(path.join(project.dir, 'node_modules/@fencelock/redis/dist/index.cjs'));
    const imported = await project.run(
      process.execPath,
      ['--input-type=module', '-e', "import { fileURLToPath } from 'node:url'; console.log(fileURLToPath(import.meta.resolve('@fencelock/core')))"],
      SCRIPT_TIMEOUT_MS,
    );
    expect(imported.stdout.trim()).toBe(path.join(project.dir, 'node_modules/@fencelock/core/dist/index.js'));
  });

  it(
    'Redis: acquires, prints the fencing token and releases, from an ES module and from CommonJS',
    async () => {
      const { redisUrl, servers } = topology();
      const key = `pack-test:${randomUUID()}`;
      const fromEsm = await runConsumer('redis.mjs', redisUrl, key, { cjsLockError: 'true' });
      const fromCjs = await runConsumer('redis.cjs', redisUrl, key);
      // Per-key tokens: the second acquisition of the key gets a larger one.
      expect(BigInt(fromCjs.token ?? '0')).toBeGreaterThan(BigInt(fromEsm.token ?? '0'));
      const redis = servers.redis[0];
      if (redis === undefined) throw new Error('no Redis in the topology');
      expect(await redisCommand(redis.port, ['EXISTS', key], { host: redis.host })).toBe(0);
    },
    3 * SCRIPT_TIMEOUT_MS,
  );

  it(
    'etcd: acquires, prints the fencing token and releases, from an ES module and from CommonJS',
    async () => {
      const { etcdEndpoints } = topology();
      const key = `pack-test/${randomUUID()}`;
      const fromEsm = await runConsumer('etcd.mjs', etcdEndpoints.join(','), key);
      const fromCjs = await runConsumer('etcd.cjs', etcdEndpoints.join(','), key);
      // Tokens are etcd revisions: the later acquisition has the larger one.
      expect(BigInt(fromCjs.token ?? '0')).toBeGreaterThan(BigInt(fromEsm.token ?? '0'));
    },
    3 * SCRIPT_TIMEOUT_MS,
  );

  it(
    'type-checks a TypeScript consumer under node16 (ESM and CJS) and bundler resolution',
    async () => {
      const configs = ['tsconfig.node16.json', 'tsconfig.bundler.json'];
      // Both at once: each is mostly the same lib checking (skipLibCheck is off on purpose).
      const results = await Promise.all(configs.map((config) => consumer().node(TSC, ['-p', config], TSC_TIMEOUT_MS)));
      expect(results.map((result, index) => ({ config: configs[index], code: result.code, output: result.stdout + result.stderr }))).toEqual(
        configs.map((config) => ({ config, code: 0, output: '' })),
      );
    },
    TSC_TIMEOUT_MS + 10_000,
  );

  /** Runs a consumer script to its end and checks what every run must print. */
  async function runConsumer(
    script: string,
    connection: string,
    key: string,
    extra: Readonly<Record<string, string>> = {},
  ): Promise<Record<string, string>> {
    const result = await consumer().node(script, [connection, key], SCRIPT_TIMEOUT_MS);
    // Exiting 0 on its own also proves close() leaves nothing that keeps Node running.
    expect({ script, code: result.code, timedOut: result.timedOut, stderr: result.stderr }).toEqual({
      script,
      code: 0,
      timedOut: false,
      stderr: '',
    });
    const values = parseScriptOutput(result.stdout);
    expect(values, script).toEqual({
      token: expect.stringMatching(/^[1-9]\d*$/),
      held: 'true',
      rival: 'refused',
      error: 'LOCK_INVALID_ARGUMENT',
      lockError: 'true',
      released: 'true',
      ...extra,
    });
    return values;
  }
});
