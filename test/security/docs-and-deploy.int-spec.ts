import { CanActivate, ExecutionContext, UnauthorizedException } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { AUTH, createTestApp, PLATFORMS, TestApp } from '../support/app';

/**
 * Issue 12, finding 9 a-c: the docs under a host's guard, the Swagger UI keeping no token in the
 * browser's storage, and docker/compose.yml publishing on loopback only.
 */

describe.each(PLATFORMS)('%s: /docs under the host adminGuard (issue 12 finding 9a)', (platform) => {
  /** A host guard that reads the request and answers asynchronously, as a session check would. */
  const hostGuard: CanActivate = {
    canActivate: async (ctx: ExecutionContext) => {
      const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
      if (req.headers['x-session'] === undefined) throw new UnauthorizedException();
      return req.headers['x-session'] === 'payments-admin';
    },
  };
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ adminGuard: hostGuard }, { platform });
  });
  afterAll(() => t?.close());

  it.each(['/docs', '/docs/', '/docs-json', '/docs/swagger-ui-init.js'])('%s: the host guard decides', async (path) => {
    const allowed = await request(t.app.getHttpServer()).get(path).set('x-session', 'payments-admin');
    expect(allowed.status).toBe(200);
    const refused = await request(t.app.getHttpServer()).get(path).set('x-session', 'someone').set(AUTH);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: 'forbidden' });
    const anonymous = await request(t.app.getHttpServer()).get(path);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual({ error: 'unauthorized' });
    // The host's guard is no basic-auth check: the browser is not asked for one.
    expect(anonymous.headers['www-authenticate'] ?? '').not.toMatch(/^Basic/);
  });
});

describe('the Swagger UI keeps no token in localStorage (issue 12 finding 9c)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('persistAuthorization is off', async () => {
    const init = await request(t.app.getHttpServer()).get('/docs/swagger-ui-init.js').set(AUTH);
    expect(init.status).toBe(200);
    expect(init.text).toMatch(/"persistAuthorization":\s*false/);
    expect(init.text).not.toMatch(/"persistAuthorization":\s*true/);
  });
});

describe('docker/compose.yml publishes on loopback only (issue 12 finding 9b)', () => {
  const text = readFileSync(join(__dirname, '..', '..', 'docker', 'compose.yml'), 'utf8');

  /** Every entry of every `ports:` list, as written. */
  function publishedPorts(yaml: string): string[] {
    const out: string[] = [];
    const lines = yaml.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const m = /^(\s*)ports:\s*(.*)$/.exec(lines[i]);
      if (!m) continue;
      if (m[2].startsWith('[')) {
        out.push(...m[2].replace(/[[\]]/g, '').split(',').map((s) => s.trim()).filter(Boolean));
        continue;
      }
      for (let j = i + 1; j < lines.length && /^\s*-\s/.test(lines[j]) && lines[j].search(/\S/) > m[1].length; j++) {
        out.push(lines[j].replace(/^\s*-\s*/, '').replace(/\s+#.*$/, '').trim());
      }
    }
    return out.map((p) => p.replace(/^["']|["']$/g, ''));
  }

  it('every published port is bound to 127.0.0.1', () => {
    const ports = publishedPorts(text);
    // postgres, redis, the app, the carrier simulator, and Jaeger's UI and OTLP port (profile `tracing`).
    expect(ports.length).toBe(6);
    for (const port of ports) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
    // No long-syntax entry (`published:`) slipped past the short-syntax check.
    expect(text).not.toMatch(/^\s*published:/m);
  });

  it('the database password is not written in the file (POSTGRES_PASSWORD sets it)', () => {
    expect(text).toMatch(/POSTGRES_PASSWORD: \$\{POSTGRES_PASSWORD/);
    expect(text).not.toMatch(/POSTGRES_PASSWORD: postgres\s*$/m);
  });
});
