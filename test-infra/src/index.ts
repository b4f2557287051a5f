/**
 * @fencelock/test-infra — real Redis, ZooKeeper, etcd and PostgreSQL servers on loopback for tests, with
 * fault injection (pause/resume/kill/restart, a TCP proxy), and the shared topology's addresses.
 */
export { topology, topologyEnv, SERVICE_NAMES, TOPOLOGY_ENV, DEFAULT_TOPOLOGY_ENV } from './topology.js';
export type { Topology, TopologyEnv, ServiceName, HostPort } from './topology.js';

export { startRedisServer, startRedisMasters, redisServerSpec, redisPing } from './redis-server.js';
export { startRedisCluster, type DedicatedRedisCluster, type RedisClusterOptions } from './redis-cluster.js';
export type { RedisServer, RedisServerOptions, RedisRestartOptions, RedisSpecOptions } from './redis-server.js';

export { startZooKeeperEnsemble, zooKeeperNodeSpec, ensembleLeader } from './zookeeper-ensemble.js';
export type {
  ZooKeeperEnsemble,
  ZooKeeperEnsembleOptions,
  ZooKeeperMember,
  ZooKeeperSpecOptions,
  LeaderOptions,
} from './zookeeper-ensemble.js';

export { startEtcdCluster, etcdMemberSpec, etcdHealthy, etcdStatus, httpUrl } from './etcd-cluster.js';
export type { EtcdCluster, EtcdClusterOptions, EtcdLeaderOptions, EtcdMember, EtcdSpecOptions, EtcdStatus } from './etcd-cluster.js';

export { initPostgresDataDir, postgresServerSpec, preparePostgresDataDir, INITDB_TIMEOUT_MS } from './postgres-server.js';
export type { PostgresInitOptions, PostgresSpecOptions } from './postgres-server.js';
export { postgresProbe } from './postgres-probe.js';
export { startPostgresServer } from './postgres-dedicated.js';
export type { PostgresServer, PostgresServerOptions } from './postgres-dedicated.js';
export type { PostgresProbeOptions, PostgresProbeResult } from './postgres-probe.js';

export { startTcpProxy } from './tcp-proxy.js';
export { alertThenReset, recordSockets, type SocketRecorder } from './socket-faults.js';
export type { TcpProxy, TcpProxyOptions, ProxyMode } from './tcp-proxy.js';

export type { ServerNode, RestartOptions } from './managed-server.js';
export { READY_TIMEOUT_MS } from './managed-server.js';

export { freePort, freePorts, isPortFree, isListening, LOOPBACK, RESERVED_PORTS } from './ports.js';
export type { FreePortOptions } from './ports.js';
export { isLoopbackHost, assertLoopbackHost } from './loopback.js';

export { redisCommand, encodeCommand, RedisReplyError } from './resp.js';
export { monitorRedisCommands, monitorArguments } from './redis-monitor.js';
export type { RedisCommandLog } from './redis-monitor.js';
export type { RespReply, RedisCommandOptions } from './resp.js';
export { fourLetterWord, zooKeeperMode } from './four-letter.js';
export type { FourLetterWord, ZooKeeperMode } from './four-letter.js';

export {
  ensureBinaries,
  missingBinaries,
  installCommand,
  findExecutable,
  findPostgresBinDir,
  postgresSystemUser,
  systemUser,
  POSTGRES_SYSTEM_USER,
  ZOOKEEPER_JAR,
  SLF4J_SIMPLE_JAR,
  CURATOR_RECIPES_JAR,
  SYSTEM_PYTHON,
} from './binaries.js';
export type { SystemUser } from './binaries.js';
export { canEnter, tempRootFor } from './reach.js';
export type { UserIdentity } from './reach.js';
export { InfraError, logTail } from './errors.js';
export { waitFor, sleep, withTimeout, WaitTimeoutError } from './wait.js';
export * from './zookeeper-lock-peers.js';
export type { WaitOptions } from './wait.js';
export { isChildOfThisProcess, killChildLeftovers } from './child-cleanup.js';
export { startedServerPids } from './state.js';
export { generateCertificates } from './secure/certificates.js';
export type { CertificatePair, TestCertificates } from './secure/certificates.js';
export { startSecureEtcd, SECURE_ETCD_LOCK_PREFIX, SECURE_ETCD_OTHER_PREFIX } from './secure/secure-etcd.js';
export type { SecureEtcd, SecureUser } from './secure/secure-etcd.js';
export { startSecureRedis } from './secure/secure-redis.js';
export type { SecureRedis, SecureRedisOptions } from './secure/secure-redis.js';
export { startSecurePostgres } from './secure/secure-postgres.js';
export type { SecurePostgres, SecurePostgresOptions } from './secure/secure-postgres.js';
