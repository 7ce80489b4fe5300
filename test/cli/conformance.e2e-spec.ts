import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { HttpProxy } from '../../tools/http-proxy';
import { api, commandLineOf, freePort, runCli, ServiceProcess, startCli, until, waitForHttp } from '../support/process';

/**
 * `payment-webhooks conformance` (CONTRACT §8) against the built service, as a team runs it against
 * staging: all checks pass against the service itself, on every provider and both platforms; through a gateway that
 * re-serialises JSON, with a wrong secret, or behind a proxy that answers for the service, the
 * signature check fails, says what to look at, and the command exits 1.
 */

const ADMIN = 'conformance-admin-token';
const PREFIX = '/pay';
const FACTUAREA_ACCOUNT = '6f1c2d3e-0000-4000-8000-000000000c0f';
const ENDPOINTS = [
  { id: 'paymos-main', provider: 'paymos', secrets: ['conf-paymos-secret'], merchantAccountId: 'acc_conf' },
  { id: 'factuarea-main', provider: 'factuarea', secrets: ['whsec_conf_factuarea'], merchantAccountId: FACTUAREA_ACCOUNT },
  { id: 'stripe-main', provider: 'stripe', secrets: ['whsec_conf_stripe_new', 'whsec_conf_stripe_old'], merchantAccountId: 'acct_conf' },
  { id: 'stripe-connect', provider: 'stripe', secrets: ['whsec_conf_connect'], merchantAccountIds: ['*'] },
  { id: 'standard-main', provider: 'standard', secrets: ['whsec_Y29uZm9ybWFuY2Utc3RhbmRhcmQta2V5'], merchantAccountId: 'acc_conf' },
];

/** Async: the proxy answers from this process, so the command must not block it. */
const run = (args: string[]) => runCli(['conformance', ...args]);

interface Report {
  tool: string;
  startedAt: string;
  finishedAt: string;
  passed: number;
  total: number;
  checks: Array<{ check: string; pass: boolean; detail: string; hint?: string }>;
}

