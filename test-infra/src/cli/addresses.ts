/** How the tables show each service's addresses. */
import type { ServiceName, Topology } from '../topology.js';

/** Short address text per service: URLs for Redis, etcd and PostgreSQL, the connection string for ZooKeeper. */
export function addressOf(t: Topology, service: ServiceName): string {
  switch (service) {
    case 'redis':
      return t.redisUrl;
    case 'redlock':
      return compactPorts(t, 'redlock');
    case 'redisCluster':
      return compactPorts(t, 'redisCluster');
    case 'zookeeper':
      return t.zkConnectionString;
    case 'etcd':
      return t.etcdEndpoints.join(',');
    case 'postgres':
      return t.postgresUrl;
  }
}

/** `127.0.0.1:7001-7005` when hosts agree and ports are consecutive; the full list otherwise. */
function compactPorts(t: Topology, service: 'redlock' | 'redisCluster'): string {
  const servers = t.servers[service];
  const first = servers[0];
  const last = servers[servers.length - 1];
  const consecutive = servers.every((s, i) => s.host === first?.host && s.port === (first?.port ?? 0) + i);
  if (first && last && consecutive && servers.length > 1) return `${first.host}:${first.port}-${last.port}`;
  return servers.map((s) => `${s.host}:${s.port}`).join(',');
}
