import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, loadStandaloneConfig } from './env';
import { DEFAULT_TUNING } from './options';
import { ConfigurationError } from './validate';

const SECRET = 'SUPERSECRET-123';
const STANDARD_SECRET = `whsec_${Buffer.from(SECRET).toString('base64')}`;

type Env = Record<string, string | undefined>;

function configError(env: Env): ConfigurationError {
  try {
    loadStandaloneConfig(env);
  } catch (err) {
    if (err instanceof ConfigurationError) return err;
    throw err;
  }
  throw new Error('expected a ConfigurationError, nothing was thrown');
}

function expectNoSecret(err: ConfigurationError, secret: string): void {
  expect(err.message.includes(secret)).toBe(false);
  expect(String(err.stack).includes(secret)).toBe(false);
  expect(JSON.stringify(err).includes(secret)).toBe(false);
}

/** Secret-bearing variables set in every invalid case below: none may leak into the error. */
const SECRET_ENV: Env = {
  ADMIN_TOKEN: SECRET,
  DATABASE_URL: `postgres://postgres:${SECRET}@127.0.0.1:5432/payments`,
  REDIS_URL: `redis://:${SECRET}@127.0.0.1:6379`,
};

function endpointsJson(over: Record<string, unknown> = {}): string {
  return JSON.stringify([{ id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_1', ...over }]);
}

describe('loadStandaloneConfig', () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pw-env-spec-'));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  function file(name: string, content: string): string {
    const path = join(dir, name);
    writeFileSync(path, content, 'utf8');
    return path;
  }

  describe('defaults', () => {
    it('gives the documented defaults for an empty environment', () => {
      expect(loadStandaloneConfig({})).toEqual({
        port: 3000,
        runHttp: true,
        httpAdapter: 'express',
        options: {
          databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
          schema: 'payment_webhooks',
          routePrefix: '',
          redisUrl: 'redis://127.0.0.1:6379',
          redisCluster: false,
          queuePrefix: 'pw',
          endpoints: [],
          carriers: [],
          carrierTimeoutMs: 10_000,
          carrierMaxAttempts: 15,
          eventSinks: [],
          eventMaxAttempts: 15,
          commandMaxAttempts: 15,
          adminToken: null,
          runWorkers: true,
          inboxRetentionDays: 90,
          webhookMaxBodyBytes: 1_048_576,
          migrationsRun: true,
          preparedStatements: true,
          trustedProxies: [],
          tuning: DEFAULT_TUNING,
        },
      });
    });

    it('exports the default URLs', () => {
      expect(DEFAULT_DATABASE_URL).toBe('postgres://postgres:postgres@127.0.0.1:5432/payments');
      expect(DEFAULT_REDIS_URL).toBe('redis://127.0.0.1:6379');
    });

    it('reads empty and blank variables as unset', () => {
      const blank = ' ';
      expect(
        loadStandaloneConfig({
          PORT: '',
          DATABASE_URL: blank,
          REDIS_URL: '',
          QUEUE_PREFIX: '',
          WEBHOOK_ENDPOINTS: '',
          WEBHOOK_ENDPOINTS_FILE: blank,
          CARRIERS: '',
          CARRIER_URL: '',
          CARRIER_API_KEY: '',
          CARRIER_TIMEOUT_MS: '',
          CARRIER_MAX_ATTEMPTS: blank,
          ADMIN_TOKEN: '',
          RUN_WORKERS: '',
          RUN_HTTP: blank,
          INBOX_RETENTION_DAYS: '',
          WEBHOOK_MAX_BODY_BYTES: '',
          DB_MIGRATIONS_RUN: '',
          TRUSTED_PROXIES: ' ',
        }),
      ).toEqual(loadStandaloneConfig({}));
    });

    it('reads a Stripe Connect endpoint: merchantAccountIds, an expiring secret, apiKey, apiBaseUrl defaulted', () => {
      const secrets = [{ secret: 'whsec_old', expiresAt: '2999-01-01T00:00:00Z' }, 'whsec_new'];
      const env = {
        WEBHOOK_ENDPOINTS: JSON.stringify([
          { id: 'connect', provider: 'stripe', secrets, merchantAccountIds: ['acct_A', 'acct_B'], apiKey: 'sk_test_1' },
        ]),
      };
      expect(loadStandaloneConfig(env).options.endpoints).toEqual([
        {
          id: 'connect',
          provider: 'stripe',
          secrets,
          merchantAccountIds: ['acct_A', 'acct_B'],
          toleranceSeconds: 300,
          apiKey: 'sk_test_1',
          apiBaseUrl: 'https://api.stripe.com',
        },
      ]);
    });

    it('gives every endpoint toleranceSeconds 300 when none is set', () => {
      expect(loadStandaloneConfig({ WEBHOOK_ENDPOINTS: endpointsJson() }).options.endpoints).toEqual([
        { id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 300 },
      ]);
    });
  });

  describe('valid values', () => {
    it('reads every variable', () => {
      const config = loadStandaloneConfig({
        PORT: '8080',
        DATABASE_URL: 'postgresql://db.test:5432/pw',
        REDIS_URL: 'rediss://cache.test:6380',
        QUEUE_PREFIX: 'pw-test',
        WEBHOOK_ENDPOINTS: endpointsJson({ toleranceSeconds: 60 }),
        CARRIERS: JSON.stringify([{ name: 'acme', url: 'https://acme.test/', apiKey: SECRET, timeoutMs: 2000 }]),
        CARRIER_TIMEOUT_MS: '2500',
        CARRIER_MAX_ATTEMPTS: '3',
        ADMIN_TOKEN: 'admin-token',
        RUN_WORKERS: 'false',
        RUN_HTTP: 'true',
        INBOX_RETENTION_DAYS: '7',
        WEBHOOK_MAX_BODY_BYTES: '2048',
        DB_MIGRATIONS_RUN: 'false',
        DB_PREPARED_STATEMENTS: 'false',
        DATABASE_SCHEMA: 'host_payments',
        ROUTE_PREFIX: '/pay',
        HTTP_ADAPTER: 'fastify',
        EVENT_SINKS: JSON.stringify([{ name: 'crm', url: 'https://crm.test/hooks', secret: 'whsec_c2luay1zZWNyZXQtMTYtYnl0ZXM=', types: ['order.paid'] }]),
        COMMAND_MAX_ATTEMPTS: '5',
        EVENT_MAX_ATTEMPTS: '4',
        TRUSTED_PROXIES: '10.0.0.0/8, ::1,::ffff:192.168.0.10',
      });
      expect(config).toEqual({
        port: 8080,
        runHttp: true,
        httpAdapter: 'fastify',
        options: {
          databaseUrl: 'postgresql://db.test:5432/pw',
          schema: 'host_payments',
          routePrefix: '/pay',
          redisUrl: 'rediss://cache.test:6380',
          redisCluster: false,
          queuePrefix: 'pw-test',
          endpoints: [
            { id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 60 },
          ],
          carriers: [{ name: 'acme', url: 'https://acme.test', apiKey: SECRET, timeoutMs: 2000 }],
          carrierTimeoutMs: 2500,
          carrierMaxAttempts: 3,
          eventSinks: [{ name: 'crm', url: 'https://crm.test/hooks', secret: 'whsec_c2luay1zZWNyZXQtMTYtYnl0ZXM=', types: ['order.paid'], timeoutMs: 10_000 }],
          eventMaxAttempts: 4,
          commandMaxAttempts: 5,
          adminToken: 'admin-token',
          runWorkers: false,
          inboxRetentionDays: 7,
          webhookMaxBodyBytes: 2048,
          migrationsRun: false,
          preparedStatements: false,
          trustedProxies: ['10.0.0.0/8', '::1/128', '192.168.0.10/32'],
          tuning: DEFAULT_TUNING,
        },
      });
    });

    it('REDIS_CLUSTER=true: REDIS_URL names the seed nodes, QUEUE_PREFIX a hash-tagged prefix', () => {
      const { options } = loadStandaloneConfig({
        REDIS_CLUSTER: 'true',
        REDIS_URL: 'redis://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000',
        QUEUE_PREFIX: '{pw}',
      });
      expect(options).toMatchObject({ redisCluster: true, redisUrl: 'redis://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000', queuePrefix: '{pw}' });
      expect(loadStandaloneConfig({ REDIS_CLUSTER: '1', QUEUE_PREFIX: 'pw:{eu-1}' }).options).toMatchObject({ redisCluster: true, queuePrefix: 'pw:{eu-1}' });
      // Unset, the prefix is {pw} on a cluster.
      expect(loadStandaloneConfig({ REDIS_CLUSTER: 'TRUE' }).options.queuePrefix).toBe('{pw}');
      expect(loadStandaloneConfig({ REDIS_CLUSTER: 'false' }).options).toMatchObject({ redisCluster: false, queuePrefix: 'pw' });
      expect(loadStandaloneConfig({ REDIS_CLUSTER: '' }).options.redisCluster).toBe(false);
    });

    it('QUEUE_PREFIX may hold a hash tag on one server too', () => {
      expect(loadStandaloneConfig({ QUEUE_PREFIX: '{pw}' }).options).toMatchObject({ redisCluster: false, queuePrefix: '{pw}' });
    });

    it.each(['Express', ' FASTIFY '])('HTTP_ADAPTER %j is read without regard to case or spaces', (value) => {
      expect(['express', 'fastify']).toContain(loadStandaloneConfig({ HTTP_ADAPTER: value }).httpAdapter);
    });

    it('accepts PORT 1 and 65535 and spaces around a number', () => {
      expect(loadStandaloneConfig({ PORT: '1' }).port).toBe(1);
      expect(loadStandaloneConfig({ PORT: '65535' }).port).toBe(65535);
      expect(loadStandaloneConfig({ PORT: ' 4000 ' }).port).toBe(4000);
    });

    it('HOST names the address to listen on (absent: every interface); anything but an address or a name stops the start', () => {
      expect(loadStandaloneConfig({}).host).toBeUndefined();
      expect(loadStandaloneConfig({ HOST: '127.0.0.1' }).host).toBe('127.0.0.1');
      expect(loadStandaloneConfig({ HOST: ' ::1 ' }).host).toBe('::1');
      expect(loadStandaloneConfig({ HOST: '[::1]' }).host).toBe('::1');
      for (const HOST of ['127.0.0.1 evil', 'a/b', 'http://x']) {
        expect(() => loadStandaloneConfig({ HOST })).toThrow(
          new ConfigurationError('HOST', 'must be an address or a host name to listen on (127.0.0.1, ::1, 0.0.0.0)'),
        );
      }
    });

    it('runs a worker-only process with RUN_HTTP=false', () => {
      const config = loadStandaloneConfig({ RUN_HTTP: 'false' });
      expect(config.runHttp).toBe(false);
      expect(config.options.runWorkers).toBe(true);
    });

    it.each<[string, boolean]>([
      ['true', true],
      ['TRUE', true],
      [' True ', true],
      ['false', false],
      ['FALSE', false],
      // Also accepted, though the documented values are only true/false.
      ['1', true],
      ['0', false],
    ])('reads the boolean %j as %j', (value, expected) => {
      expect(loadStandaloneConfig({ RUN_WORKERS: value }).options.runWorkers).toBe(expected);
      expect(loadStandaloneConfig({ DB_MIGRATIONS_RUN: value }).options.migrationsRun).toBe(expected);
      expect(loadStandaloneConfig({ DB_PREPARED_STATEMENTS: value }).options.preparedStatements).toBe(expected);
      expect(loadStandaloneConfig({ RUN_HTTP: value }).runHttp).toBe(expected);
    });

    it('reads an empty ADMIN_TOKEN as none, and keeps a set one', () => {
      expect(loadStandaloneConfig({ ADMIN_TOKEN: '' }).options.adminToken).toBe(null);
      expect(loadStandaloneConfig({ ADMIN_TOKEN: '   ' }).options.adminToken).toBe(null);
      expect(loadStandaloneConfig({ ADMIN_TOKEN: 'token-of-16-char' }).options.adminToken).toBe('token-of-16-char');
    });

    it('defines one carrier named default from CARRIER_URL and CARRIER_API_KEY', () => {
      expect(
        loadStandaloneConfig({ CARRIER_URL: 'http://carrier.test:4000/', CARRIER_API_KEY: SECRET }).options.carriers,
      ).toEqual([{ name: 'default', url: 'http://carrier.test:4000', apiKey: SECRET, timeoutMs: undefined }]);
    });

    it('defines the default carrier without an api key when CARRIER_API_KEY is unset', () => {
      expect(loadStandaloneConfig({ CARRIER_URL: 'https://carrier.test' }).options.carriers).toEqual([
        { name: 'default', url: 'https://carrier.test', apiKey: undefined, timeoutMs: undefined },
      ]);
    });

    it('reads WEBHOOK_ENDPOINTS_FILE from a file', () => {
      const path = file(
        'endpoints.json',
        JSON.stringify([
          { id: 'std', provider: 'standard', secrets: [STANDARD_SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 0 },
          { id: 'stripe-main', provider: 'stripe', secrets: ['whsec_aaaa', 'whsec_bbbb'], merchantAccountId: 'acct_1' },
        ]),
      );
      expect(loadStandaloneConfig({ WEBHOOK_ENDPOINTS_FILE: path }).options.endpoints).toEqual([
        { id: 'std', provider: 'standard', secrets: [STANDARD_SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 0 },
        {
          id: 'stripe-main',
          provider: 'stripe',
          secrets: ['whsec_aaaa', 'whsec_bbbb'],
          merchantAccountId: 'acct_1',
          toleranceSeconds: 300,
        },
      ]);
    });
  });

  describe('invalid configuration', () => {
    function expectError(env: Env, message: string, secret = SECRET): ConfigurationError {
      const err = configError({ ...SECRET_ENV, ...env });
      expect(err.message).toBe(message);
      expectNoSecret(err, secret);
      return err;
    }

    describe('DATABASE_SCHEMA, ROUTE_PREFIX and HTTP_ADAPTER', () => {
      it.each(['Payments', 'pay-ments', 'x;drop table orders', '1st'])('DATABASE_SCHEMA=%j', (value) => {
        const err = expectError({ DATABASE_SCHEMA: value }, 'DATABASE_SCHEMA: must be a plain identifier: [a-z_][a-z0-9_]{0,62}');
        expect(err.setting).toBe('DATABASE_SCHEMA');
      });
      it('ROUTE_PREFIX with a space', () => {
        const err = expectError(
          { ROUTE_PREFIX: '/pay here' },
          'ROUTE_PREFIX: must be a path of plain segments such as /pay (letters, digits, . _ ~ -)',
        );
        expect(err.setting).toBe('ROUTE_PREFIX');
      });
      it.each([
        ['not JSON', '[{', 'EVENT_SINKS: is not valid JSON'],
        ['a sink without a secret', JSON.stringify([{ name: 'crm', url: 'https://crm.test' }]), 'EVENT_SINKS: sink "crm": "secret" must be a Standard Webhooks secret'],
        ['a sink without a url', JSON.stringify([{ name: 'crm', secret: 'whsec_c2luay1zZWNyZXQtMTYtYnl0ZXM=' }]), 'EVENT_SINKS: sink "crm": "url" must be an http(s) URL'],
        ['a sink without a name', JSON.stringify([{ url: 'https://crm.test', secret: 'whsec_c2luay1zZWNyZXQtMTYtYnl0ZXM=' }]), 'EVENT_SINKS: sink #1: "name" is required'],
      ])('EVENT_SINKS with %s: one line naming EVENT_SINKS, never the secret', (_name, value, message) => {
        const err = configError({ ...SECRET_ENV, EVENT_SINKS: value });
        expect(err.message.startsWith(message)).toBe(true);
        expect(err.setting).toBe('EVENT_SINKS');
        expect(err.message).not.toContain('c2luaw');
      });
      it('COMMAND_MAX_ATTEMPTS=0', () => {
        expect(configError({ ...SECRET_ENV, COMMAND_MAX_ATTEMPTS: '0' }).message).toBe('COMMAND_MAX_ATTEMPTS: must be a positive integer');
      });
      it('EVENT_MAX_ATTEMPTS=0', () => {
        expect(configError({ ...SECRET_ENV, EVENT_MAX_ATTEMPTS: '0' }).message).toBe('EVENT_MAX_ATTEMPTS: must be a positive integer');
      });
      it.each([
        ['proxy.internal', 'TRUSTED_PROXIES: entry #1 "proxy.internal" is not an IP address or a CIDR range'],
        ['10.0.0.1,10.0.0.300', 'TRUSTED_PROXIES: entry #2 "10.0.0.300" is not an IP address or a CIDR range'],
        ['10.0.0.0/33', 'TRUSTED_PROXIES: entry #1 "10.0.0.0/33" has a prefix length that is not 0–32'],
        ['10.0.0.1,', 'TRUSTED_PROXIES: entry #2 is empty or not a string'],
        ['10.0.0.1,,::1', 'TRUSTED_PROXIES: entry #2 is empty or not a string'],
      ])('TRUSTED_PROXIES=%j', (value, message) => {
        const err = expectError({ TRUSTED_PROXIES: value }, message);
        expect(err.setting).toBe('TRUSTED_PROXIES');
      });
      it.each(['koa', 'hapi', 'express5'])('HTTP_ADAPTER=%j', (value) => {
        const err = expectError({ HTTP_ADAPTER: value }, 'HTTP_ADAPTER: must be express or fastify');
        expect(err.setting).toBe('HTTP_ADAPTER');
      });
    });

    describe('number settings that are not positive integers', () => {
      it.each([
        ['PORT', 'abc'],
        ['PORT', '0'],
        ['PORT', '-1'],
        ['PORT', '80.5'],
        ['PORT', '3e3'],
        ['PORT', '0x50'],
        ['CARRIER_MAX_ATTEMPTS', '0'],
        ['CARRIER_MAX_ATTEMPTS', 'ten'],
        ['WEBHOOK_MAX_BODY_BYTES', '-1'],
        ['WEBHOOK_MAX_BODY_BYTES', '1MB'],
        ['CARRIER_TIMEOUT_MS', '1.5'],
        ['CARRIER_TIMEOUT_MS', '99999999999999999999'],
        ['INBOX_RETENTION_DAYS', 'abc'],
        ['INBOX_RETENTION_DAYS', '00'],
      ])('%s=%j', (name, value) => {
        const err = expectError({ [name]: value }, `${name}: must be a positive integer`);
        expect(err.setting).toBe(name);
      });

      it('PORT above 65535', () => {
        expectError({ PORT: '65536' }, 'PORT: must be at most 65535');
      });

      it('INBOX_RETENTION_DAYS=6 (under 7)', () => {
        const err = expectError({ INBOX_RETENTION_DAYS: '6' }, 'INBOX_RETENTION_DAYS: must be at least 7');
        expect(err.setting).toBe('INBOX_RETENTION_DAYS');
      });
    });

    describe('booleans that are not true/false', () => {
      it.each([
        ['RUN_WORKERS', 'yes'],
        ['RUN_HTTP', 'no'],
        ['DB_MIGRATIONS_RUN', 'maybe'],
        ['RUN_WORKERS', '2'],
        ['REDIS_CLUSTER', 'yes'],
      ])('%s=%j', (name, value) => {
        expectError({ [name]: value }, `${name}: must be true or false`);
      });

      it('RUN_HTTP and RUN_WORKERS both false', () => {
        expectError(
          { RUN_HTTP: 'false', RUN_WORKERS: 'false' },
          'RUN_HTTP and RUN_WORKERS: are both false; the process would do nothing',
        );
      });
    });

    describe('WEBHOOK_ENDPOINTS', () => {
      it.each([
        ['an unquoted secret', `[{"id":"p","secrets":[${SECRET}]}]`],
        ['a truncated array', `[{"id":"p","secrets":["${SECRET}"]`],
        ['a bare secret', SECRET],
      ])('bad JSON (%s) is named and the secret is not echoed', (_label, text) => {
        const err = configError({ ...SECRET_ENV, WEBHOOK_ENDPOINTS: text });
        expect(err.setting).toBe('WEBHOOK_ENDPOINTS');
        expect(err.message).toMatch(/^WEBHOOK_ENDPOINTS: is not valid JSON( \(error at character \d+\))?$/);
        expectNoSecret(err, SECRET);
      });

      it('not an array', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: JSON.stringify({ id: 'p', secrets: [SECRET] }) },
          'WEBHOOK_ENDPOINTS: must be a JSON array of endpoint definitions',
        );
      });

      it('unknown provider', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ provider: 'worldpay' }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": unknown provider "worldpay" (expected one of paymos, factuarea, stripe, standard, adyen, mollie, paypal, checkout, square, paddle)',
        );
      });

      it('no secrets', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ secrets: undefined }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "secrets" must be a non-empty array of non-empty strings',
        );
      });

      it('an empty secrets array', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ secrets: [] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "secrets" must be a non-empty array of non-empty strings',
        );
      });

      it('a secrets array holding an empty string beside a secret', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ secrets: [SECRET, ''] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "secrets" must be a non-empty array of non-empty strings',
        );
      });

      it('missing merchantAccountId', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ merchantAccountId: undefined }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "merchantAccountId" is required',
        );
      });

      it('a multi-account endpoint with both merchantAccountId and merchantAccountIds', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ provider: 'stripe', merchantAccountIds: ['acct_A'] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": set "merchantAccountId" or "merchantAccountIds", not both',
        );
      });

      it('merchantAccountIds on paymos', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ merchantAccountId: undefined, merchantAccountIds: ['acc_1'] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "merchantAccountIds" is not available for paymos (its bodies declare no account); use "merchantAccountId"',
        );
      });

      it('every secret already expired, without echoing it', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ secrets: [{ secret: SECRET, expiresAt: '2020-01-01T00:00:00Z' }] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": every secret has already expired ("expiresAt" is in the past)',
        );
      });

      it('an expiresAt without a timezone, without echoing the secret', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ secrets: [{ secret: SECRET, expiresAt: '2999-01-01T00:00:00' }] }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": secret #1: "expiresAt" must be an ISO 8601 instant with a timezone, such as 2026-01-31T00:00:00Z',
        );
      });

      it('an apiKey on a paymos endpoint, without echoing it', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ apiKey: 'sk_live_APIKEYVALUE' }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "apiKey" and "apiBaseUrl" are for stripe, adyen, mollie, paypal, checkout, square and paddle endpoints only',
          'sk_live_APIKEYVALUE',
        );
      });

      it('a stripe apiBaseUrl that is not http(s), without echoing the apiKey', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ provider: 'stripe', apiKey: 'sk_live_APIKEYVALUE', apiBaseUrl: 'ftp://x' }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "apiBaseUrl" must be an http(s) URL',
          'sk_live_APIKEYVALUE',
        );
      });

      it('a standard secret not starting with whsec_', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ id: 'std', provider: 'standard', secrets: [SECRET] }) },
          'WEBHOOK_ENDPOINTS: endpoint "std": secret #1 must start with "whsec_" or "whpk_" (Standard Webhooks)',
        );
      });

      it('a standard secret that is not base64 after whsec_', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ id: 'std', provider: 'standard', secrets: [`whsec_${SECRET}`] }) },
          'WEBHOOK_ENDPOINTS: endpoint "std": secret #1 is not base64 after "whsec_"',
        );
      });

      it('a duplicate endpoint id', () => {
        const one = { id: 'dup', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'a' };
        expectError(
          { WEBHOOK_ENDPOINTS: JSON.stringify([one, { ...one, provider: 'stripe' }]) },
          'WEBHOOK_ENDPOINTS: duplicate endpoint id "dup"',
        );
      });

      it.each([
        ['upper case', 'Paymos-Main'],
        ['too long (65 characters)', 'a'.repeat(65)],
        ['an underscore', 'paymos_main'],
      ])('a bad endpoint id: %s', (_label, id) => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ id }) },
          'WEBHOOK_ENDPOINTS: endpoint #1: "id" must match [a-z0-9-]{1,64}',
        );
      });

      it('a negative toleranceSeconds', () => {
        expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson({ toleranceSeconds: -5 }) },
          'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "toleranceSeconds" must be a non-negative integer',
        );
      });

      it('both WEBHOOK_ENDPOINTS and WEBHOOK_ENDPOINTS_FILE, naming both', () => {
        const path = file('both.json', endpointsJson());
        const err = expectError(
          { WEBHOOK_ENDPOINTS: endpointsJson(), WEBHOOK_ENDPOINTS_FILE: path },
          'WEBHOOK_ENDPOINTS and WEBHOOK_ENDPOINTS_FILE: both are set; set only one',
        );
        expect(err.setting).toBe('WEBHOOK_ENDPOINTS and WEBHOOK_ENDPOINTS_FILE');
      });
    });

    describe('WEBHOOK_ENDPOINTS_FILE', () => {
      it('a path that does not exist', () => {
        const path = join(dir, 'does-not-exist.json');
        const err = expectError({ WEBHOOK_ENDPOINTS_FILE: path }, `WEBHOOK_ENDPOINTS_FILE: cannot read ${path} (ENOENT)`);
        expect(err.setting).toBe('WEBHOOK_ENDPOINTS_FILE');
      });

      it('a directory', () => {
        expectError({ WEBHOOK_ENDPOINTS_FILE: dir }, `WEBHOOK_ENDPOINTS_FILE: cannot read ${dir} (EISDIR)`);
      });

      it('bad JSON in the file, without echoing it', () => {
        const path = file('bad.json', `[{"id":"p","secrets":[${SECRET}]}]`);
        const err = configError({ ...SECRET_ENV, WEBHOOK_ENDPOINTS_FILE: path });
        expect(err.message).toMatch(/^WEBHOOK_ENDPOINTS_FILE: is not valid JSON( \(error at character \d+\))?$/);
        expectNoSecret(err, SECRET);
      });

      it('an invalid definition in the file is reported under WEBHOOK_ENDPOINTS_FILE', () => {
        const path = file('no-secrets.json', endpointsJson({ secrets: [] }));
        expectError(
          { WEBHOOK_ENDPOINTS_FILE: path },
          'WEBHOOK_ENDPOINTS_FILE: endpoint "paymos-main": "secrets" must be a non-empty array of non-empty strings',
        );
      });

      it('a standard secret without whsec_ in the file, without echoing it', () => {
        const path = file('standard.json', endpointsJson({ id: 'std', provider: 'standard', secrets: [SECRET] }));
        expectError(
          { WEBHOOK_ENDPOINTS_FILE: path },
          'WEBHOOK_ENDPOINTS_FILE: endpoint "std": secret #1 must start with "whsec_" or "whpk_" (Standard Webhooks)',
        );
      });
    });

    describe('carriers', () => {
      it('both CARRIERS and CARRIER_URL, naming both', () => {
        const err = expectError(
          {
            CARRIERS: JSON.stringify([{ name: 'acme', url: 'https://acme.test', apiKey: SECRET }]),
            CARRIER_URL: 'https://other.test',
            CARRIER_API_KEY: SECRET,
          },
          'CARRIERS and CARRIER_URL: both are set; set only one',
        );
        expect(err.setting).toBe('CARRIERS and CARRIER_URL');
      });

      it('bad CARRIERS JSON, without echoing an api key', () => {
        const err = configError({ ...SECRET_ENV, CARRIERS: `[{"name":"acme","apiKey":${SECRET}}]` });
        expect(err.message).toMatch(/^CARRIERS: is not valid JSON( \(error at character \d+\))?$/);
        expectNoSecret(err, SECRET);
      });

      it('CARRIERS not an array', () => {
        expectError(
          { CARRIERS: JSON.stringify({ name: 'acme', url: 'https://acme.test', apiKey: SECRET }) },
          'CARRIERS: must be a JSON array of carrier definitions',
        );
      });

      it('a CARRIERS entry with a bad url', () => {
        expectError(
          { CARRIERS: JSON.stringify([{ name: 'acme', url: 'ftp://acme.test', apiKey: SECRET }]) },
          'CARRIERS: carrier "acme": "url" must be an http(s) URL',
        );
      });

      it('a CARRIER_URL that is not http(s) is reported under CARRIER_URL', () => {
        expectError(
          { CARRIER_URL: `ftp://user:${SECRET}@carrier.test`, CARRIER_API_KEY: SECRET },
          'CARRIER_URL: carrier "default": "url" must be an http(s) URL',
        );
      });

      it('CARRIER_API_KEY without CARRIER_URL', () => {
        expectError({ CARRIER_API_KEY: SECRET }, 'CARRIER_API_KEY: is set without CARRIER_URL');
      });
    });

    describe('URLs and prefix', () => {
      it('a DATABASE_URL that is not PostgreSQL, without echoing its password', () => {
        expectError(
          { DATABASE_URL: `mysql://root:${SECRET}@127.0.0.1/payments` },
          'DATABASE_URL: must start with postgres:// or postgresql://',
        );
      });

      it('an unparseable DATABASE_URL, without echoing it', () => {
        expectError({ DATABASE_URL: `${SECRET}@nowhere` }, 'DATABASE_URL: is not a valid URL');
      });

      it('a REDIS_URL that is not Redis, without echoing its password', () => {
        expectError({ REDIS_URL: `http://:${SECRET}@127.0.0.1:6379` }, 'REDIS_URL: must start with redis:// or rediss://');
      });

      it('a QUEUE_PREFIX with a space', () => {
        expectError({ QUEUE_PREFIX: 'p w' }, 'QUEUE_PREFIX: must be 1–64 characters of letters, digits, _ . : -');
      });

      it.each(['{}', '{pw', 'pw}', '{a}{b}'])('a QUEUE_PREFIX with the malformed hash tag %j', (value) => {
        expectError(
          { QUEUE_PREFIX: value },
          'QUEUE_PREFIX: may hold one hash tag only: a { and a later }, with something between them, such as {pw}',
        );
      });

      it('REDIS_CLUSTER=true with a QUEUE_PREFIX without a hash tag', () => {
        const err = expectError({ REDIS_CLUSTER: 'true', QUEUE_PREFIX: 'pw' }, 'QUEUE_PREFIX: must contain a hash tag such as {pw} on a Redis Cluster');
        expect(err.setting).toBe('QUEUE_PREFIX');
      });

      it('REDIS_CLUSTER=true with seeds that are not host:port, without echoing the password', () => {
        expectError({ REDIS_CLUSTER: 'true', REDIS_URL: `redis://:${SECRET}@a:7000,:7001` }, 'REDIS_URL: has a seed that is not host:port');
      });

      it('several seeds without REDIS_CLUSTER', () => {
        expectError({ REDIS_URL: `redis://:${SECRET}@a:7000,b:7001` }, 'REDIS_URL: is not a valid URL');
      });
    });

    describe('a JSON setting that is valid JSON but not an array', () => {
      // `null` must not read as "none": a typo would leave every webhook answering 404.
      it('WEBHOOK_ENDPOINTS=null is rejected', () => {
        expect(configError({ WEBHOOK_ENDPOINTS: 'null' }).message).toBe(
          'WEBHOOK_ENDPOINTS: must be a JSON array of endpoint definitions',
        );
      });

      it('CARRIERS=null is rejected', () => {
        expect(configError({ CARRIERS: 'null' }).message).toBe('CARRIERS: must be a JSON array of carrier definitions');
      });
    });
  });
});
