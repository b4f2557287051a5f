/**
 * Each Redis client library the adapters' READMEs name (ioredis 5 and 6, iovalkey, node-redis 5 and
 * 6, Valkey GLIDE 2), installed with npm next to the packed core and redis tarballs in a fresh
 * project outside the workspace: npm warns about no peer dependency, the README's example with that
 * client runs as an ES module and in CommonJS against the shared Redis, and a TypeScript consumer
 * type-checks under node16 and bundler resolution with both adapters, with the provider's `client`
 * typed as the client given and the packages' own declarations checked too (`skipLibCheck: false`,
 * whichever client is installed: none may name a type of a client package the project lacks).
 * Redlock runs over node-redis masters in the node-redis 6 project.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { redisCommand, topology } from '@fencelock/test-infra';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_CLIENT_LIBRARIES, redlockNodeRedisConsumer, writeClientConsumers, type RedisClientLibrary } from '../src/client-consumers.js';
import { createConsumerProject, type ConsumerProject } from '../src/consumer-project.js';
import { packPackage, type PackedPackage } from '../src/pack-package.js';
import { parseScriptOutput } from '../src/script-output.js';
import { assertBuilt, REPO_ROOT } from '../src/workspace.js';

const PACKED = ['@fencelock/core', '@fencelock/redis-shared', '@fencelock/redis', '@fencelock/redlock'] as const;
const SCRIPT_TIMEOUT_MS = 30_000;
const TSC_TIMEOUT_MS = 180_000;
const TSC = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
// Projects set up at once: each is an npm install, then node and tsc runs (2 cores).
const AT_ONCE = 2;

/** npm's lines about peer dependencies (an unmet, conflicting or overridden peer). */
function peerWarnings(output: string): string[] {
  return output.split('\n').filter((line) => /\bpeer\b|ERESOLVE/i.test(line));
}

/** A slot among {@link AT_ONCE}: resolves the function that frees it. */
const waiting: (() => void)[] = [];
let busy = 0;
async function slot(): Promise<() => void> {
  if (busy >= AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  busy += 1;
  return () => {
    busy -= 1;
    waiting.shift()?.();
  };
}

describe.concurrent('each Redis client library, npm-installed next to the packed @fencelock/redis', () => {
  let packDir: string | undefined;
  const packed = new Map<string, PackedPackage>();
  const tarball = (name: string): string => {
    const found = packed.get(name);
    if (found === undefined) throw new Error(`${name} was not packed`);
    return found.tarball;
  };

  beforeAll(async () => {
    for (const name of PACKED) assertBuilt(name);
    packDir = await mkdtemp(path.join(os.tmpdir(), 'fencelock-pack-clients-'));
    for (const name of PACKED) packed.set(name, await packPackage(name, packDir));
  }, 120_000);

  afterAll(async () => {
    if (packDir !== undefined) await rm(packDir, { recursive: true, force: true });
  });

  for (const library of REDIS_CLIENT_LIBRARIES) {
    it(`${library.install}: no peer warning, the README example from ESM and CJS, types under node16 and bundler`, async () => {
      const free = await slot();
      const files = await mkdtemp(path.join(os.tmpdir(), `fencelock-files-${library.id}-`));
      let project: ConsumerProject | undefined;
      try {
        await writeClientConsumers(library, files);
        const withRedlock = library.id === 'node-redis6';
        if (withRedlock) await writeFile(path.join(files, 'redlock.mjs'), redlockNodeRedisConsumer());
        project = await createConsumerProject({
          // Redlock in every project: the TypeScript consumer uses both adapters' declarations.
          tarballs: PACKED.map(tarball),
          registryPackages: [library.install, '@types/node@^20'],
          filesFrom: files,
          installLogLevel: 'warn',
        });
        expect(peerWarnings(project.installOutput), library.install).toEqual([]);

        const { redisUrl, redlockUrls, servers } = topology();
        const key = `pack-test:${library.id}:${randomUUID()}`;
        const fromEsm = await runConsumer(project, library, `${library.id}.mjs`, redisUrl, key);
        const fromCjs = await runConsumer(project, library, `${library.id}.cjs`, redisUrl, key);
        expect(BigInt(fromCjs.token ?? '0')).toBeGreaterThan(BigInt(fromEsm.token ?? '0'));
        const redis = servers.redis[0];
        if (redis === undefined) throw new Error('no Redis in the topology');
        expect(await redisCommand(redis.port, ['EXISTS', key], { host: redis.host })).toBe(0);

        // Redlock gives no fencing token.
        if (withRedlock) await runConsumer(project, library, 'redlock.mjs', redlockUrls.join(','), `pack-test:redlock:${randomUUID()}`, 'undefined');

        const configs = ['tsconfig.node16.json', 'tsconfig.bundler.json'];
        const checked = await Promise.all(configs.map((config) => project!.node(TSC, ['-p', config], TSC_TIMEOUT_MS)));
        expect(checked.map((result, index) => ({ config: configs[index], code: result.code, output: result.stdout + result.stderr }))).toEqual(
          configs.map((config) => ({ config, code: 0, output: '' })),
        );
      } finally {
        await project?.remove();
        await rm(files, { recursive: true, force: true });
        free();
      }
    }, 600_000);
  }
});

/** Runs a consumer script to its end and checks what every run must print. */
async function runConsumer(
  project: ConsumerProject,
  library: RedisClientLibrary,
  script: string,
  connection: string,
  key: string,
  token: unknown = expect.stringMatching(/^[1-9]\d*$/),
): Promise<Record<string, string>> {
  const result = await project.node(script, [connection, key], SCRIPT_TIMEOUT_MS);
  // Exiting 0 on its own also proves that closing the provider and the client leaves nothing running.
  expect({ library: library.id, script, code: result.code, timedOut: result.timedOut, stderr: result.stderr }).toEqual({
    library: library.id,
    script,
    code: 0,
    timedOut: false,
    stderr: '',
  });
  const values = parseScriptOutput(result.stdout);
  expect(values, `${library.id} ${script}`).toEqual({
    token,
    held: 'true',
    rival: 'refused',
    error: 'LOCK_INVALID_ARGUMENT',
    lockError: 'true',
    released: 'true',
  });
  return values;
}
