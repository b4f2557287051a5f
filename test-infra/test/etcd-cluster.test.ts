import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESERVED_PORTS, etcdHealthy, etcdStatus, isPortFree, startEtcdCluster, type EtcdCluster } from '../src/index.js';
import { processState } from '../src/processes.js';

const run = promisify(execFile);

describe('startEtcdCluster()', () => {
  let etcd: EtcdCluster;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
  });

  afterAll(async () => {
    await etcd?.stop();
  });

  it('starts three healthy members on free loopback ports that agree on one leader', async () => {
    expect(etcd.endpoints).toHaveLength(3);
    for (const node of etcd.nodes) expect(RESERVED_PORTS.has(node.port)).toBe(false);
    expect(await Promise.all(etcd.endpoints.map((e) => etcdHealthy(e)))).toEqual([true, true, true]);
    const leader = await etcd.leaderIndex();
    const statuses = await Promise.all(etcd.endpoints.map((e) => etcdStatus(e)));
    const leaderStatus = statuses[leader];
    expect(leaderStatus?.memberId).toBe(leaderStatus?.leaderId);
    expect(new Set(statuses.map((s) => s?.leaderId)).size).toBe(1);
  });

  it('is usable with etcdctl', async () => {
    const env = { ...process.env, ETCDCTL_API: '3' };
    const endpoints = `--endpoints=${etcd.endpoints.join(',')}`;
    const health = await run('etcdctl', [endpoints, 'endpoint', 'health'], { env, timeout: 15_000 });
    expect(`${health.stdout}${health.stderr}`.match(/is healthy/g)).toHaveLength(3);
    await run('etcdctl', [endpoints, 'put', 'k', 'v'], { env, timeout: 15_000 });
    const got = await run('etcdctl', [endpoints, 'get', 'k', '--print-value-only'], { env, timeout: 15_000 });
    expect(got.stdout.trim()).toBe('v');
  });

  it('keeps data across kill -9 + restart of the leader; a new leader is elected meanwhile', async () => {
    const leader = await etcd.leaderIndex();
    const node = etcd.nodes[leader];
    if (!node) throw new Error('no leader node');
    await node.kill();
    const next = await etcd.leaderIndex({ timeoutMs: 15_000 });
    expect(next).not.toBe(leader);
    await node.restart();
    expect(await etcdHealthy(etcd.endpoints[leader] ?? '')).toBe(true);
    const env = { ...process.env, ETCDCTL_API: '3' };
    const got = await run('etcdctl', [`--endpoints=${etcd.endpoints[leader] ?? ''}`, 'get', 'k', '--print-value-only'], {
      env,
      timeout: 15_000,
    });
    expect(got.stdout.trim()).toBe('v');
  });

  it('stop() kills every member, frees the ports and deletes the data', async () => {
    const pids = etcd.nodes.map((n) => n.pid);
    const root = dirname(etcd.nodes[0]?.logFile ?? '/nonexistent');
    await etcd.stop();
    for (const pid of pids) expect([undefined, 'Z']).toContain(processState(pid));
    for (const node of etcd.nodes) expect(await isPortFree(node.port)).toBe(true);
    expect(existsSync(root)).toBe(false);
  });
});
