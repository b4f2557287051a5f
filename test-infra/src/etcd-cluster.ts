/** etcd: the member command line (shared with the CLI), HTTP probes, and dedicated clusters. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureBinaries } from './binaries.js';
import { forgetTempDir, rememberTempDir } from './exit-cleanup.js';
import { ManagedServer, type ServerNode } from './managed-server.js';
import { LOOPBACK, freePorts } from './ports.js';
import type { ServerSpec } from './processes.js';
import { waitFor } from './wait.js';

/** Ports of one etcd member. */
export interface EtcdMember {
  readonly clientPort: number;
  readonly peerPort: number;
}

/** What {@link etcdMemberSpec} needs. */
export interface EtcdSpecOptions {
  readonly members: readonly EtcdMember[];
  /** 0-based index of this member (its name is `m<index>`). */
  readonly index: number;
  /** Must be fresh for a new cluster: etcd remembers peer URLs in it. */
  readonly dataDir: string;
  readonly logFile: string;
  /** Distinguishes clusters, so a member never joins a stale one. */
  readonly clusterToken: string;
}

/** `http://127.0.0.1:<port>` */
export function httpUrl(port: number): string {
  return `http://${LOOPBACK}:${port}`;
}

/** The etcd command line of one member, everything on loopback. */
export function etcdMemberSpec(options: EtcdSpecOptions): ServerSpec {
  const member = options.members[options.index];
  if (member === undefined) throw new RangeError(`no member at index ${options.index}`);
  const initialCluster = options.members.map((m, i) => `m${i}=${httpUrl(m.peerPort)}`).join(',');
  return {
    label: `etcd member ${options.index} (${LOOPBACK}:${member.clientPort})`,
    command: 'etcd',
    args: [
      '--name', `m${options.index}`,
      '--data-dir', options.dataDir,
      '--listen-client-urls', httpUrl(member.clientPort),
      '--advertise-client-urls', httpUrl(member.clientPort),
      '--listen-peer-urls', httpUrl(member.peerPort),
      '--initial-advertise-peer-urls', httpUrl(member.peerPort),
      '--initial-cluster', initialCluster,
      '--initial-cluster-token', options.clusterToken,
      '--initial-cluster-state', 'new',
      '--logger', 'zap',
      '--log-level', 'warn',
    ],
    cwd: options.dataDir,
    logFile: options.logFile,
  };
}

/** True when `GET <endpoint>/health` says `{"health":"true"}` (etcd 3.4 requires a leader for that). */
export async function etcdHealthy(endpoint: string, timeoutMs = 1_000): Promise<boolean> {
  try {
    const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = (await response.json()) as { health?: unknown };
    return response.ok && body.health === 'true';
  } catch {
    return false;
  }
}

/** A member's own id and the leader id it knows, from the gRPC gateway's maintenance status. */
export interface EtcdStatus {
  readonly memberId: string;
  readonly leaderId: string;
}

/** `POST <endpoint>/v3/maintenance/status`; undefined when the member does not answer in time. */
export async function etcdStatus(endpoint: string, timeoutMs = 1_000): Promise<EtcdStatus | undefined> {
  try {
    const response = await fetch(`${endpoint}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) return undefined;
    // uint64 ids arrive as decimal strings from the gateway.
    const body = (await response.json()) as { header?: { member_id?: unknown }; leader?: unknown };
    const memberId = body.header?.member_id;
    const leaderId = body.leader;
    if (typeof memberId !== 'string' || typeof leaderId !== 'string' || leaderId === '0') return undefined;
    return { memberId, leaderId };
  } catch {
    return undefined;
  }
}

/** Options of {@link startEtcdCluster}. */
export interface EtcdClusterOptions {
  /** Number of members, odd, 1–7. Default 3. */
  readonly size?: number;
}

/** Options of {@link EtcdCluster.leaderIndex}. */
export interface EtcdLeaderOptions {
  /** How long to wait for a leader known to a running member. Default 10 s. */
  readonly timeoutMs?: number;
}

/** A dedicated etcd cluster owned by one test. */
export interface EtcdCluster {
  /** `http://127.0.0.1:<client port>` per member, in member order. */
  readonly endpoints: readonly string[];
  readonly nodes: readonly ServerNode[];
  /** Index in `nodes` of the member that is leader (it says so itself); waits (bounded) during an election. */
  leaderIndex(options?: EtcdLeaderOptions): Promise<number>;
  /** SIGKILLs every member (a graceful stop of all members takes 8–9 s) and deletes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a dedicated etcd cluster on free loopback ports in a fresh temp dir and waits
 * (≤ 30 s) until every member's `/health` is true.
 *
 * @throws InfraError with the tail of the failing member's log.
 */
export async function startEtcdCluster(options: EtcdClusterOptions = {}): Promise<EtcdCluster> {
  const size = options.size ?? 3;
  if (!Number.isInteger(size) || size < 1 || size > 7 || size % 2 === 0) {
    throw new RangeError(`size must be an odd integer from 1 to 7, got ${String(size)}`);
  }
  await ensureBinaries();
  const root = await mkdtemp(join(tmpdir(), 'fencelock-etcd-'));
  rememberTempDir(root);
  const ports = await freePorts(size * 2);
  const members: EtcdMember[] = Array.from({ length: size }, (_, i) => ({
    clientPort: ports[i * 2] ?? 0,
    peerPort: ports[i * 2 + 1] ?? 0,
  }));
  const clusterToken = `fencelock-${process.pid}-${Date.now()}`;
  const nodes = members.map((member, index) => {
    const spec = etcdMemberSpec({
      members,
      index,
      dataDir: join(root, `member-${index}`),
      logFile: join(root, `member-${index}.log`),
      clusterToken,
    });
    const endpoint = httpUrl(member.clientPort);
    return new ManagedServer(spec.label, member.clientPort, spec, async () => ((await etcdHealthy(endpoint, 500)) ? true : undefined));
  });
  const cluster = new DedicatedEtcd(root, nodes);
  try {
    await Promise.all(nodes.map((node) => node.start()));
  } catch (error) {
    await cluster.stop();
    throw error;
  }
  return cluster;
}

class DedicatedEtcd implements EtcdCluster {
  #stopped = false;

  constructor(
    private readonly root: string,
    readonly nodes: readonly ManagedServer[],
  ) {}

  get endpoints(): string[] {
    return this.nodes.map((node) => httpUrl(node.port));
  }

  async leaderIndex(options: EtcdLeaderOptions = {}): Promise<number> {
    let seen = '';
    return waitFor(
      async () => {
        const statuses = await Promise.all(
          this.nodes.map((node) => (node.running && !node.paused ? etcdStatus(httpUrl(node.port)) : undefined)),
        );
        seen = statuses.map((s, i) => `member ${i}: ${s ? `id ${s.memberId}, leader ${s.leaderId}` : 'no answer'}`).join('; ');
        const index = statuses.findIndex((s) => s !== undefined && s.memberId === s.leaderId);
        return index >= 0 ? index : undefined;
      },
      { what: 'an etcd leader', timeoutMs: options.timeoutMs ?? 10_000, intervalMs: 50, describe: () => seen },
    );
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.nodes.map((node) => node.kill()));
    await rm(this.root, { recursive: true, force: true });
    forgetTempDir(this.root);
  }
}
