import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { CarrierSimulator } from '../../tools/carrier-sim';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../support/env';
import { HttpProxy } from '../../tools/http-proxy';
import { api, commandLineOf, freePort, runCli, ServiceProcess, startCli, until, waitForHttp } from '../support/process';

/**
 * `payment-webhooks simulate` (CONTRACT §8) against the built service: the Factuarea schedule at a
 * high time scale through a proxy that answers 503 for the first minute-equivalent, copies and
 * reversed lifecycles with a rotation in flight, a wrong secret, no service at all, bad arguments.
 */

const ADMIN = 'sim-admin-token-0123';
const SECRET = 'whsec_sim_factuarea';
const OLD_SECRET = 'whsec_sim_rotated_old';
const NEW_SECRET = 'whsec_sim_rotated_new';
/** The endpoint run with --secret-file: its current secret and the one it replaced. */
const FILE_SECRET = 'whsec_sim_from_file_current';
const FILE_OLD_SECRET = 'whsec_sim_from_file_previous';
/** At 120×, Factuarea's first wait (1 min ±10 %) is 450–550 ms: a service down for 500 ms is its first minute. */
const TIME_SCALE = 120;
const UNAVAILABLE_MS = 60_000 / TIME_SCALE;

/** Async: the proxy answers from this process, so the command must not block it. */
const run = (args: string[]) => runCli(['simulate', ...args]);

/** stderr holds nothing but progress lines (a plain line every 5 s when not a terminal). */
function onlyProgress(stderr: string): string[] {
  return stderr.split('\n').filter((line) => line !== '' && !/^simulate: \d+\/\d+ events acknowledged/.test(line));
}

/* eslint-disable @typescript-eslint/no-explicit-any */
type Summary = any;
type Row = any;

