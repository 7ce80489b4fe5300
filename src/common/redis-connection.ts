import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** Reconnects quickly and keeps trying: BullMQ's default backs off to 20 s. */
const quickRetry = (times: number) => Math.min(100 * 2 ** Math.min(times, 5), 2_000);

/**
 * Connection options shared by every Redis connection of the module. Reconnects quickly and keeps
 * trying: BullMQ's default backs off to 20 s, which would leave work waiting long after Redis is
 * back.
 */
export function redisConnection(url: string, extra: Record<string, unknown> = {}) {
  return {
    url,
    retryStrategy: quickRetry,
    ...extra,
  };
}

/** Where the module's Redis is: one server (`redisUrl`), or the seed nodes of a cluster. */
export interface RedisTarget {
  redisUrl: string;
  redisCluster: boolean;
}

/** What a connection of the module is given: ioredis options of one server, or a Cluster. */
export type ModuleRedisConnection = ReturnType<typeof redisConnection> | Cluster;

/** The seed nodes and credentials of a cluster's `redis://[user:password@]host:port[,host:port…]`. */
export interface RedisSeeds {
  nodes: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  tls: boolean;
}

/**
 * Reads the seed list of a cluster. Throws an Error whose message never quotes the URL (it may
 * carry a password).
 */
export function parseRedisSeeds(url: string): RedisSeeds {
  const match = /^(rediss?):\/\/(?:([^@/?#]*)@)?([^@/?#]+)(?:\/(\d*))?$/.exec(url);
  if (!match) {
    if (!/^rediss?:\/\//.test(url)) throw new Error('must start with redis:// or rediss://');
    throw new Error('must be redis://host:port[,host:port…] on a Redis Cluster');
  }
  const [, scheme, auth, hosts, db] = match;
  if (db !== undefined && db !== '' && db !== '0') throw new Error('names database ' + db + '; a Redis Cluster has only database 0');
  const nodes = hosts.split(',').map((seed) => {
    let parsed: URL;
    try {
      parsed = new URL(`redis://${seed.trim()}`);
    } catch {
      throw new Error('has a seed that is not host:port');
    }
    if (!parsed.hostname || parsed.username || parsed.password || parsed.pathname) throw new Error('has a seed that is not host:port');
    return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: parsed.port ? Number(parsed.port) : 6379 };
  });
  let username: string | undefined;
  let password: string | undefined;
  if (auth !== undefined) {
    const colon = auth.indexOf(':');
    const user = colon === -1 ? auth : auth.slice(0, colon);
    try {
      username = user === '' ? undefined : decodeURIComponent(user);
      password = colon === -1 ? undefined : decodeURIComponent(auth.slice(colon + 1));
    } catch {
      throw new Error('has credentials that are not URL-encoded');
    }
  }
  return { nodes, username, password: password === '' ? undefined : password, tls: scheme === 'rediss' };
}

/**
 * A Cluster on the seed nodes of `url`. `lazyConnect` is the Cluster's own; every other option
 * goes to the connection of each node (`redisOptions`). ioredis keeps an offline queue on each
 * node regardless, so `enableOfflineQueue: false` is also set on the Cluster: that is what makes a
 * command fail at once while the cluster is away, as on one server.
 */
function clusterConnection(url: string, extra: Record<string, unknown>): Cluster {
  const { lazyConnect, ...perNode } = extra;
  const seeds = parseRedisSeeds(url);
  const redisOptions: RedisOptions = {
    ...(seeds.username !== undefined ? { username: seeds.username } : {}),
    ...(seeds.password !== undefined ? { password: seeds.password } : {}),
    ...(seeds.tls ? { tls: {} } : {}),
    ...perNode,
  };
  return new Cluster(seeds.nodes, {
    clusterRetryStrategy: quickRetry,
    redisOptions,
    ...(lazyConnect !== undefined ? { lazyConnect: Boolean(lazyConnect) } : {}),
    ...(perNode.enableOfflineQueue === false ? { enableOfflineQueue: false } : {}),
  });
}

/**
 * The one place that decides what a Redis connection of the module is: with `redisCluster` off,
 * the options of one server exactly as `redisConnection` gives them; with it on, an ioredis
 * `Cluster` on the seed nodes of `redisUrl` (BullMQ takes either as `connection`). A Cluster is the
 * caller's to close (BullMQ leaves a client it was given open): see `releaseRedisConnection`.
 */
export function moduleRedisConnection(target: RedisTarget, extra: Record<string, unknown> = {}): ModuleRedisConnection {
  return target.redisCluster ? clusterConnection(target.redisUrl, extra) : redisConnection(target.redisUrl, extra);
}

/** A client of the module's Redis of its own (a `Redis`, or a `Cluster`), built the same way. */
export function moduleRedisClient(target: RedisTarget, extra: Record<string, unknown> = {}): Redis | Cluster {
  const connection = moduleRedisConnection(target, extra);
  if (connection instanceof Cluster) return connection;
  const { url, ...rest } = connection;
  return new Redis(url, rest);
}

/** Closes a Cluster given to BullMQ (which never closes a client it did not create); options need nothing. */
export function releaseRedisConnection(connection: ModuleRedisConnection): void {
  if (connection instanceof Cluster && connection.status !== 'end') connection.disconnect();
}
