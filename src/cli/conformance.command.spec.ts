import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { conformanceCommand } from './conformance.command';
import { CliContext, CliExit, EXIT, RemoteEnv } from './context';
import { ConformanceOptions, runConformance } from './remote/conformance';

// The checks themselves run against a built service (test/cli/conformance.e2e-spec.ts); here,
// only what the command hands them and what it refuses before sending anything.
jest.mock('./remote/conformance', () => ({
  ...jest.requireActual('./remote/conformance'),
  runConformance: jest.fn(async () => [{ check: 'reachable', pass: true, detail: 'ok' }]),
}));
const run = runConformance as jest.MockedFunction<typeof runConformance>;

/** A port nothing listens on (one the system just gave out and took back). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

const SECRET = 'whsec_C0nfSecret_new';
const OLD = 'whsec_C0nfSecret_old';
const TOKEN = 'adm-C0nf-token';
const BASE = ['--url', 'http://127.0.0.1:3000/pay', '--endpoint', 'stripe-main', '--provider', 'stripe'];

function context(args: string[], remoteEnv: RemoteEnv = {}): CliContext & { lines: string[] } {
  const lines: string[] = [];
  return {
    args,
    remoteEnv,
    lines,
    get config(): never {
      throw new Error('conformance read the service environment');
    },
    out: (line) => lines.push(line),
    connect: () => Promise.reject(new Error('conformance opened the database')),
  };
}

async function exitOf(ctx: CliContext): Promise<CliExit> {
  const err = await conformanceCommand.run(ctx).then(
    () => new Error('no CliExit'),
    (e: unknown) => e,
  );
  if (err instanceof CliExit) return err;
  throw err;
}

describe('payment-webhooks conformance: the secrets and the token', () => {
  const dir = mkdtempSync(join(tmpdir(), 'pw-conformance-'));
  const secretFile = (text: string) => {
    const path = join(dir, `secrets-${Math.random().toString(36).slice(2)}`);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  beforeEach(() => run.mockClear());

  it('--secret-file (a rotation) and ADMIN_TOKEN: the checks sign with both lines and use the token; nothing printed holds them', async () => {
    const ctx = context([...BASE, '--secret-file', secretFile(`${SECRET}\n${OLD}\n`), '--json'], { ADMIN_TOKEN: TOKEN });
    expect(await conformanceCommand.run(ctx)).toBe(EXIT.ok);
    const options: ConformanceOptions = run.mock.calls[0][0];
    expect(options).toMatchObject({ secrets: [SECRET, OLD], adminToken: TOKEN });
    for (const value of [SECRET, OLD, TOKEN]) expect(ctx.lines.join('\n')).not.toContain(value);
  });

  it('--admin-token wins over ADMIN_TOKEN', async () => {
    await conformanceCommand.run(context([...BASE, '--secret', SECRET, '--admin-token', TOKEN], { ADMIN_TOKEN: 'other' }));
    expect(run.mock.calls[0][0]).toMatchObject({ secrets: [SECRET], adminToken: TOKEN });
  });

  it.each([
    ['neither secret nor token', [], {}, 'conformance: --secret (or --secret-file), --admin-token (or ADMIN_TOKEN) required'],
    ['an empty ADMIN_TOKEN', ['--secret', SECRET], { ADMIN_TOKEN: '' }, 'conformance: --admin-token (or ADMIN_TOKEN) required'],
    ['both --secret and --secret-file', ['--secret', OLD, '--secret-file', '/run/secrets/stripe'], { ADMIN_TOKEN: TOKEN }, 'conformance: --secret and --secret-file together: give the secrets one way (--secret-file keeps them out of ps)'],
    ['an unreadable --secret-file', ['--secret-file', '/nonexistent/stripe'], { ADMIN_TOKEN: TOKEN }, 'conformance: --secret-file "/nonexistent/stripe": cannot read it (no such file)'],
    ['an explicit empty --admin-token', ['--secret', SECRET, '--admin-token', ''], { ADMIN_TOKEN: TOKEN }, 'conformance: --admin-token must not be empty'],
    ['ADMIN_TOKEN with a newline', ['--secret', SECRET], { ADMIN_TOKEN: `${TOKEN}\n` }, 'conformance: ADMIN_TOKEN must not contain control characters (a trailing newline from a file?)'],
  ])('%s: exit 2 with one line (then the usage, when missing), never a value; nothing sent', async (_name, extra, env, message) => {
    const e = await exitOf(context([...BASE, ...extra], env));
    expect(e.code).toBe(EXIT.couldNotRun);
    expect(e.message.split('\n')[0]).toBe(message);
    for (const value of [SECRET, OLD, TOKEN]) expect(e.message).not.toContain(value);
    expect(run).not.toHaveBeenCalled();
  });

  it('an empty secret file: exit 2 naming the path', async () => {
    const path = secretFile('\n\n');
    const e = await exitOf(context([...BASE, '--secret-file', path], { ADMIN_TOKEN: TOKEN }));
    expect(e.message).toBe(`conformance: --secret-file "${path}" holds no secret (one a line; blank lines and # comments are skipped)`);
  });

  const ADYEN = ['--url', 'http://127.0.0.1:3000', '--endpoint', 'adyen-main', '--provider', 'adyen'];
  const HEX = 'A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90';

  it('adyen: the hex key and --merchant are handed to the checks, which run tampered in place of reserialised', async () => {
    const ctx = context([...ADYEN, '--secret', HEX, '--merchant', 'ShopEU'], { ADMIN_TOKEN: TOKEN });
    expect(await conformanceCommand.run(ctx)).toBe(EXIT.ok);
    expect(run.mock.calls[0][0]).toMatchObject({ provider: 'adyen', secrets: [HEX], merchant: 'ShopEU' });
    const { checksFor } = jest.requireActual('./remote/conformance') as typeof import('./remote/conformance');
    expect(checksFor('adyen')).toEqual(['reachable', 'signature', 'delivery', 'duplicate', 'concurrent', 'stale', 'amount', 'reprocess', 'tampered', 'reconciliation']);
    expect(checksFor('stripe')).toEqual(['reachable', 'signature', 'delivery', 'duplicate', 'concurrent', 'stale', 'amount', 'reprocess', 'reserialised', 'reconciliation']);
  });

  it.each([
    ['an unknown provider', ['--url', 'http://h', '--endpoint', 'e', '--provider', 'braintree', '--secret', SECRET], 'conformance: --provider must be one of paymos, factuarea, stripe, standard, adyen, paypal, checkout, square, paddle'],
    [
      'mollie',
      ['--url', 'http://h', '--endpoint', 'e', '--provider', 'mollie', '--secret', 'test_key'],
      "conformance: --provider mollie cannot be played: a Mollie delivery is an unsigned hint, authenticated by the service fetching the payment from Mollie's API, which no sender but Mollie can answer; see docs/going-live.md#mollie-check-it-with-mollie-itself",
    ],
    ['adyen, a key that is not hex', [...ADYEN, '--secret', SECRET, '--merchant', 'ShopEU'], 'conformance: each secret of an adyen endpoint must be the hex HMAC key the Customer Area shows (an even number of hex digits)'],
    ['adyen without --merchant', [...ADYEN, '--secret', HEX], "conformance: --provider adyen needs --merchant <merchantAccountCode>: every item declares its merchant account (the endpoint's merchantAccountId)"],
  ])('%s: exit 2 with one line, nothing sent, never the key', async (_name, argv, message) => {
    run.mockClear();
    const e = await exitOf(context(argv, { ADMIN_TOKEN: TOKEN }));
    expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
    expect(e.message).not.toContain(HEX);
    expect(run).not.toHaveBeenCalled();
  });

  it('the usage lists the providers the checks play, and says why not mollie', () => {
    expect(conformanceCommand.usage).toContain('--provider paymos|factuarea|stripe|standard|adyen|paypal|checkout|square|paddle\n');
    expect(conformanceCommand.usage).toContain("mollie is refused: its deliveries are authenticated by fetching the payment from Mollie's API.");
  });

  describe('--payload-style thin: the kit serves the objects its notifications name', () => {
    const KEY = 'sk_test_C0nfThinKey_51NqZ8cQ2x7';
    const keyFile = () => secretFile(`# the endpoint's apiKey\n${KEY}\n`);

    it('serves for the run at --serve-objects (the key from --stripe-api-key-file) and hands the server to the checks; closed after', async () => {
      const port = await freePort();
      let seen: { url: string; key: number } | undefined;
      run.mockImplementationOnce(async (o: ConformanceOptions) => {
        const url = `${o.objects!.url}/v1/payment_intents/pi_x`;
        const refused = await fetch(url, { headers: { authorization: 'Bearer sk_test_other' } });
        seen = { url: o.objects!.url, key: refused.status };
        return [{ check: 'reachable', pass: true, detail: 'ok' }];
      });
      const ctx = context([...BASE, '--secret', SECRET, '--payload-style', 'thin', '--serve-objects', `127.0.0.1:${port}`, '--stripe-api-key-file', keyFile(), '--json'], { ADMIN_TOKEN: TOKEN });
      expect(await conformanceCommand.run(ctx)).toBe(EXIT.ok);
      expect(run.mock.calls[0][0]).toMatchObject({ provider: 'stripe', payloadStyle: 'thin' });
      expect(seen!.url).toBe(`http://127.0.0.1:${port}`);
      expect(seen!.key).toBe(401);
      const report = JSON.parse(ctx.lines.join('\n'));
      expect(report).toMatchObject({ payloadStyle: 'thin', objects: { url: seen!.url, requests: 1, answers: { '401': 1 } } });
      expect(ctx.lines.join('\n')).not.toContain(KEY);
      await expect(fetch(`${seen!.url}/v1/payment_intents/pi_x`)).rejects.toThrow();
    });

    it('snapshot by default: no server, no thin options handed on', async () => {
      await conformanceCommand.run(context([...BASE, '--secret', SECRET], { ADMIN_TOKEN: TOKEN }));
      expect(run.mock.calls[0][0]).toMatchObject({ payloadStyle: 'snapshot', objects: undefined });
    });

    it('the checks of thin: missing-object and fetched-once before reprocess; snapshot runs neither', () => {
      const { checksFor } = jest.requireActual('./remote/conformance') as typeof import('./remote/conformance');
      expect(checksFor('stripe', 'thin')).toEqual([
        'reachable',
        'signature',
        'delivery',
        'duplicate',
        'concurrent',
        'stale',
        'amount',
        'missing-object',
        'fetched-once',
        'reprocess',
        'reserialised',
        'reconciliation',
      ]);
      expect(checksFor('stripe', 'snapshot')).toEqual(checksFor('stripe'));
    });

    it.each([
      ['thin for another provider', ['--url', 'http://h', '--endpoint', 'e', '--provider', 'paymos', '--secret', SECRET, '--payload-style', 'thin'], "conformance: --payload-style applies to stripe only (thin event notifications are Stripe's), not paymos"],
      ['an unknown style', [...BASE, '--secret', SECRET, '--payload-style', 'fat'], 'conformance: --payload-style must be one of snapshot, thin, got "fat"'],
      [
        'thin without --serve-objects',
        [...BASE, '--secret', SECRET, '--payload-style', 'thin'],
        "conformance: --payload-style thin needs --serve-objects <host:port>: the service's thin endpoint reads the objects its notifications name there (its apiBaseUrl http://<host:port>)",
      ],
      ['--serve-objects without thin', [...BASE, '--secret', SECRET, '--serve-objects', '127.0.0.1:8787'], 'conformance: --serve-objects applies to --payload-style thin only'],
      ['a URL for --serve-objects', [...BASE, '--secret', SECRET, '--payload-style', 'thin', '--serve-objects', 'http://127.0.0.1:8787'], 'conformance: --serve-objects must be <host>:<port> (e.g. 127.0.0.1:8787, [::1]:8787; a port from 1 to 65535), got "http://127.0.0.1:8787"'],
      ['an unreadable key file', [...BASE, '--secret', SECRET, '--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', '/nonexistent/key'], 'conformance: --stripe-api-key-file "/nonexistent/key": cannot read it (no such file)'],
    ])('%s: exit 2 with one line, nothing sent', async (_name, argv, message) => {
      const e = await exitOf(context(argv, { ADMIN_TOKEN: TOKEN }));
      expect({ code: e.code, message: e.message }).toEqual({ code: EXIT.couldNotRun, message });
      expect(run).not.toHaveBeenCalled();
    });

    it('a key file of two keys: exit 2 naming the path, never a key', async () => {
      const path = secretFile(`${KEY}\nsk_test_second\n`);
      const e = await exitOf(context([...BASE, '--secret', SECRET, '--payload-style', 'thin', '--serve-objects', '127.0.0.1:8787', '--stripe-api-key-file', path], { ADMIN_TOKEN: TOKEN }));
      expect(e.message).toBe(`conformance: --stripe-api-key-file "${path}" holds 2 keys: one key, the endpoint's apiKey`);
      expect(e.message).not.toContain('sk_test');
    });

    it('the usage names the thin options and the thin checks', () => {
      expect(conformanceCommand.usage).toContain('[--payload-style snapshot|thin --serve-objects <host:port> [--stripe-api-key-file <path>]]');
      expect(conformanceCommand.usage).toContain('    missing-object  thin only: a notification whose object does not exist');
      expect(conformanceCommand.usage).toContain('    fetched-once    thin only: each notification recorded so far made exactly one request');
    });
  });

  it('the usage shows --secret-file and ADMIN_TOKEN', () => {
    expect(conformanceCommand.usage).toContain('--secret-file <path> | --secret <s> [--admin-token <t>]');
    expect(conformanceCommand.usage).toContain('ADMIN_TOKEN from the environment');
  });
});

describe('payment-webhooks conformance: paypal, checkout, square, paddle', () => {
  beforeEach(() => run.mockClear());
  const target = (provider: string) => ['--url', 'http://127.0.0.1:3000', '--endpoint', `${provider}-main`, '--provider', provider, '--admin-token', TOKEN];

  it('square: the notification URL handed to the checks; paypal: the kit serves its certificate for the run, named to the checks', async () => {
    await conformanceCommand.run(context([...target('square'), '--secret', 'sq-key', '--merchant', 'SELLER', '--notification-url', 'https://shop.example.com/webhooks/sq']));
    expect(run.mock.calls[0][0]).toMatchObject({ provider: 'square', secrets: ['sq-key'], merchant: 'SELLER', notificationUrl: 'https://shop.example.com/webhooks/sq' });
    const port = await freePort();
    await conformanceCommand.run(context([...target('paypal'), '--secret', 'WH-1', '--paypal-cert-port', String(port)]));
    expect(run.mock.calls[1][0]).toMatchObject({ provider: 'paypal', secrets: ['WH-1'], paypalCertUrl: `https://127.0.0.1:${port}/v1/notifications/certs/CERT-nestjs-payment-webhooks-test` });
    // Closed once the checks ended: the port is free again.
    await conformanceCommand.run(context([...target('paypal'), '--secret', 'WH-1', '--paypal-cert-port', String(port)]));
    expect(run).toHaveBeenCalledTimes(3);
  });

  it.each([
    ['paypal', ['--secret', 'has spaces'], 'conformance: --secret of a paypal endpoint is its webhookId, the id PayPal shows for the webhook (letters, digits, - and _)'],
    ['checkout', ['--secret', 'k', '--paypal-cert-port', '1'], 'conformance: --paypal-cert-port applies to paypal only, not checkout'],
    ['square', ['--secret', 'k', '--merchant', 'S'], "conformance: --provider square needs --notification-url <the endpoint's notificationUrl>: Square signs the https URL registered on the subscription, and http://127.0.0.1:3000/webhooks/square-main is not one"],
  ])('%s %j: exit 2 with one line, nothing run', async (provider, extra, message) => {
    const err = await exitOf(context([...target(provider), ...extra]));
    expect([err.code, err.message]).toEqual([EXIT.couldNotRun, message]);
    expect(run).not.toHaveBeenCalled();
  });

  it('paypal, a --paypal-cert-port already taken: exit 2 naming the port', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const err = await exitOf(context([...target('paypal'), '--secret', 'WH-1', '--paypal-cert-port', String(port)]));
      expect([err.code, err.message]).toEqual([EXIT.couldNotRun, `conformance: --paypal-cert-port ${port}: the kit's certificate server could not listen on 127.0.0.1:${port} (EADDRINUSE)`]);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    expect(run).not.toHaveBeenCalled();
  });
});
