import { Cluster } from 'ioredis';
import { moduleRedisConnection, parseRedisSeeds, redisConnection, releaseRedisConnection } from './redis-connection';

describe('moduleRedisConnection: one server or a Redis Cluster, decided in one place', () => {
  it('one server: the options of redisConnection, exactly as before', () => {
    const single = moduleRedisConnection({ redisUrl: 'redis://127.0.0.1:6379', redisCluster: false }, { maxRetriesPerRequest: 1 });
    expect(single).not.toBeInstanceOf(Cluster);
    expect(Object.keys(single)).toEqual(['url', 'retryStrategy', 'maxRetriesPerRequest']);
    expect(single).toMatchObject({ url: 'redis://127.0.0.1:6379', maxRetriesPerRequest: 1 });
    const plain = redisConnection('redis://127.0.0.1:6379');
    const retry = (single as typeof plain).retryStrategy;
    expect([1, 2, 5, 10].map(retry)).toEqual([1, 2, 5, 10].map(plain.retryStrategy));
  });

  it('a cluster: a Cluster on every seed, fail-fast options per node, the quick reconnect as clusterRetryStrategy', () => {
    const cluster = moduleRedisConnection(
      { redisUrl: 'redis://user:p%40ss@10.0.0.1:7000,10.0.0.2:7001', redisCluster: true },
      { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true },
    ) as Cluster;
    try {
      expect(cluster).toBeInstanceOf(Cluster);
      expect(cluster.status).toBe('wait'); // lazyConnect is the Cluster's own
      expect(cluster.options.redisOptions).toEqual({ username: 'user', password: 'p@ss', enableOfflineQueue: false, maxRetriesPerRequest: 1 });
      expect(cluster.options.enableOfflineQueue).toBe(false);
      expect([1, 2, 5, 10].map((n) => cluster.options.clusterRetryStrategy!(n))).toEqual([200, 400, 2_000, 2_000]);
      expect((cluster as unknown as { startupNodes: unknown[] }).startupNodes).toEqual([
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ]);
    } finally {
      releaseRedisConnection(cluster);
    }
    expect(cluster.status).toBe('end');
  });

  it('a cluster for BullMQ workers: no per-request retry bound of its own, and the offline queue kept', () => {
    const cluster = moduleRedisConnection({ redisUrl: 'rediss://10.0.0.1:7000', redisCluster: true }, { lazyConnect: true }) as Cluster;
    try {
      expect(cluster.options.redisOptions).toEqual({ tls: {} });
      expect(cluster.options.enableOfflineQueue).toBe(true);
    } finally {
      releaseRedisConnection(cluster);
    }
  });

  it('releaseRedisConnection leaves options alone', () => {
    expect(() => releaseRedisConnection(redisConnection('redis://127.0.0.1:6379'))).not.toThrow();
  });
});

describe('parseRedisSeeds', () => {
  it('reads seeds, credentials and TLS', () => {
    expect(parseRedisSeeds('redis://a.test:7000, b.test ,[::1]:7002/0')).toEqual({
      nodes: [
        { host: 'a.test', port: 7000 },
        { host: 'b.test', port: 6379 },
        { host: '::1', port: 7002 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseRedisSeeds('rediss://:secret@a.test:7000')).toMatchObject({ password: 'secret', username: undefined, tls: true });
  });
});
