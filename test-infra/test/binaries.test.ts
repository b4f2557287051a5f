import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { findExecutable, installCommand, missingBinaries, SLF4J_SIMPLE_JAR } from '../src/index.js';

const run = promisify(execFile);

describe('binaries', () => {
  it('finds everything on this machine', () => {
    expect(missingBinaries()).toEqual([]);
  });

  it('installs the Debian packages, adding a JRE only when java is missing', () => {
    const base = ['apt-get', 'install', '-y', '--no-install-recommends', 'redis-server', 'zookeeper', 'etcd-server', 'etcd-client', 'libcurator-recipes-java', 'python3-kazoo', 'python3-redis', 'postgresql'];
    expect(installCommand(['etcd'])).toEqual(base);
    expect(installCommand(['java'])).toEqual([...base, 'default-jre-headless']);
    expect(installCommand([SLF4J_SIMPLE_JAR])).toEqual([...base, 'libslf4j-java']);
  });

  // Needs root to switch to an unprivileged user; elsewhere the branch cannot be reached safely.
  const runuser = findExecutable('runuser');
  it.runIf(process.getuid?.() === 0 && runuser !== undefined)(
    'as a non-root user with nothing on PATH it throws the exact apt-get command instead of skipping',
    async () => {
      const script = `
        import { ensureBinaries } from './src/index.ts';
        try { await ensureBinaries(); console.log('NO ERROR'); } catch (e) { console.log(e.message); }
      `;
      const { stdout } = await run(
        runuser ?? 'runuser',
        ['-u', 'nobody', '--', '/usr/bin/env', 'PATH=/nonexistent', 'HOME=/tmp', process.execPath, '--import', 'tsx', '--input-type=module', '--eval', script],
        { cwd: new URL('..', import.meta.url).pathname, timeout: 30_000 },
      );
      expect(stdout).toContain('redis-server, redis-cli, etcd, etcdctl, java');
      expect(stdout).toContain('not root');
      expect(stdout).toContain(
        'sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server zookeeper etcd-server etcd-client libcurator-recipes-java python3-kazoo python3-redis postgresql default-jre-headless',
      );
    },
  );
});
