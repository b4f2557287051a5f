import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { canEnter, findExecutable, installCommand, missingBinaries, SLF4J_SIMPLE_JAR, systemUser, tempRootFor } from '../src/index.js';
import { writeStandaloneModule } from './support/standalone-module.js';

const run = promisify(execFile);

describe('binaries', () => {
  it('finds everything on this machine', () => {
    expect(missingBinaries()).toEqual([]);
  });

  it('installs the Debian packages, adding a JRE only when java is missing', () => {
    const base = ['apt-get', 'install', '-y', '--no-install-recommends', 'redis-server', 'zookeeper', 'etcd-server', 'etcd-client', 'libcurator-recipes-java', 'python3-kazoo', 'python3-redis', 'postgresql', 'openssl'];
    expect(installCommand(['etcd'])).toEqual(base);
    expect(installCommand(['java'])).toEqual([...base, 'default-jre-headless']);
    expect(installCommand([SLF4J_SIMPLE_JAR])).toEqual([...base, 'libslf4j-java']);
  });

  // Needs root to switch to an unprivileged user; elsewhere the branch cannot be reached safely.
  const runuser = findExecutable('runuser');
  const nobody = systemUser('nobody');
  it.runIf(process.getuid?.() === 0 && runuser !== undefined && nobody !== undefined)(
    'as a non-root user with nothing on PATH it throws the exact apt-get command instead of skipping',
    async () => {
      if (runuser === undefined || nobody === undefined) throw new Error('runIf checked runuser and nobody');
      // nobody may not be able to enter the checkout (a clone under root's home or a mode-700
      // folder), so it runs a JavaScript copy of binaries.ts from a world-readable temp dir,
      // without tsx. The node binary itself must be reachable.
      expect(canEnter(dirname(process.execPath), nobody), `nobody cannot run ${process.execPath}`).toBe(true);
      const dir = await mkdtemp(join(tempRootFor(nobody), 'fencelock-nobody-'));
      try {
        await chmod(dir, 0o755);
        const binaries = await writeStandaloneModule(fileURLToPath(new URL('../src/binaries.ts', import.meta.url)), dir);
        const script = join(dir, 'check.mjs');
        await writeFile(
          script,
          `import { ensureBinaries } from ${JSON.stringify(pathToFileURL(binaries).href)};
          try { await ensureBinaries(); console.log('NO ERROR'); } catch (e) { console.log(e.message); }\n`,
        );
        await chmod(script, 0o644);
        const { stdout } = await run(
          runuser,
          ['-u', nobody.name, '--', '/usr/bin/env', 'PATH=/nonexistent', 'HOME=/tmp', process.execPath, script],
          { cwd: dir, timeout: 30_000 },
        );
        expect(stdout).toContain('redis-server, redis-cli, etcd, etcdctl, java, openssl');
        expect(stdout).toContain('not root');
        expect(stdout).toContain(
          'sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server zookeeper etcd-server etcd-client libcurator-recipes-java python3-kazoo python3-redis postgresql openssl default-jre-headless',
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});