describe.each(['express', 'fastify'])('payment-webhooks conformance against the service on %s', (platform) => {
  const sim = new CarrierSimulator();
  let service: ServiceProcess;
  let port: number;
  let base: string;

  beforeAll(async () => {
    await sim.start();
    port = await freePort();
    service = new ServiceProcess({
      DATABASE_URL: TEST_DATABASE_URL,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-conf-${randomUUID().slice(0, 8)}`,
      PORT: String(port),
      ADMIN_TOKEN: ADMIN,
      ROUTE_PREFIX: PREFIX,
      HTTP_ADAPTER: platform,
      CARRIER_URL: sim.url,
      WEBHOOK_ENDPOINTS: JSON.stringify(ENDPOINTS),
    });
    base = `http://127.0.0.1:${port}${PREFIX}`;
    await waitForHttp(service, `${base}/health`);
  });
  afterAll(async () => {
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await sim.stop();
  });

  const args = (url: string, endpoint: string, provider: string, secrets: string[], extra: string[] = []) => [
    '--url',
    url,
    '--endpoint',
    endpoint,
    '--provider',
    provider,
    ...secrets.flatMap((s) => ['--secret', s]),
    '--admin-token',
    ADMIN,
    '--wait',
    '20',
    ...extra,
  ];

  it.each([
    ['paymos', 'paymos-main', ['conf-paymos-secret'], []],
    ['factuarea', 'factuarea-main', ['whsec_conf_factuarea'], []],
    // Stripe has two endpoints of different accounts here: payments are registered under --merchant.
    ['stripe, signed with both secrets of a rotation', 'stripe-main', ['whsec_conf_stripe_new', 'whsec_conf_stripe_old'], ['--merchant', 'acct_conf']],
    ['stripe, a Connect endpoint of any account', 'stripe-connect', ['whsec_conf_connect'], ['--merchant', 'acct_conf_connected']],
    ['standard', 'standard-main', ['whsec_Y29uZm9ybWFuY2Utc3RhbmRhcmQta2V5'], []],
  ])('%s: every check passes against the service', async (_name, endpoint, secrets, extra) => {
    const provider = ENDPOINTS.find((e) => e.id === endpoint)!.provider;
    const shipmentsBefore = sim.shipments.length;
    const out = await run([...args(base, endpoint, provider, secrets, extra), '--json']);
    const report = JSON.parse(out.stdout) as Report;
    expect(report.checks.filter((c) => !c.pass)).toEqual([]);
    expect(report.checks.map((c) => c.check)).toEqual([
      'reachable',
      'signature',
      'delivery',
      'duplicate',
      'concurrent',
      'stale',
      'amount',
      'reprocess',
      'reserialised',
      'reconciliation',
    ]);
    expect([report.passed, report.total]).toEqual([10, 10]);
    expect(report.tool).toMatch(/^nestjs-payment-webhooks \d+\.\d+\.\d+ conformance$/);
    expect(Date.parse(report.finishedAt) - Date.parse(report.startedAt)).toBeGreaterThan(0);
    expect(out.code).toBe(0);
    // Two orders paid (the delivery and the concurrent check), one shipment each; the underpaid one none.
    expect(sim.shipments.length - shipmentsBefore).toBe(2);
    for (const secret of secrets) expect(out.stdout + out.stderr).not.toContain(secret);
    expect(out.stdout + out.stderr).not.toContain(ADMIN);
  });

  // Once is enough: how the command gets its secrets does not depend on the service's platform.
  if (platform === 'express') {
    it('stripe, the rotation from --secret-file and the token from ADMIN_TOKEN: every check passes; ps shows neither', async () => {
      const [current, old] = ENDPOINTS.find((e) => e.id === 'stripe-main')!.secrets;
      const secretFile = join(mkdtempSync(join(tmpdir(), 'pw-conf-secrets-')), 'stripe-main');
      writeFileSync(secretFile, `# stripe-main, during the rotation\r\n${current}\r\n  ${old}\r\n\r\n`, { mode: 0o600 });
      const argv = ['conformance', '--url', base, '--endpoint', 'stripe-main', '--provider', 'stripe', '--secret-file', secretFile];
      const shipmentsBefore = sim.shipments.length;
      const cli = startCli([...argv, '--merchant', 'acct_conf', '--wait', '20', '--json'], { ADMIN_TOKEN: ADMIN });

      // Mid-run (the delivery check has shipped its order), the process's arguments as any user reads them.
      let commandLine = '';
      await until('the delivery check shipping its order', () => {
        if (cli.child.exitCode !== null) return true;
        commandLine = commandLineOf(cli.child.pid!);
        return sim.shipments.length > shipmentsBefore;
      });
      expect(cli.child.exitCode).toBeNull();
      expect(commandLine).toContain(`--secret-file ${secretFile}`);
      for (const value of [current, old, ADMIN]) expect(commandLine).not.toContain(value);

      const out = await cli.exited;
      const report = JSON.parse(out.stdout) as Report;
      expect(report.checks.filter((c) => !c.pass)).toEqual([]);
      expect([report.passed, report.total, out.code]).toEqual([10, 10, 0]);
      for (const value of [current, old, ADMIN]) expect(out.stdout + out.stderr).not.toContain(value);
    });
  }

  it('the text output: one PASS line per check, then the count', async () => {
    const out = await run(args(base, 'paymos-main', 'paymos', ['conf-paymos-secret']));
    const lines = out.stdout.trim().split('\n');
    expect(lines).toHaveLength(11);
    for (const line of lines.slice(0, 10)) expect(line).toMatch(/^PASS [a-z]+ — \S/);
    expect(lines[10]).toBe('conformance: 10/10 checks pass');
    expect(out.code).toBe(0);
  });

  describe('what a deployment can get wrong', () => {
    let gateway: HttpProxy;
    let acknowledging: HttpProxy;
    beforeAll(async () => {
      gateway = new HttpProxy(port, { reserialise: true });
      acknowledging = new HttpProxy(port, { acknowledgeWebhooks: true });
      await gateway.start();
      await acknowledging.start();
    });
    afterAll(async () => {
      await gateway?.stop();
      await acknowledging?.stop();
    });

    it('a gateway that re-serialises JSON: the signature check fails and says so; exit 1', async () => {
      const out = await run(args(`${gateway.url}${PREFIX}`, 'paymos-main', 'paymos', ['conf-paymos-secret']));
      const lines = out.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^PASS reachable — /);
      expect(lines[1]).toMatch(/^FAIL signature — pretty-printed body: 401 invalid_signature; compact body: 200 accepted/);
      expect(lines[1]).toContain('parses and serialises JSON bodies again');
      expect(lines.filter((l) => l.startsWith('FAIL'))).toHaveLength(8);
      expect(lines.filter((l) => /^FAIL \w+ — not run: needs /.test(l))).toHaveLength(7);
      expect(lines[10]).toBe('conformance: 2/10 checks pass');
      expect(out.code).toBe(1);
      expect(gateway.rewritten).toBeGreaterThan(0);
    });

    it('a wrong secret: the signature check fails naming the secret, nothing is recorded; exit 1', async () => {
      const before = await api(base, ADMIN, 'GET', '/admin/webhook-deliveries?endpointId=paymos-main&limit=100');
      const out = await run([...args(base, 'paymos-main', 'paymos', ['not-the-paymos-secret']), '--json']);
      const report = JSON.parse(out.stdout) as Report;
      const signature = report.checks.find((c) => c.check === 'signature')!;
      expect(signature.pass).toBe(false);
      expect(signature.detail).toBe('pretty-printed body: 401 invalid_signature; compact body: 401 invalid_signature');
      expect(signature.hint).toContain('the secret (--secret or --secret-file) is not one of endpoint "paymos-main"\'s secrets');
      // Nothing verified, so the re-serialised probe's refusal would prove nothing: not run.
      expect(report.checks.find((c) => c.check === 'reserialised')).toEqual({
        check: 'reserialised',
        pass: false,
        detail: 'not run: no correctly signed delivery was accepted (see signature)',
      });
      expect([report.passed, report.total]).toEqual([1, 10]);
      expect(out.code).toBe(1);
      expect(out.stdout).not.toContain('not-the-paymos-secret');
      const after = await api(base, ADMIN, 'GET', '/admin/webhook-deliveries?endpointId=paymos-main&limit=100');
      expect(after.body.items.length).toBe(before.body.items.length);
    });

    it('a proxy that answers 200 for the service: the signature check says the event would be lost; exit 1', async () => {
      const out = await run([...args(`${acknowledging.url}${PREFIX}`, 'stripe-main', 'stripe', ['whsec_conf_stripe_new'], ['--merchant', 'acct_conf']), '--json']);
      const report = JSON.parse(out.stdout) as Report;
      const signature = report.checks.find((c) => c.check === 'signature')!;
      expect(signature.pass).toBe(false);
      expect(signature.detail).toContain('a 2xx that is not the service\'s answer ({"ok":true})');
      expect(signature.hint).toContain('something in front of the service answers for it');
      // The re-serialised probe would get the proxy's 200 too: not blamed on the service.
      const reserialised = report.checks.find((c) => c.check === 'reserialised')!;
      expect(reserialised).toEqual({ check: 'reserialised', pass: false, detail: "not run: the webhook answers are not the service's (see signature)" });
      expect(out.code).toBe(1);
    });
  });

  it.each([
    ['no --secret', ['--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', 'paymos', '--admin-token', 't'], /^payment-webhooks: conformance: --secret \(or --secret-file\) required/],
    ['an unknown provider', ['--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', 'braintree', '--secret', 's', '--admin-token', 't'], /--provider must be one of paymos, factuarea, stripe, standard, adyen, paypal, checkout, square, paddle$/m],
    ['a URL that is not http', ['--url', 'ftp://x', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--admin-token', 't'], /--url must be an http/],
    ['an unknown option', ['--bogus'], /^payment-webhooks: conformance: Unknown option '--bogus'/],
    ['a URL with a password', ['--url', 'http://user:pw-secret@127.0.0.1:1', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--admin-token', 't'], /--url must not carry a user name or password/],
    ['a token with a newline (read from a file)', ['--url', 'http://127.0.0.1:1', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--admin-token', 'pw-secret-token\n'], /--admin-token must not contain control characters/],
    ['the webhook URL instead of the base URL', ['--url', 'http://127.0.0.1:1/pay/webhooks/x', '--endpoint', 'x', '--provider', 'paymos', '--secret', 's', '--admin-token', 't'], /--url is the base URL of the service \(with its route prefix\), not the webhook URL/],
  ])('%s: exit 2 with one line saying why', async (_name, argv, message) => {
    const out = await run(argv as string[]);
    expect(out.stderr).toMatch(message);
    expect(out.stdout).toBe('');
    expect(out.stderr).not.toContain('pw-secret');
    expect(out.code).toBe(2);
  });

  it('a service that is not there: reachable fails, exit 1', async () => {
    const closed = await freePort();
    const out = await run(['--url', `http://127.0.0.1:${closed}`, '--endpoint', 'x', '--provider', 'paymos', '--secret', 'secret-x', '--admin-token', 't', '--json']);
    const report = JSON.parse(out.stdout) as Report;
    expect(report.checks[0]).toMatchObject({ check: 'reachable', pass: false });
    expect(report.checks[0].detail).toContain('ECONNREFUSED');
    expect(report.passed).toBe(0);
    expect(out.code).toBe(1);
  });
});