describe('payment-webhooks simulate', () => {
  const sim = new CarrierSimulator();
  const schema = `sim_${randomBytes(4).toString('hex')}`;
  let service: ServiceProcess;
  let port: number;
  let direct: string;
  const proxies: HttpProxy[] = [];

  beforeAll(async () => {
    await sim.start();
    port = await freePort();
    direct = `http://127.0.0.1:${port}`;
    service = new ServiceProcess({
      DATABASE_URL: TEST_DATABASE_URL,
      DATABASE_SCHEMA: schema,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: `pw-sim-${randomUUID().slice(0, 8)}`,
      WEBHOOK_ENDPOINTS: JSON.stringify([
        { id: 'factuarea-sim', provider: 'factuarea', secrets: [SECRET], merchantAccountId: randomUUID() },
        { id: 'factuarea-rotating', provider: 'factuarea', secrets: [OLD_SECRET], merchantAccountId: randomUUID() },
        { id: 'factuarea-wrong', provider: 'factuarea', secrets: [SECRET], merchantAccountId: randomUUID() },
        { id: 'factuarea-file', provider: 'factuarea', secrets: [FILE_SECRET], merchantAccountId: randomUUID() },
      ]),
      PORT: String(port),
      ADMIN_TOKEN: ADMIN,
      CARRIER_URL: sim.url,
    });
    await waitForHttp(service, `${direct}/health`);
  });

  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    service?.kill('SIGTERM');
    await service?.exited().catch(() => undefined);
    await sim.stop();
    const client = new Client({ connectionString: TEST_DATABASE_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => client.end());
  });

  async function proxy(options: ConstructorParameters<typeof HttpProxy>[1]): Promise<HttpProxy> {
    const p = new HttpProxy(port, options);
    await p.start();
    proxies.push(p);
    return p;
  }

  /** Every row of the endpoint's archive, page by page. */
  async function deliveries(endpointId: string): Promise<Row[]> {
    const rows: Row[] = [];
    let cursor: string | null = null;
    do {
      const page = await api(port, ADMIN, 'GET', `/admin/webhook-deliveries?endpointId=${endpointId}&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      rows.push(...page.body.items);
      cursor = page.body.nextCursor;
    } while (cursor);
    return rows;
  }

  /** Each event id once in the archive, and every order the run created fulfilled once, with one shipment. */
  async function expectRecordedOnceAndFulfilled(endpointId: string, summary: Summary): Promise<void> {
    const rows = await deliveries(endpointId);
    const sent: string[] = summary.events.map((e: Row) => e.eventId).sort();
    expect(rows.map((r) => r.eventId).sort()).toEqual(sent);

    const orders: string[] = summary.orders;
    for (const id of orders) {
      let order: Row;
      await until(`order ${id} fulfilled`, async () => {
        order = (await api(port, ADMIN, 'GET', `/orders/${id}`)).body;
        return order.status === 'fulfilled';
      });
      expect(order!.fulfillment).toMatchObject({ status: expect.any(String), shipmentId: expect.any(String) });
      expect(order!.payments).toHaveLength(1);
      expect(order!.payments[0]).toMatchObject({ provider: 'factuarea', status: 'succeeded', amount: '49.90', currency: 'EUR' });
    }
    const shipments = sim.shipments.filter((s) => s.orderId !== null && orders.includes(s.orderId));
    expect(shipments.map((s) => s.orderId).sort()).toEqual([...orders].sort());
  }

  it('the Factuarea schedule at 120× against a service answering 503 for its first minute: every event ends accepted, none twice', async () => {
    const gateway = await proxy({ unavailableForMs: UNAVAILABLE_MS });
    const out = await run([
      ...['--url', gateway.url, '--admin-url', direct, '--endpoint', 'factuarea-sim', '--provider', 'factuarea', '--secret', SECRET],
      ...['--schedule', 'factuarea', '--time-scale', String(TIME_SCALE), '--events', '20', '--duplicates', '0.25', '--concurrency', '8'],
      ...['--admin-token', ADMIN, '--json'],
    ]);
    expect({ code: out.code, stderr: onlyProgress(out.stderr) }).toEqual({ code: 0, stderr: [] });
    const summary: Summary = JSON.parse(out.stdout);

    // Every 503 the service (its proxy) gave was seen, and retried: nothing given up.
    expect(gateway.unavailableAnswers).toBeGreaterThan(0);
    expect(summary.answers).toEqual({ '200 accepted': 20, '200 duplicate': 5, '503 unavailable': gateway.unavailableAnswers });
    expect(summary.totals).toEqual({
      events: 20,
      sent: 20,
      accepted: 20,
      acceptedMoreThanOnce: 0,
      duplicateOnly: 0,
      acknowledgedOtherwise: 0,
      gaveUp: 0,
      unfinished: 0,
      requests: gateway.unavailableAnswers + gateway.forwarded,
      attempts: gateway.unavailableAnswers + gateway.forwarded,
      retries: gateway.unavailableAnswers,
      redeliveries: 5,
      giveUps: 0,
    });
    expect(gateway.forwarded).toBe(25);
    expect(summary.giveUps).toEqual([]);
    expect(summary.run).toMatchObject({ provider: 'factuarea', endpoint: 'factuarea-sim', schedule: 'factuarea', timeScale: TIME_SCALE });
    // 20 events are 7 Factuarea lifecycles (created, sent, paid; the last one sent and paid only): 7 orders.
    expect(summary.orders).toHaveLength(7);
    expect(summary.events.every((e: Row) => e.state === 'acknowledged' && e.accepted === 1)).toBe(true);
    expect(out.stdout).not.toContain(SECRET);
    expect(out.stdout).not.toContain(ADMIN);

    await expectRecordedOnceAndFulfilled('factuarea-sim', summary);
  });

  it('concurrent copies, reversed lifecycles and a rotation in flight (two v1, one of them unknown to the service): accepted once each', async () => {
    const out = await run([
      ...['--url', direct, '--endpoint', 'factuarea-rotating', '--provider', 'factuarea', '--secret', NEW_SECRET, '--secret', OLD_SECRET],
      ...['--events', '12', '--copies', '3', '--concurrency', '9', '--out-of-order', '0.5', '--duplicates', '0.5'],
      ...['--time-scale', String(TIME_SCALE), '--admin-token', ADMIN, '--seed', '7', '--json'],
    ]);
    expect({ code: out.code, stderr: onlyProgress(out.stderr) }).toEqual({ code: 0, stderr: [] });
    const summary: Summary = JSON.parse(out.stdout);
    // 12 events, each first as 3 copies at once (one accepted, two duplicate), 6 of them sent again later.
    expect(summary.answers).toEqual({ '200 accepted': 12, '200 duplicate': 30 });
    expect(summary.totals).toMatchObject({ sent: 12, accepted: 12, acceptedMoreThanOnce: 0, requests: 42, attempts: 18, retries: 0, redeliveries: 6, giveUps: 0 });
    expect(summary.orders).toHaveLength(4);
    await expectRecordedOnceAndFulfilled('factuarea-rotating', summary);
  });

  it('the secrets from --secret-file and the token from ADMIN_TOKEN: while it runs, ps shows neither; every event accepted once', async () => {
    const gateway = await proxy({ unavailableForMs: UNAVAILABLE_MS });
    const secretFile = join(mkdtempSync(join(tmpdir(), 'pw-sim-secrets-')), 'factuarea-file');
    writeFileSync(secretFile, `${FILE_SECRET}\n${FILE_OLD_SECRET}\n`, { mode: 0o600 });
    const cli = startCli(
      [
        ...['simulate', '--url', gateway.url, '--admin-url', direct, '--endpoint', 'factuarea-file', '--provider', 'factuarea'],
        ...['--secret-file', secretFile, '--events', '6', '--time-scale', String(TIME_SCALE), '--json'],
      ],
      { ADMIN_TOKEN: ADMIN },
    );

    // In progress: the orders are created and the service (its proxy) is answering 503 to the first attempts.
    let commandLine = '';
    await until('the first attempt answered 503', () => {
      if (cli.child.exitCode !== null) return true;
      commandLine = commandLineOf(cli.child.pid!);
      return gateway.unavailableAnswers > 0;
    });
    expect(cli.child.exitCode).toBeNull();
    expect(commandLine).toContain(`--secret-file ${secretFile}`);
    for (const value of [FILE_SECRET, FILE_OLD_SECRET, ADMIN]) expect(commandLine).not.toContain(value);

    const out = await cli.exited;
    expect({ code: out.code, stderr: onlyProgress(out.stderr) }).toEqual({ code: 0, stderr: [] });
    const summary: Summary = JSON.parse(out.stdout);
    expect(summary.totals).toMatchObject({ events: 6, accepted: 6, acceptedMoreThanOnce: 0, gaveUp: 0 });
    expect(gateway.unavailableAnswers).toBeGreaterThan(0);
    // ADMIN_TOKEN created the orders (one per Factuarea lifecycle of three events) and they were fulfilled.
    expect(summary.orders).toHaveLength(2);
    for (const value of [FILE_SECRET, FILE_OLD_SECRET, ADMIN]) expect(out.stdout + out.stderr).not.toContain(value);
    await expectRecordedOnceAndFulfilled('factuarea-file', summary);
  });

  it('a wrong secret: Factuarea does not retry a 401, so every event gives up at once; exit 1, the summary names 401 invalid_signature', async () => {
    const out = await run([
      ...['--url', direct, '--endpoint', 'factuarea-wrong', '--provider', 'factuarea', '--secret', 'whsec_not_the_one'],
      ...['--events', '6', '--time-scale', String(TIME_SCALE)],
    ]);
    expect(out.code).toBe(1);
    const lines = out.stdout.trim().split('\n');
    expect(lines).toContain('events: 6 sent of 6, 0 accepted, 0 acknowledged as duplicate only, 0 acknowledged otherwise, 6 gave up');
    expect(lines).toContain('requests: 6 (6 attempts, 0 retries, 0 redeliveries)');
    expect(lines).toContain('  401 invalid_signature: 6');
    expect(lines).toContain('give-ups: 6');
    expect(lines.filter((l) => /^ {2}gave up: [0-9a-f-]{36} \(invoice\.\w+\) after 1 attempt\(s\): 401 invalid_signature \(not retried\)$/.test(l))).toHaveLength(6);
    expect(onlyProgress(out.stderr)).toEqual(['payment-webhooks: simulate: 6 deliveries gave up (6× 401 invalid_signature)']);
    expect(out.stdout + out.stderr).not.toContain('whsec_not_the_one');
    // Nothing was recorded: the signature is checked first.
    expect(await deliveries('factuarea-wrong')).toEqual([]);
  });

  it("a proxy that answers 200 itself: every event acknowledged, none by the service; exit 1 saying the events would be lost", async () => {
    const acknowledging = await proxy({ acknowledgeWebhooks: true });
    const out = await run([
      ...['--url', acknowledging.url, '--endpoint', 'factuarea-sim', '--provider', 'factuarea', '--secret', SECRET],
      ...['--events', '3', '--time-scale', String(TIME_SCALE), '--json'],
    ]);
    expect(out.code).toBe(1);
    const summary: Summary = JSON.parse(out.stdout);
    expect(summary.answers).toEqual({ '200': 3 });
    expect(summary.totals).toMatchObject({ sent: 3, accepted: 0, acknowledgedOtherwise: 3, gaveUp: 0 });
    expect(summary.ok).toBe(false);
    expect(onlyProgress(out.stderr)).toEqual([
      "payment-webhooks: simulate: 3 event(s) acknowledged with a 2xx that is not the service's answer (neither accepted nor duplicate): " +
        'something in front of the service answers for it, and a provider would never send those events again',
    ]);
  });

  it('events the service accepts and rejects (another merchant account): the orders are not fulfilled; exit 1 naming one', async () => {
    const out = await run([
      ...['--url', direct, '--endpoint', 'factuarea-sim', '--provider', 'factuarea', '--secret', SECRET, '--merchant', randomUUID()],
      ...['--events', '3', '--time-scale', String(TIME_SCALE), '--admin-token', ADMIN, '--wait', '3'],
    ]);
    expect(out.code).toBe(1);
    const lines = out.stdout.trim().split('\n');
    expect(lines).toContain('accepted more than once: 0');
    expect(lines).toContain('orders fulfilled: 0/1');
    expect(lines.filter((l) => /^ {2}not fulfilled: order [0-9a-f-]{36} is awaiting_payment$/.test(l))).toHaveLength(1);
    expect(onlyProgress(out.stderr)[0]).toMatch(
      /^payment-webhooks: simulate: 1 of 1 orders not fulfilled within 3 s \(order [0-9a-f-]{36} is awaiting_payment\): look at the archive/,
    );
    // Processed off the request: the three rejections, once they are all there (and no more).
    await until('three deliveries rejected', async () => (await deliveries('factuarea-sim')).filter((r) => r.outcome === 'account_mismatch').length >= 3);
    expect((await deliveries('factuarea-sim')).filter((r) => r.outcome === 'account_mismatch')).toHaveLength(3);
  });

  it('no service at all: every attempt of the schedule is made (a connection failure is retried), then a give-up; exit 1', async () => {
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    const out = await run(['--url', nowhere, '--endpoint', 'x', '--provider', 'factuarea', '--secret', SECRET, '--events', '2', '--time-scale', '1000000', '--json']);
    expect(out.code).toBe(1);
    const summary: Summary = JSON.parse(out.stdout);
    expect(summary.answers).toEqual({ 'connection (ECONNREFUSED)': 16 });
    expect(summary.giveUps.map((g: Row) => [g.attempts, g.reason, g.lastAnswer])).toEqual([
      [8, 'schedule_exhausted', 'connection (ECONNREFUSED)'],
      [8, 'schedule_exhausted', 'connection (ECONNREFUSED)'],
    ]);
    expect(onlyProgress(out.stderr)).toEqual(['payment-webhooks: simulate: 2 deliveries gave up (2× connection (ECONNREFUSED))']);
  });

  it.each([
    ['no --url', ['--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET], 'simulate: --url required'],
    ['a time scale of 0', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET, '--time-scale', '0'], 'simulate: --time-scale must be a positive number, got "0"'],
    ['an unknown schedule', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET, '--schedule', 'weekly'], 'simulate: --schedule must be one of paymos, factuarea, stripe, standard, adyen, paypal, checkout, square, paddle, got "weekly"'],
    ['a ratio above 1', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET, '--duplicates', '2'], 'simulate: --duplicates must be a ratio from 0 to 1, got "2"'],
    ['an unknown option', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET, '--retry', '3'], /^simulate: Unknown option '--retry'/],
    ['an unreadable --secret-file', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret-file', '/nonexistent/secrets'], 'simulate: --secret-file "/nonexistent/secrets": cannot read it (no such file)'],
    ['a wrong admin token', ['--url', 'U', '--endpoint', 'e', '--provider', 'factuarea', '--secret', SECRET, '--admin-token', 'not-the-admin-token'], 'simulate: POST U/orders answered 401 unauthorized; 0 of 4 orders created, no event sent'],
  ])('%s: exit 2 with one line saying why, nothing sent', async (_name, args, message) => {
    const out = await run(args.map((a) => (a === 'U' ? direct : a)));
    expect(out.code).toBe(2);
    const first = out.stderr.split('\n')[0];
    if (message instanceof RegExp) expect(first.replace(/^payment-webhooks: /, '')).toMatch(message);
    else expect(first).toBe(`payment-webhooks: ${message.replace('U/', `${direct}/`)}`);
    expect(out.stdout).toBe('');
    expect(out.stderr).not.toContain(SECRET);
    expect(out.stderr).not.toContain('not-the-admin-token');
  });
});
