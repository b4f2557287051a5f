import { describe, expect, it } from 'vitest';
import { isLoopbackHost, topology, topologyEnv } from '../src/index.js';

describe('topology()', () => {
  it('defaults to the ports of DESIGN.md', () => {
    const t = topology({});
    expect(t.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(t.redlockUrls).toEqual([7001, 7002, 7003, 7004, 7005].map((p) => `redis://127.0.0.1:${p}`));
    expect(t.redisClusterUrls).toEqual([7101, 7102, 7103].map((p) => `redis://127.0.0.1:${p}`));
    expect(t.zkConnectionString).toBe('127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183');
    expect(t.zkHosts).toEqual(['127.0.0.1:2181', '127.0.0.1:2182', '127.0.0.1:2183']);
    expect(t.etcdEndpoints).toEqual(['http://127.0.0.1:2379', 'http://127.0.0.1:22379', 'http://127.0.0.1:32379']);
    expect(t.servers.etcd.map((s) => s.port)).toEqual([2379, 22379, 32379]);
    expect(t.postgresUrl).toBe('postgres://postgres@127.0.0.1:15432/postgres');
    expect(t.servers.postgres).toEqual([{ host: '127.0.0.1', port: 15432 }]);
    expect(Object.values(t.fromEnv).every((v) => v === false)).toBe(true);
  });

  it('reads every FENCELOCK_* variable, trimming spaces, and marks it as user-set', () => {
    const t = topology({
      FENCELOCK_REDIS_URL: ' redis://localhost:6390 ',
      FENCELOCK_REDLOCK_URLS: 'redis://127.0.0.1:8001, redis://127.0.0.1:8002,redis://127.0.0.1:8003',
      FENCELOCK_REDIS_CLUSTER_URLS: 'redis://127.0.0.1:8101,redis://127.0.0.1:8102,redis://127.0.0.1:8103',
      FENCELOCK_ZK_HOSTS: '127.0.0.1:12181,localhost:12182/chroot',
      FENCELOCK_ETCD_ENDPOINTS: 'http://127.0.0.1:12379/',
      FENCELOCK_POSTGRES_URL: 'postgresql://app:secret@localhost:25432/inventory',
    });
    expect(t.redisUrl).toBe('redis://localhost:6390');
    expect(t.servers.redis).toEqual([{ host: 'localhost', port: 6390 }]);
    expect(t.redlockUrls).toHaveLength(3);
    expect(t.servers.redlock.map((s) => s.port)).toEqual([8001, 8002, 8003]);
    expect(t.zkHosts).toEqual(['127.0.0.1:12181', 'localhost:12182']);
    expect(t.zkConnectionString).toBe('127.0.0.1:12181,localhost:12182/chroot');
    expect(t.etcdEndpoints).toEqual(['http://127.0.0.1:12379']);
    expect(t.postgresUrl).toBe('postgresql://app:secret@localhost:25432/inventory');
    expect(t.servers.postgres).toEqual([{ host: 'localhost', port: 25432 }]);
    expect(t.fromEnv).toEqual({ redis: true, redlock: true, redisCluster: true, zookeeper: true, etcd: true, postgres: true });
  });

  it('treats an empty variable as unset', () => {
    const t = topology({ FENCELOCK_REDIS_URL: '  ' });
    expect(t.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(t.fromEnv.redis).toBe(false);
  });

  it('uses the protocol default port when a URL has none', () => {
    expect(topology({ FENCELOCK_REDIS_URL: 'redis://127.0.0.1' }).servers.redis[0]?.port).toBe(6379);
    expect(topology({ FENCELOCK_ZK_HOSTS: '127.0.0.1' }).servers.zookeeper[0]?.port).toBe(2181);
    expect(topology({ FENCELOCK_POSTGRES_URL: 'postgres://postgres@127.0.0.1/postgres' }).servers.postgres[0]?.port).toBe(5432);
  });

  it.each([
    ['FENCELOCK_REDIS_URL', 'redis://10.0.0.5:6379'],
    ['FENCELOCK_REDIS_URL', 'redis://redis.example.com:6379'],
    ['FENCELOCK_REDLOCK_URLS', 'redis://127.0.0.1:7001,redis://192.168.1.2:7002'],
    ['FENCELOCK_REDIS_CLUSTER_URLS', 'redis://0.0.0.0:7101'],
    ['FENCELOCK_ZK_HOSTS', '127.0.0.1:2181,zk.internal:2182'],
    ['FENCELOCK_ETCD_ENDPOINTS', 'http://[2001:db8::1]:2379'],
    ['FENCELOCK_POSTGRES_URL', 'postgres://postgres@db.internal:5432/postgres'],
  ])('refuses a non-loopback host in %s=%s', (name, value) => {
    expect(() => topology({ [name]: value })).toThrow(RangeError);
    expect(() => topology({ [name]: value })).toThrow(new RegExp(`${name}.*not a loopback address`));
  });

  it.each([
    ['FENCELOCK_REDIS_URL', 'not a url', /not a URL/],
    ['FENCELOCK_REDIS_URL', 'http://127.0.0.1:6379', /must use redis:/],
    ['FENCELOCK_REDIS_URL', 'redis://127.0.0.1:1,redis://127.0.0.1:2', /must be one URL/],
    ['FENCELOCK_REDLOCK_URLS', 'redis://127.0.0.1:7001,,redis://127.0.0.1:7002', /empty entry/],
    ['FENCELOCK_REDLOCK_URLS', 'redis://127.0.0.1:7001,redis://127.0.0.1:7001', /twice/],
    ['FENCELOCK_ZK_HOSTS', '127.0.0.1:99999', /out of range/],
    ['FENCELOCK_ETCD_ENDPOINTS', 'redis://127.0.0.1:2379', /must use http: or https:/],
    ['FENCELOCK_POSTGRES_URL', 'mysql://127.0.0.1:3306/app', /must use postgres: or postgresql:/],
    ['FENCELOCK_POSTGRES_URL', 'postgres://127.0.0.1:1/a,postgres://127.0.0.1:2/b', /must be one URL/],
  ])('refuses a malformed %s=%s', (name, value, message) => {
    expect(() => topology({ [name]: value })).toThrow(message);
  });

  it('round-trips through topologyEnv()', () => {
    const t = topology({ FENCELOCK_REDLOCK_URLS: 'redis://127.0.0.1:9001,redis://127.0.0.1:9002,redis://127.0.0.1:9003' });
    const again = topology(topologyEnv(t));
    expect(again.redlockUrls).toEqual(t.redlockUrls);
    expect(again.etcdEndpoints).toEqual(t.etcdEndpoints);
    expect(again.zkConnectionString).toBe(t.zkConnectionString);
    expect(again.postgresUrl).toBe(t.postgresUrl);
  });
});

describe('isLoopbackHost()', () => {
  it.each(['127.0.0.1', '127.1.2.3', 'localhost', 'LOCALHOST', '::1', '[::1]'])('accepts %s', (host) => {
    expect(isLoopbackHost(host)).toBe(true);
  });
  it.each(['0.0.0.0', '10.0.0.1', '128.0.0.1', 'example.com', '::', '[2001:db8::1]', ''])('refuses %s', (host) => {
    expect(isLoopbackHost(host)).toBe(false);
  });
});
