import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import { moduleRedisClient } from '../common/redis-connection';
import { PW_CONNECTION } from '../database/data-source';
import type { ResolvedOptions } from '../config/options';
import { PW_LOGGER, PW_OPTIONS } from '../config/tokens';

/** How long each dependency may take to answer its one question. */
const CHECK_TIMEOUT_MS = 1_000;

/**
 * The words an unauthenticated readiness answer may hold about a dependency that is down: fixed,
 * never the driver's message (a host, a port, a role or database name, a server version).
 */
export const DOWN_REASONS = { timeout: 'timeout', unreachable: 'unreachable', unexpected: 'unexpected answer' } as const;

class CheckTimeout extends Error {}

/** Rejects with CheckTimeout when `promise` takes longer than CHECK_TIMEOUT_MS; the timer never outlives it. */
async function bounded<T>(promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CheckTimeout(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A URL's password, wherever a message might quote one (`scheme://user:password@host`). */
function withoutCredentials(message: string): string {
  return message.replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^:/@\s]*:)[^@\s]*@/gi, '$1[redacted]@');
}

/** PostgreSQL and Redis, each asked one cheap question with a bound on the wait. */
@Injectable()
export class DependenciesHealthIndicator implements OnApplicationShutdown {
  /**
   * A connection of its own that fails fast while Redis is away, rather than queueing the ping:
   * to the server, or to the cluster (`redisCluster`), whose ping goes to one of its masters.
   */
  private readonly redisClient: Redis | Cluster;
  /** The last cause logged per dependency: a probe every few seconds logs a change, not each failure. */
  private readonly lastLogged = new Map<string, string>();

  constructor(
    private readonly indicator: HealthIndicatorService,
    @InjectDataSource(PW_CONNECTION) private readonly dataSource: DataSource,
    @Inject(PW_OPTIONS) options: ResolvedOptions,
    @Inject(PW_LOGGER) private readonly logger: Logger,
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
      await bounded(this.dataSource.query('SELECT 1'));
      return this.up(check, 'database');
    } catch (err) {
      return this.down(check, 'database', err);
    }
  }

  async redis(): Promise<HealthIndicatorResult> {
    const check = this.indicator.check('redis');
    try {
      if (this.redisClient.status === 'wait') await bounded(this.redisClient.connect());
      const pong = await bounded(this.redisClient.ping());
      if (pong === 'PONG') return this.up(check, 'redis');
      return this.down(check, 'redis', new Error(`unexpected answer to PING: ${String(pong).slice(0, 64)}`), DOWN_REASONS.unexpected);
    } catch (err) {
      return this.down(check, 'redis', err);
    }
  }

  private up(check: { up(): HealthIndicatorResult }, name: string): HealthIndicatorResult {
    if (this.lastLogged.delete(name)) this.logger.info({ dependency: name }, `${name} readiness check passes again`);
    return check.up();
  }

  /** A fixed word in the answer; the cause, without any URL password, in the server's log. */
  private down(
    check: { down(data: Record<string, unknown>): HealthIndicatorResult },
    name: string,
    err: unknown,
    reason: string = err instanceof CheckTimeout ? DOWN_REASONS.timeout : DOWN_REASONS.unreachable,
  ): HealthIndicatorResult {
    const cause = withoutCredentials(String((err as Error)?.message ?? err)).slice(0, 500);
    if (this.lastLogged.get(name) !== cause) {
      this.lastLogged.set(name, cause);
      this.logger.warn({ dependency: name, reason, cause }, `${name} readiness check failed: ${cause}`);
    }
    return check.down({ message: reason });
  }
}
