import { randomUUID } from 'node:crypto';
import { escapeKeySegment } from '@fencelock/etcd';
import { topology, waitFor } from '@fencelock/test-infra';
import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ExitCode } from '../src/index.js';
import { EtcdctlLock } from './support/etcdctl-lock.js';
import { CRITICAL_SECTION, killRunningFencelocks, runFencelock, startFencelock } from './support/fencelock-process.js';
import { describeHoldEndToEnd } from './support/hold-suite.js';
import { LockLog } from './support/lock-log.js';

// etcd: the holder's key is `fencelock/<escaped key>/<lease id>`; deleting it from outside (as
// `etcdctl del --prefix` would) loses the lock while the session lease lives on.
describeHoldEndToEnd(
  'etcd',
  async () => {
    const { etcdEndpoints } = topology();
    const client = new Etcd3({ hosts: [...etcdEndpoints] });
    return {
      env: { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: etcdEndpoints.join(',') },
      shortLifetime: ['--ttl', '2s'],
      removeLock: async (key) => {
        const deleted = await client.delete().prefix(`fencelock/${escapeKeySegment(key)}/`);
        if (deleted.deleted !== '1') throw new Error(`expected to delete one holder key of ${key}, deleted ${deleted.deleted}`);
      },
      close: async () => {
        client.close();
      },
    };
  },
  { fencing: 'global', full: true, readWrite: true },
);

// The CLI with etcdctl's names (`--etcd-key-prefix '' --etcd-key-encoding as-is`) against the real
// `etcdctl lock NAME`: each excludes the other on the same name. The name has a `/` in it, so the
// default escape encoding would name another lock: the encoding flag must really take effect.
describe("fencelock on etcd with etcdctl lock's names", () => {
  const { etcdEndpoints } = topology();
  const env = { FENCELOCK_BACKEND: 'etcd', FENCELOCK_ETCD_ENDPOINTS: etcdEndpoints.join(',') };
  const etcdctlNames = ['--etcd-key-prefix', '', '--etcd-key-encoding', 'as-is'];
  const client = new Etcd3({ hosts: [...etcdEndpoints] });
  const peers: EtcdctlLock[] = [];
  const logs: LockLog[] = [];
  const newLog = (): LockLog => {
    const log = new LockLog();
    logs.push(log);
    return log;
  };
  const section = (log: LockLog, who: string, ...extra: string[]): string[] => [process.execPath, CRITICAL_SECTION, log.path, who, ...extra];
  const etcdctl = (name: string): EtcdctlLock => {
    const peer = new EtcdctlLock(etcdEndpoints, name);
    peers.push(peer);
    return peer;
  };

  afterEach(async () => {
    await killRunningFencelocks();
    await Promise.allSettled(peers.splice(0).map((peer) => peer.kill()));
    for (const log of logs.splice(0)) log.remove();
  });
  afterAll(() => {
    client.close();
  });

  it('etcdctl holds NAME: hold --no-wait with its names exits 75 without running the command, inspect shows etcdctl as the holder; with the default names it is another lock', async () => {
    const log = newLog();
    const name = `cli-etcdctl/${randomUUID()}`;
    const peer = etcdctl(name);
    const peerKey = await peer.held();

    const refused = await runFencelock(['hold', name, ...etcdctlNames, '--no-wait', '--', ...section(log, 'A')], env);
    expect(refused.code, refused.stderr).toBe(ExitCode.NOT_ACQUIRED);
    expect(log.events()).toEqual([]);
    // The same names from the variables, an empty prefix included.
    const fromEnv = await runFencelock(['inspect', name, '--json'], { ...env, FENCELOCK_ETCD_KEY_PREFIX: '', FENCELOCK_ETCD_KEY_ENCODING: 'as-is' });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(JSON.parse(fromEnv.stdout)).toMatchObject({ state: 'held', holders: [{ ownerId: peerKey, mode: 'exclusive' }] });

    // Negative controls: the default names, and the empty prefix with the default (escape) encoding,
    // are other etcd keys, so etcdctl's lock does not exclude them.
    const defaults = await runFencelock(['hold', name, '--no-wait', '--', ...section(log, 'B')], env);
    expect(defaults.code, defaults.stderr).toBe(0);
    const escaped = await runFencelock(['hold', name, '--etcd-key-prefix', '', '--no-wait', '--', ...section(log, 'C')], env);
    expect(escaped.code, escaped.stderr).toBe(0);
    expect(log.events()).toEqual(['B start', 'B end', 'C start', 'C end']);

    expect(await peer.unlock()).toBe(0);
  });

  it('a hold with its names makes etcdctl lock NAME wait until the command has ended', async () => {
    const log = newLog();
    const name = `cli-etcdctl/${randomUUID()}`;
    const holder = startFencelock(['hold', name, ...etcdctlNames, '--', ...section(log, 'A', '--gate', log.gate('A'))], env);
    await holder.waitForStdout('ready A');
    const peer = etcdctl(name);
    // etcdctl has queued its own key behind ours (two keys under NAME/), and does not hold.
    await waitFor(async () => ((await client.getAll().prefix(`${name}/`).keys()).length === 2 ? true : undefined), {
      what: `etcdctl to queue behind the hold on ${name}`,
      timeoutMs: 20_000,
      intervalMs: 25,
    });
    expect(peer.heldKey).toBeUndefined();
    log.open('A');
    expect((await holder.exited).code).toBe(0);
    await peer.held();
    expect(log.events()).toEqual(['A start', 'A end']);
    expect(await peer.unlock()).toBe(0);
  });
});
