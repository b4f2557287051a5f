import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  RESERVED_PORTS,
  fourLetterWord,
  isPortFree,
  startZooKeeperEnsemble,
  zooKeeperMode,
  type ZooKeeperEnsemble,
} from '../src/index.js';
import { processState } from '../src/processes.js';

describe('startZooKeeperEnsemble()', () => {
  let zk: ZooKeeperEnsemble;

  beforeAll(async () => {
    zk = await startZooKeeperEnsemble({ size: 3, tickTime: 500, minSessionTimeout: 1_000, maxSessionTimeout: 20_000 });
  });

  afterAll(async () => {
    await zk?.stop();
  });

  it('starts three servers on free loopback ports, each serving, exactly one leader', async () => {
    expect(zk.nodes).toHaveLength(3);
    expect(zk.connectionString).toBe(zk.nodes.map((n) => `127.0.0.1:${n.port}`).join(','));
    for (const node of zk.nodes) expect(RESERVED_PORTS.has(node.port)).toBe(false);
    const modes = await Promise.all(zk.nodes.map((n) => zooKeeperMode(n.port)));
    expect(modes.filter((m) => m === 'leader')).toHaveLength(1);
    expect(modes.filter((m) => m === 'follower')).toHaveLength(2);
    const leader = await zk.leaderIndex();
    expect(modes[leader]).toBe('leader');
  });

  it('answers the whitelisted four-letter words', async () => {
    const port = zk.nodes[0]?.port ?? 0;
    expect(await fourLetterWord(port, 'ruok')).toBe('imok');
    expect(await fourLetterWord(port, 'mntr')).toMatch(/zk_server_state\s+(leader|follower)/);
    expect(await fourLetterWord(port, 'stat')).toMatch(/Mode: (leader|follower)/);
  });

  it('a follower survives kill -9 + restart on the same data dir and rejoins', async () => {
    const leader = await zk.leaderIndex();
    const index = (leader + 1) % 3;
    const follower = zk.nodes[index];
    if (!follower) throw new Error('no follower');
    const oldPid = follower.pid;
    await follower.kill();
    expect(follower.running).toBe(false);
    // Two of three still form a quorum.
    expect(await zk.leaderIndex()).toBe(leader);
    await follower.restart();
    expect(follower.pid).not.toBe(oldPid);
    expect(await zooKeeperMode(follower.port)).toBe('follower');
  });

  it('a paused server does not answer; it serves again after resume', async () => {
    const node = zk.nodes[(await zk.leaderIndex() + 2) % 3];
    if (!node) throw new Error('no node');
    await node.pause();
    expect(node.paused).toBe(true);
    expect(await zooKeeperMode(node.port, 300)).toBeUndefined();
    await node.resume();
    expect(await zooKeeperMode(node.port, 5_000)).toBe('follower');
  });

  it('stop() kills every server, frees the ports and deletes the data', async () => {
    const pids = zk.nodes.map((n) => n.pid);
    const root = dirname(zk.nodes[0]?.logFile ?? '/nonexistent');
    await zk.stop();
    for (const pid of pids) expect([undefined, 'Z']).toContain(processState(pid));
    for (const node of zk.nodes) expect(await isPortFree(node.port)).toBe(true);
    expect(existsSync(root)).toBe(false);
  });

  it('refuses an even or out-of-range size', async () => {
    await expect(startZooKeeperEnsemble({ size: 2 })).rejects.toThrow(RangeError);
    await expect(startZooKeeperEnsemble({ size: 9 })).rejects.toThrow(RangeError);
  });
});
