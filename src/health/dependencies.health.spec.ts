import { HealthIndicatorService } from '@nestjs/terminus';
import type { DataSource } from 'typeorm';
import { resolveOptions } from '../config/validate';
import { DependenciesHealthIndicator } from './dependencies.health';

/** The answer holds a fixed word; the driver's message goes to the log, without a URL password. */
describe('DependenciesHealthIndicator: fixed words in the answer, the cause in the log', () => {
  const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const logger = { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }), info: () => undefined };
  const options = resolveOptions({ databaseUrl: 'postgres://u@127.0.0.1:5432/x', redisUrl: 'redis://127.0.0.1:6379', migrationsRun: false });
  let indicator: DependenciesHealthIndicator;

  function withQuery(query: () => Promise<unknown>): DependenciesHealthIndicator {
    indicator = new DependenciesHealthIndicator(new HealthIndicatorService(), { query } as unknown as DataSource, options, logger as never);
    return indicator;
  }
  afterEach(() => {
    indicator?.onApplicationShutdown();
    warnings.length = 0;
  });

  it.each([
    ['role "intruder" does not exist'],
    ['password authentication failed for user "ops"'],
    ['connect ECONNREFUSED 127.0.0.1:5999'],
  ])('%s: {status:"down", message:"unreachable"}', async (message) => {
    const result = await withQuery(() => Promise.reject(new Error(message))).database();
    expect(result).toEqual({ database: { status: 'down', message: 'unreachable' } });
    expect(warnings).toHaveLength(1);
    expect(warnings[0].msg).toContain(message);
  });

  it('a URL password in a message never reaches the log; the same cause is logged once', async () => {
    const check = withQuery(() => Promise.reject(new Error('cannot reach postgres://ops:hunter2-secret@db:5432/pay')));
    await check.database();
    await check.database();
    expect(warnings).toHaveLength(1);
    expect(JSON.stringify(warnings)).not.toContain('hunter2-secret');
    expect(warnings[0].msg).toContain('postgres://ops:[redacted]@db:5432/pay');
  });
});
