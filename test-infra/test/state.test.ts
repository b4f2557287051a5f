import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startedServerPids } from '../src/state.js';

describe('startedServerPids', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const stateDir = (services: object): string => {
    const dir = mkdtempSync(join(tmpdir(), 'fencelock-state-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'state.json'), JSON.stringify({ version: 1, services }));
    return dir;
  };
  const member = (pid: number, cwd: string) => ({ label: `p${pid}`, pid, port: 1, cwd, logFile: '/dev/null' });
  const service = (members: object[]) => ({ service: 'redis', startedBy: 'up', ownerPid: process.pid, startedAt: '', dataRoot: '/nonexistent', members });

  it('lists the recorded members that are still the processes started, and nothing else', () => {
    const here = realpathSync(process.cwd());
    const dir = stateDir({
      redis: service([member(process.pid, here)]),
      // The same PID recorded with another working directory: a reused PID, not ours.
      etcd: service([member(process.pid, '/nonexistent-data-dir')]),
    });
    expect(startedServerPids(dir)).toEqual([process.pid]);
  });

  it("lists only the services asked for", () => {
    const here = realpathSync(process.cwd());
    const dir = stateDir({ redis: service([member(process.pid, here)]), etcd: { ...service([member(process.pid, here)]), service: 'etcd' } });
    expect(startedServerPids(dir, ['redis'])).toEqual([process.pid]);
    expect(startedServerPids(dir, ['zookeeper'])).toEqual([]);
    expect(startedServerPids(dir, ['redis', 'etcd'])).toEqual([process.pid, process.pid]);
  });

  it('is empty without a state file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fencelock-state-'));
    dirs.push(dir);
    expect(startedServerPids(dir)).toEqual([]);
  });
});
