import request from 'supertest';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/observability/logger';
import { createTestApp, eventually, TestApp } from '../support/app';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { TcpProxy } from '../support/tcp-proxy';

/**
 * Issue 12, finding 8: /health/ready is unauthenticated, so its answer holds fixed words only
 * (`down`, `unreachable`, `timeout`), never a driver's message (`connect ECONNREFUSED
 * 127.0.0.1:5999`, `role "…" does not exist`). The real error goes to the server's log, without
 * the password of the URL.
 */

const PASSWORD = 'pw-health-s3cret';

function withPassword(url: string): string {
  const u = new URL(url);
  u.username = u.username || 'postgres';
  u.password = PASSWORD;
  return u.toString();
}

describe.each([
  { dependency: 'database' as const, other: 'redis' as const, url: TEST_DATABASE_URL, port: 5432 },
  { dependency: 'redis' as const, other: 'database' as const, url: TEST_REDIS_URL, port: 6379 },
])('/health/ready with $dependency down: fixed words only (issue 12 finding 8)', ({ dependency, other, url, port }) => {
  const proxy = new TcpProxy('127.0.0.1', Number(new URL(url).port || port));
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  let t: TestApp;

  beforeAll(async () => {
    await proxy.up();
    const proxied = proxy.urlFor(url);
    t = await createTestApp({
      ...(dependency === 'database' ? { databaseUrl: withPassword(proxied) } : { redisUrl: proxied }),
      logger: createLogger({ level: 'warn', destination }),
    });
  });
  afterAll(async () => {
    await proxy.up();
    await t?.close();
    await proxy.down();
  });

  it('refused connections: 503, error.<dependency> {status:"down", message:"unreachable"}; the log has the cause, not the password', async () => {
    await proxy.down();
    let res: request.Response | undefined;
    await eventually(async () => {
      res = await request(t.app.getHttpServer()).get('/health/ready');
      return res.status === 503;
    }, 5_000, '/health/ready 503');
    const down = { status: 'down', message: 'unreachable' };
    expect(res!.body).toEqual({
      status: 'error',
      info: { [other]: { status: 'up' } },
      error: { [dependency]: down },
      details: { [other]: { status: 'up' }, [dependency]: down },
    });
    expect(res!.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect|role|password/i);
    expect(res!.text).not.toContain(String(proxy.port));

    const logged = lines.join('');
    expect(logged).toContain(`${dependency} readiness check failed`);
    expect(logged).toMatch(/ECONNREFUSED|Connection is closed|closed/);
    expect(logged).not.toContain(PASSWORD);
  });

  it('a hanging dependency: a fixed word ("timeout", or "unreachable" once the client gives the connection up)', async () => {
    await proxy.up();
    await eventually(async () => (await request(t.app.getHttpServer()).get('/health/ready')).status === 200, 10_000, 'ready again');
    proxy.hang();
    const res = await request(t.app.getHttpServer()).get('/health/ready');
    expect(res.status).toBe(503);
    expect(res.body.error[dependency]).toEqual({ status: 'down', message: expect.stringMatching(/^(timeout|unreachable)$/) });
    expect(res.text).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|timed out after/);
    await proxy.down();
    await proxy.up();
    // Back to ready before the app closes (its pool and clients reconnect through the proxy).
    await eventually(async () => (await request(t.app.getHttpServer()).get('/health/ready')).status === 200, 10_000, 'ready again');
  });
});
