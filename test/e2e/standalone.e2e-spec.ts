import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { signedHeaders } from '../../src/testing/sign';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { deleteQueueKeys } from '../support/app';
import { emptyDir, freePort, ServiceProcess, waitForHttp } from '../support/process';

const SECRET = 'e2e-SUPERSECRET-value';
const ENDPOINTS = JSON.stringify([
  { id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_e2e' },
]);
// A prefix of this run's own: the suite's database is new each run, and a prefix whose queues hold
// another run's jobs belongs to that run's deployment (CONTRACT §6, collisions refused at start).
const BASE = { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: `pw-e2e-${randomUUID().slice(0, 8)}` };
afterAll(() => deleteQueueKeys(BASE.QUEUE_PREFIX));

describe('configuration errors stop the process with one line naming the variable', () => {
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['bad JSON', { WEBHOOK_ENDPOINTS: `[{"id":"x","secrets":["${SECRET}"]` }, /^Configuration error: WEBHOOK_ENDPOINTS: is not valid JSON/],
    [
      'unknown provider',
      { WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'x', provider: 'worldpay', secrets: [SECRET], merchantAccountId: 'a' }]) },
      /^Configuration error: WEBHOOK_ENDPOINTS: endpoint "x": unknown provider "worldpay"/,
    ],
    [
      'endpoint without secrets',
      { WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'x', provider: 'paymos', secrets: [], merchantAccountId: 'a' }]) },
      /^Configuration error: WEBHOOK_ENDPOINTS: endpoint "x": "secrets" must be a non-empty array/,
    ],
    [
      'endpoint without merchantAccountId',
      { WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'x', provider: 'paymos', secrets: [SECRET] }]) },
      /^Configuration error: WEBHOOK_ENDPOINTS: endpoint "x": "merchantAccountId" is required/,
    ],
    [
      'standard secret without whsec_',
      { WEBHOOK_ENDPOINTS: JSON.stringify([{ id: 'x', provider: 'standard', secrets: [SECRET], merchantAccountId: 'a' }]) },
      /^Configuration error: WEBHOOK_ENDPOINTS: endpoint "x": secret #1 must start with "whsec_"/,
    ],
    [
      'duplicate endpoint id',
      {
        WEBHOOK_ENDPOINTS: JSON.stringify([
          { id: 'x', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'a' },
          { id: 'x', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'a' },
        ]),
      },
      /^Configuration error: WEBHOOK_ENDPOINTS: duplicate endpoint id "x"/,
    ],
    ['retention under 7', { INBOX_RETENTION_DAYS: '6' }, /^Configuration error: INBOX_RETENTION_DAYS: must be at least 7/],
    [
      'both forms of the endpoints',
      { WEBHOOK_ENDPOINTS: ENDPOINTS, WEBHOOK_ENDPOINTS_FILE: '/tmp/endpoints.json' },
      /^Configuration error: WEBHOOK_ENDPOINTS and WEBHOOK_ENDPOINTS_FILE: both are set/,
    ],
    [
      'both forms of the carriers',
      { CARRIERS: '[]', CARRIER_URL: 'http://127.0.0.1:4010' },
      /^Configuration error: CARRIERS and CARRIER_URL: both are set/,
    ],
    ['a number that is not a positive integer', { CARRIER_MAX_ATTEMPTS: '0' }, /^Configuration error: CARRIER_MAX_ATTEMPTS: must be a positive integer/],
    ['a number that is not a number', { WEBHOOK_MAX_BODY_BYTES: '1mb' }, /^Configuration error: WEBHOOK_MAX_BODY_BYTES: must be a positive integer/],
    [
      'an unreadable endpoints file',
      { WEBHOOK_ENDPOINTS_FILE: '/nonexistent/endpoints.json' },
      /^Configuration error: WEBHOOK_ENDPOINTS_FILE: cannot read \/nonexistent\/endpoints.json \(ENOENT\)/,
    ],
    ['a trusted proxy that is a host name', { TRUSTED_PROXIES: '10.0.0.0/8,lb.internal' }, /^Configuration error: TRUSTED_PROXIES: entry #2 "lb.internal" is not an IP address or a CIDR range$/],
  ];

  it.each(cases)('%s', async (_name, env, line) => {
    const service = new ServiceProcess({ ...BASE, ...env });
    const exited = await service.exited();
    expect(exited.code).toBe(1);
    const lines = exited.stderr.trimEnd().split('\n');
    expect(lines.length).toBe(1);
    expect(lines[0]).toMatch(line);
    expect(exited.stderr + exited.stdout).not.toContain(SECRET);
  });
});

describe('the standalone service', () => {
  it('starts, receives a signed webhook, and stops on SIGTERM', async () => {
    const port = await freePort();
    const dir = emptyDir();
    writeFileSync(join(dir, 'endpoints.json'), ENDPOINTS);
    const service = new ServiceProcess({ ...BASE, PORT: String(port), WEBHOOK_ENDPOINTS_FILE: join(dir, 'endpoints.json') });
    try {
      await waitForHttp(service, `http://127.0.0.1:${port}/health`);
      const eventId = `evt_e2e_${Date.now()}`;
      const body = JSON.stringify({ event_id: eventId, type: 'invoice.paid', data: { id: 'inv_e2e' } });
      const res = await fetch(`http://127.0.0.1:${port}/webhooks/paymos-main`, {
        method: 'POST',
        headers: signedHeaders('paymos', SECRET, body, { eventId }),
        body,
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: 'accepted', eventId });
    } finally {
      service.kill('SIGTERM');
    }
    // Nest closes everything, then re-raises the signal (the conventional exit of a process stopped by it).
    const exited = await service.exited();
    expect(exited.signal).toBe('SIGTERM');
    expect(exited.stdout).toContain('shut down (SIGTERM): workers and connections closed');
    expect(exited.stdout + exited.stderr).not.toContain(SECRET);
  });

  it('runs as a worker-only process with RUN_HTTP=false', async () => {
    const port = await freePort();
    const service = new ServiceProcess({ ...BASE, PORT: String(port), RUN_HTTP: 'false', WEBHOOK_ENDPOINTS: ENDPOINTS });
    try {
      const deadline = Date.now() + 20_000;
      while (!service.stdout.includes('worker-only process started') && Date.now() < deadline) {
        if (service.child.exitCode !== null) throw new Error(service.stderr);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(service.stdout).toContain('worker-only process started');
      await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
    } finally {
      service.kill('SIGTERM');
    }
    const exited = await service.exited();
    expect(exited.signal).toBe('SIGTERM');
    expect(exited.stdout).toContain('shut down (SIGTERM): workers and connections closed');
  });
});
