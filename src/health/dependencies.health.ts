import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Cluster, Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { moduleRedisClient } from '../common/redis-connection';
import { withTimeout } from '../common/with-timeout';
import { PW_CONNECTION } from '../database/data-source';
import type { ResolvedOptions } from '../config/options';
import { PW_OPTIONS } from '../payment-webhooks.constants';

/** PostgreSQL and Redis, each asked one cheap question with a bound on the wait. */
@Injectable()
export class DependenciesHealthIndicator implements OnApplicationShutdown {
  /**
   * A connection of its own that fails fast while Redis is away, rather than queueing the ping:
   * to the server, or to the cluster (`redisCluster`), whose ping goes to one of its masters.
   */
  private readonly redisClient: Redis | Cluster;

  constructor(
    private readonly indicator: HealthIndicatorService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
  ) {
    this.redisClient = moduleRedisClient(options, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true });
    this.redisClient.on('error', () => undefined); // reported by the readiness check, not as noise
  }

  onApplicationShutdown(): void {
    this.redisClient.disconnect();
  }

  async database(): Promise<HealthIndicatorResult> {
    const check = this.indicator.check('database');
    try {
      await withTimeout(this.dataSource.query('SELECT 1'), 1_000, 'PostgreSQL');
      return check.up();
    } catch (err) {
      return check.down({ message: (err as Error).message });
    }
  }

  async redis(): Promise<HealthIndicatorResult> {
    const check = this.indicator.check('redis');
    try {
      if (this.redisClient.status === 'wait') await withTimeout(this.redisClient.connect(), 1_000, 'Redis');
      const pong = await withTimeout(this.redisClient.ping(), 1_000, 'Redis');
      return pong === 'PONG' ? check.up() : check.down({ message: `unexpected answer ${pong}` });
    } catch (err) {
      return check.down({ message: (err as Error).message });
    }
  }
}
