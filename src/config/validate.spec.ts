import { generateV1aKeyPair } from '../providers/standard-keys';
import { DEFAULT_TUNING, PaymentWebhooksOptions } from './options';
import {
  ConfigurationError,
  isHttpUrl,
  parseJsonSetting,
  resolveOptions,
  validateCarriers,
  validateEndpoints,
} from './validate';

const SECRET = 'SUPERSECRET-123';
const SECRET_B64 = Buffer.from(SECRET).toString('base64');

/** The ConfigurationError `fn` throws (fails the test if it throws nothing or something else). */
function configError(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigurationError) return err;
    throw err;
  }
  throw new Error('expected a ConfigurationError, nothing was thrown');
}

/** A secret must not be anywhere a logger could print it. */
function expectNoSecret(err: ConfigurationError, secret: string): void {
  expect(err.message.includes(secret)).toBe(false);
  expect(err.problem.includes(secret)).toBe(false);
  expect(err.setting.includes(secret)).toBe(false);
  expect(String(err.stack).includes(secret)).toBe(false);
  expect(String(err).includes(secret)).toBe(false);
  expect(JSON.stringify(err).includes(secret)).toBe(false);
}

function endpoint(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_1', ...over };
}

describe('ConfigurationError', () => {
  it('names the setting and the problem in one line', () => {
    const err = new ConfigurationError('PORT', 'must be a positive integer');
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ConfigurationError');
    expect(err.setting).toBe('PORT');
    expect(err.problem).toBe('must be a positive integer');
    expect(err.message).toBe('PORT: must be a positive integer');
  });
});

describe('parseJsonSetting', () => {
  it('returns the parsed value', () => {
    expect(parseJsonSetting('X', '[{"a":1}]')).toEqual([{ a: 1 }]);
    expect(parseJsonSetting('X', 'null')).toBe(null);
  });

  it.each([
    ['an unquoted secret', `[{"secrets":[${SECRET}]}]`],
    ['an unterminated array after a secret', `[{"secrets":["${SECRET}"]`],
    ['a trailing comma after a secret', `[{"secrets":["${SECRET}",]}]`],
    ['single quotes around a secret', `[{'secrets':['${SECRET}']}]`],
    ['a secret alone', SECRET],
    ['text after the value', `[] ${SECRET}`],
  ])('names the setting and never echoes the input: %s', (_label, text) => {
    const err = configError(() => parseJsonSetting('WEBHOOK_ENDPOINTS', text));
    expect(err.setting).toBe('WEBHOOK_ENDPOINTS');
    expect(err.message).toMatch(/^WEBHOOK_ENDPOINTS: is not valid JSON( \(error at character \d+\))?$/);
    expectNoSecret(err, SECRET);
  });

  it('gives the position when the parser reports one', () => {
    // Node 20 reports a position for this input ("Expected ',' or '}' … at position 31").
    const err = configError(() => parseJsonSetting('CARRIERS', `[{"secrets":["${SECRET}"]`));
    expect(err.message).toBe('CARRIERS: is not valid JSON (error at character 31)');
  });

  it('rejects an empty string', () => {
    expect(configError(() => parseJsonSetting('CARRIERS', '')).message).toBe('CARRIERS: is not valid JSON');
  });
});

describe('validateEndpoints', () => {
  const validate = (value: unknown) => validateEndpoints('WEBHOOK_ENDPOINTS', value);

  it('accepts an empty array', () => {
    expect(validate([])).toEqual([]);
  });

  it('normalises a valid definition: default tolerance 300, unknown fields dropped', () => {
    expect(validate([endpoint({ extra: true }), endpoint({ id: 's', provider: 'stripe', toleranceSeconds: 0 })])).toEqual([
      { id: 'paymos-main', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 300 },
      { id: 's', provider: 'stripe', secrets: [SECRET], merchantAccountId: 'acc_1', toleranceSeconds: 0 },
    ]);
  });

  it('copies the secrets array', () => {
    const secrets = ['secret-a', 'secret-b'];
    const [result] = validate([endpoint({ secrets })]);
    expect(result.secrets).toEqual(['secret-a', 'secret-b']);
    expect(result.secrets === secrets).toBe(false);
  });

  it.each(['paymos', 'factuarea', 'stripe'])('accepts any secret of at least 8 characters for %s', (provider) => {
    expect(validate([endpoint({ provider, secrets: ['xxxxxxxx', 'whsec_yy', 'éééééééé'] })])[0].secrets).toEqual(['xxxxxxxx', 'whsec_yy', 'éééééééé']);
  });

  it('accepts Standard secrets that are whsec_ + base64', () => {
    const secrets = [`whsec_${SECRET_B64}`, 'whsec_c3RhbmRhcmQ='];
    expect(validate([endpoint({ provider: 'standard', secrets })])[0].secrets).toEqual(secrets);
  });

  it('accepts ids of 1 and 64 characters of [a-z0-9-]', () => {
    const long = 'a-0'.repeat(21) + 'z';
    expect(long.length).toBe(64);
    expect(validate([endpoint({ id: 'a' }), endpoint({ id: long })]).map((e) => e.id)).toEqual(['a', long]);
  });

  it.each<[string, unknown, string]>([
    ['an object', { id: 'x' }, 'must be a JSON array of endpoint definitions'],
    ['a string', SECRET, 'must be a JSON array of endpoint definitions'],
    ['null', null, 'must be a JSON array of endpoint definitions'],
    ['a number', 1, 'must be a JSON array of endpoint definitions'],
    ['an array holding a string', [SECRET], 'endpoint #1 must be an object'],
    ['an array holding null', [endpoint(), null], 'endpoint #2 must be an object'],
    ['an array holding an array', [[endpoint()]], 'endpoint #1 must be an object'],
  ])('rejects %s', (_label, value, problem) => {
    const err = configError(() => validate(value));
    expect(err.setting).toBe('WEBHOOK_ENDPOINTS');
    expect(err.message).toBe(`WEBHOOK_ENDPOINTS: ${problem}`);
    expectNoSecret(err, SECRET);
  });

  it.each<[string, unknown]>([
    ['upper case', 'Paymos-Main'],
    ['65 characters', 'a'.repeat(65)],
    ['empty', ''],
    ['an underscore', 'paymos_main'],
    ['a slash', 'paymos/main'],
    ['a space', 'paymos main'],
    ['a number', 42],
    ['absent', undefined],
  ])('rejects an id that is %s', (_label, id) => {
    const err = configError(() => validate([endpoint(), endpoint({ id })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint #2: "id" must match [a-z0-9-]{1,64}');
    expectNoSecret(err, SECRET);
  });

  it('rejects a duplicate endpoint id', () => {
    const err = configError(() => validate([endpoint(), endpoint({ id: 'other' }), endpoint({ provider: 'stripe' })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: duplicate endpoint id "paymos-main"');
    expectNoSecret(err, SECRET);
  });

  it.each<[string, unknown, string]>([
    ['unknown', 'worldpay', '"worldpay"'],
    ['upper case', 'Stripe', '"Stripe"'],
    ['absent', undefined, '"undefined"'],
    ['not a string', 7, '"7"'],
  ])('rejects a provider that is %s', (_label, provider, shown) => {
    const err = configError(() => validate([endpoint({ provider })]));
    expect(err.message).toBe(
      `WEBHOOK_ENDPOINTS: endpoint "paymos-main": unknown provider ${shown} (expected one of paymos, factuarea, stripe, standard, adyen, mollie, paypal, checkout, square, paddle)`,
    );
    expectNoSecret(err, SECRET);
  });

  it.each<[string, unknown]>([
    ['absent', undefined],
    ['an empty array', []],
    ['a string instead of an array', SECRET],
    ['an array with an empty string', [SECRET, '']],
    ['an array with a blank string', ['  ']],
    ['an array with a number', [SECRET, 123]],
    ['an object', { primary: SECRET }],
  ])('rejects secrets that are %s, without echoing them', (_label, secrets) => {
    const err = configError(() => validate([endpoint({ secrets })]));
    expect(err.message).toBe(
      'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "secrets" must be a non-empty array of non-empty strings',
    );
    expectNoSecret(err, SECRET);
  });

  it('rejects a Standard secret that does not start with whsec_, without echoing it', () => {
    const err = configError(() => validate([endpoint({ id: 'std', provider: 'standard', secrets: [SECRET] })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #1 must start with "whsec_" or "whpk_" (Standard Webhooks)');
    expectNoSecret(err, SECRET);
  });

  it('names the position of the bad Standard secret', () => {
    const secrets = [`whsec_${SECRET_B64}`, `WHSEC_${SECRET_B64}`];
    const err = configError(() => validate([endpoint({ id: 'std', provider: 'standard', secrets })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #2 must start with "whsec_" or "whpk_" (Standard Webhooks)');
    expectNoSecret(err, SECRET_B64);
  });

  it.each([
    ['not base64', `whsec_${SECRET}!`],
    ['empty after the prefix', 'whsec_'],
    ['URL-safe base64', 'whsec_ab-_'],
  ])('rejects a Standard secret %s after whsec_, without echoing it', (_label, secret) => {
    const err = configError(() => validate([endpoint({ id: 'std', provider: 'standard', secrets: [secret] })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #1 is not base64 after "whsec_"');
    expectNoSecret(err, secret.slice('whsec_'.length) || SECRET);
  });

  describe('Standard v1a: whpk_ public keys, alone or beside whsec_ keys', () => {
    const { publicKey, secretKey } = generateV1aKeyPair();
    const raw = (bytes: number) => `whpk_${Buffer.alloc(bytes, 7).toString('base64')}`;

    it('accepts a whpk_ of 32 bytes, alone and mixed with whsec_ keys (also expiring)', () => {
      expect(validate([endpoint({ id: 'std', provider: 'standard', secrets: [publicKey] })])[0].secrets).toEqual([publicKey]);
      const mixed = [`whsec_${SECRET_B64}`, publicKey, { secret: raw(32), expiresAt: '2999-01-01T00:00:00Z' }];
      expect(validate([endpoint({ id: 'std', provider: 'standard', secrets: mixed })])[0].secrets).toEqual(mixed);
    });

    it.each([
      ['31 bytes', raw(31)],
      ['33 bytes', raw(33)],
      ['64 bytes (a whsk_ of seed and public key, relabelled)', raw(64)],
      ['not base64', `whpk_${SECRET}!`],
      ['URL-safe base64', `whpk_${Buffer.alloc(32, 0xfb).toString('base64url')}`],
      ['empty after the prefix', 'whpk_'],
    ])('refuses a whpk_ of %s, naming its position, never its value', (_label, secret) => {
      const err = configError(() => validate([endpoint({ id: 'std', provider: 'standard', secrets: [`whsec_${SECRET_B64}`, secret] })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #2 is not base64 of a 32-byte ed25519 public key after "whpk_"');
      expectNoSecret(err, secret.slice('whpk_'.length) || SECRET);
    });

    it('refuses a whsk_ (the private key) on an endpoint, saying which key belongs there, never its value', () => {
      const err = configError(() => validate([endpoint({ id: 'std', provider: 'standard', secrets: [publicKey, secretKey] })]));
      expect(err.message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "std": secret #2 is a signing key ("whsk_"): an endpoint verifies "v1a" with its public key ("whpk_"); the signing key stays with the sender',
      );
      expectNoSecret(err, secretKey.slice('whsk_'.length));
    });

    it('the floor on a whsec_ key still holds beside a whpk_; a whpk_ has no floor of its own but its length', () => {
      const short = `whsec_${Buffer.from('7-bytes').toString('base64')}`;
      const err = configError(() => validateEndpoints('WEBHOOK_ENDPOINTS', [endpoint({ id: 'std', provider: 'standard', secrets: [publicKey, short] })], 0));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #2 decodes to fewer than 8 bytes after "whsec_"');
      expect(validateEndpoints('WEBHOOK_ENDPOINTS', [endpoint({ id: 'std', provider: 'standard', secrets: [raw(32)] })], 0)[0].secrets).toEqual([raw(32)]);
    });

    it('a whpk_ means nothing to the other providers: a secret like any other', () => {
      expect(validate([endpoint({ secrets: [publicKey] })])[0].secrets).toEqual([publicKey]);
    });
  });

  it.each<[string, unknown]>([
    ['absent', undefined],
    ['empty', ''],
    ['blank', '   '],
    ['a number', 1],
  ])('rejects a merchantAccountId that is %s', (_label, merchantAccountId) => {
    const err = configError(() => validate([endpoint({ merchantAccountId })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "paymos-main": "merchantAccountId" is required');
    expectNoSecret(err, SECRET);
  });

  it.each<[string, unknown]>([
    ['negative', -1],
    ['fractional', 1.5],
    ['a string', '300'],
    ['null', null],
    ['NaN', Number.NaN],
  ])('rejects a toleranceSeconds that is %s', (_label, toleranceSeconds) => {
    const err = configError(() => validate([endpoint({ toleranceSeconds })]));
    expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "paymos-main": "toleranceSeconds" must be a non-negative integer');
    expectNoSecret(err, SECRET);
  });

  describe('merchantAccountIds: one endpoint, many accounts (stripe, factuarea, standard)', () => {
    const multi = (over: Record<string, unknown> = {}) =>
      endpoint({ id: 'connect', provider: 'stripe', merchantAccountId: undefined, merchantAccountIds: ['acct_A', 'acct_B'], ...over });

    it.each(['stripe', 'factuarea'])('accepts a list of accounts for %s, without a merchantAccountId', (provider) => {
      const [result] = validate([multi({ provider })]);
      expect(result.merchantAccountIds).toEqual(['acct_A', 'acct_B']);
      expect('merchantAccountId' in result).toBe(false);
    });

    it('accepts a list for standard', () => {
      const [result] = validate([multi({ provider: 'standard', secrets: [`whsec_${SECRET_B64}`] })]);
      expect(result.merchantAccountIds).toEqual(['acct_A', 'acct_B']);
    });

    it('accepts ["*"] (any account) and drops repeated accounts', () => {
      expect(validate([multi({ merchantAccountIds: ['*'] })])[0].merchantAccountIds).toEqual(['*']);
      expect(validate([multi({ merchantAccountIds: ['acct_A', 'acct_A'] })])[0].merchantAccountIds).toEqual(['acct_A']);
    });

    it('copies the list', () => {
      const merchantAccountIds = ['acct_A'];
      const [result] = validate([multi({ merchantAccountIds })]);
      expect(result.merchantAccountIds === merchantAccountIds).toBe(false);
    });

    it('refuses both merchantAccountId and merchantAccountIds', () => {
      const err = configError(() => validate([multi({ merchantAccountId: 'acct_A' })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "connect": set "merchantAccountId" or "merchantAccountIds", not both');
      expectNoSecret(err, SECRET);
    });

    it('refuses neither (the single-account message)', () => {
      const err = configError(() => validate([multi({ merchantAccountIds: undefined })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "connect": "merchantAccountId" is required');
    });

    it('refuses merchantAccountIds on paymos, whose bodies declare no account', () => {
      const err = configError(() => validate([multi({ provider: 'paymos' })]));
      expect(err.message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "connect": "merchantAccountIds" is not available for paymos (its bodies declare no account); use "merchantAccountId"',
      );
      expectNoSecret(err, SECRET);
    });

    it.each<[string, unknown]>([
      ['an empty array', []],
      ['a string', 'acct_A'],
      ['an array with an empty string', ['acct_A', '']],
      ['an array with a number', ['acct_A', 7]],
      ['null', null],
    ])('refuses a list that is %s', (_label, merchantAccountIds) => {
      const err = configError(() => validate([multi({ merchantAccountIds })]));
      expect(err.message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "connect": "merchantAccountIds" must be a non-empty array of non-empty strings, or ["*"]',
      );
      expectNoSecret(err, SECRET);
    });

    it('refuses "*" next to other accounts', () => {
      const err = configError(() => validate([multi({ merchantAccountIds: ['*', 'acct_A'] })]));
      expect(err.message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "connect": "merchantAccountIds" holds "*" (any account) with other accounts; use ["*"] alone',
      );
    });
  });

  describe('secrets that expire: { secret, expiresAt }', () => {
    const NOW = Date.parse('2026-01-01T00:00:00Z');
    const at = (value: unknown) => validateEndpoints('WEBHOOK_ENDPOINTS', value, NOW);
    const LATER = '2026-02-01T00:00:00Z';

    it('keeps strings and expiring entries side by side, in order', () => {
      const secrets = [{ secret: SECRET, expiresAt: LATER }, 'new-secret'];
      expect(at([endpoint({ secrets })])[0].secrets).toEqual(secrets);
    });

    it.each(['2026-02-01T00:00:00Z', '2026-02-01T00:00:00.250Z', '2026-02-01T01:00:00+01:00', '2026-02-01T01:00+0100', '2026-02-01t00:00:00z'])(
      'accepts the instant %s',
      (expiresAt) => {
        expect(at([endpoint({ secrets: [{ secret: SECRET, expiresAt }] })])[0].secrets).toEqual([{ secret: SECRET, expiresAt }]);
      },
    );

    it('keeps an endpoint one of whose secrets has expired, when another is live', () => {
      const secrets = [{ secret: SECRET, expiresAt: '2025-12-01T00:00:00Z' }, 'new-secret'];
      expect(at([endpoint({ secrets })])[0].secrets).toEqual(secrets);
    });

    it.each<[string, unknown[]]>([
      ['one expired secret', [{ secret: SECRET, expiresAt: '2025-12-31T23:59:59Z' }]],
      ['two expired secrets', [{ secret: SECRET, expiresAt: '2025-01-01T00:00:00Z' }, { secret: 'b', expiresAt: '2025-06-01T00:00:00Z' }]],
      ['a secret expiring at this very instant', [{ secret: SECRET, expiresAt: '2026-01-01T00:00:00Z' }]],
    ])('refuses an endpoint with %s and no live one', (_label, secrets) => {
      const err = configError(() => at([endpoint({ secrets })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "paymos-main": every secret has already expired ("expiresAt" is in the past)');
      expectNoSecret(err, SECRET);
    });

    it.each<[string, unknown]>([
      ['no timezone', '2026-02-01T00:00:00'],
      ['a date only', '2026-02-01'],
      ['not a date', 'tomorrow'],
      ['a day that does not exist', '2026-02-30T00:00:00Z'],
      ['an hour out of range', '2026-02-01T24:30:00Z'],
      ['a number', 1_800_000_000],
      ['absent', undefined],
      ['null', null],
    ])('refuses an expiresAt that is %s, without echoing the secret', (_label, expiresAt) => {
      const err = configError(() => at([endpoint({ secrets: ['other', { secret: SECRET, expiresAt }] })]));
      expect(err.message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "paymos-main": secret #2: "expiresAt" must be an ISO 8601 instant with a timezone, such as 2026-01-31T00:00:00Z',
      );
      expectNoSecret(err, SECRET);
    });

    it.each<[string, unknown]>([
      ['empty', ''],
      ['blank', '   '],
      ['absent', undefined],
      ['a number', 42],
    ])('refuses a secret that is %s', (_label, secret) => {
      const err = configError(() => at([endpoint({ secrets: [{ secret, expiresAt: LATER }] })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "paymos-main": secret #1: "secret" must be a non-empty string');
    });

    it('refuses an unknown key, naming the key and never a value', () => {
      const err = configError(() => at([endpoint({ secrets: [{ secret: SECRET, expiresAt: LATER, notBefore: SECRET }] })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "paymos-main": secret #1 has unknown key "notBefore" (known: secret, expiresAt)');
      expectNoSecret(err, SECRET);
    });

    it('applies the Standard rules to an expiring secret', () => {
      const ok = [{ secret: `whsec_${SECRET_B64}`, expiresAt: LATER }];
      expect(at([endpoint({ id: 'std', provider: 'standard', secrets: ok })])[0].secrets).toEqual(ok);
      const bad = configError(() => at([endpoint({ id: 'std', provider: 'standard', secrets: ['whsec_c3RhbmRhcmQ=', { secret: SECRET, expiresAt: LATER }] })]));
      expect(bad.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #2 must start with "whsec_" or "whpk_" (Standard Webhooks)');
      expectNoSecret(bad, SECRET);
      const notBase64 = configError(() => at([endpoint({ id: 'std', provider: 'standard', secrets: [{ secret: `whsec_${SECRET}!`, expiresAt: LATER }] })]));
      expect(notBase64.message).toBe('WEBHOOK_ENDPOINTS: endpoint "std": secret #1 is not base64 after "whsec_"');
      expectNoSecret(notBase64, SECRET);
    });

    it('uses the current time by default', () => {
      const past = new Date(Date.now() - 60_000).toISOString();
      const future = new Date(Date.now() + 60_000).toISOString();
      expect(validate([endpoint({ secrets: [{ secret: SECRET, expiresAt: future }] })])).toHaveLength(1);
      expect(configError(() => validate([endpoint({ secrets: [{ secret: SECRET, expiresAt: past }] })])).problem).toBe(
        'endpoint "paymos-main": every secret has already expired ("expiresAt" is in the past)',
      );
    });
  });

  describe('apiKey and apiBaseUrl (stripe only; read by the backfill)', () => {
    const API_KEY = 'sk_test_SUPERSECRETAPIKEY';
    const stripe = (over: Record<string, unknown> = {}) => endpoint({ id: 'stripe-main', provider: 'stripe', ...over });

    it('keeps the apiKey; apiBaseUrl defaults to https://api.stripe.com', () => {
      const [result] = validate([stripe({ apiKey: API_KEY })]);
      expect(result.apiKey).toBe(API_KEY);
      expect(result.apiBaseUrl).toBe('https://api.stripe.com');
    });

    it('keeps an apiBaseUrl given (trailing slashes dropped)', () => {
      expect(validate([stripe({ apiKey: API_KEY, apiBaseUrl: 'http://127.0.0.1:12111/' })])[0].apiBaseUrl).toBe('http://127.0.0.1:12111');
    });

    it('adds neither to a stripe endpoint that sets neither', () => {
      const [result] = validate([stripe()]);
      expect('apiKey' in result).toBe(false);
      expect('apiBaseUrl' in result).toBe(false);
    });

    it.each<[string, unknown]>([
      ['empty', ''],
      ['blank', ' '],
      ['a number', 1],
      ['null', null],
    ])('refuses an apiKey that is %s', (_label, apiKey) => {
      const err = configError(() => validate([stripe({ apiKey })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "stripe-main": "apiKey" must be a non-empty string');
    });

    it.each<[string, unknown]>([
      ['not a URL', 'api.stripe.com'],
      ['another scheme', 'ftp://api.stripe.com'],
      ['a number', 443],
    ])('refuses an apiBaseUrl that is %s, without echoing the apiKey', (_label, apiBaseUrl) => {
      const err = configError(() => validate([stripe({ apiKey: API_KEY, apiBaseUrl })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "stripe-main": "apiBaseUrl" must be an http(s) URL');
      expectNoSecret(err, API_KEY);
    });

    it.each(['paymos', 'factuarea', 'standard'])('refuses them on %s, without echoing the apiKey', (provider) => {
      const secrets = provider === 'standard' ? [`whsec_${SECRET_B64}`] : [SECRET];
      for (const over of [{ apiKey: API_KEY }, { apiBaseUrl: 'https://api.stripe.com' }]) {
        const err = configError(() => validate([endpoint({ id: 'x', provider, secrets, ...over })]));
        expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "x": "apiKey" and "apiBaseUrl" are for stripe, adyen, mollie, paypal, checkout, square and paddle endpoints only');
        expectNoSecret(err, API_KEY);
      }
    });
  });

  describe('(v4) pollAfterSeconds and silenceAlertSeconds', () => {
    const API_KEY = 'sk_test_SUPERSECRETAPIKEY';
    const stripe = (over: Record<string, unknown> = {}) => endpoint({ id: 'stripe-main', provider: 'stripe', ...over });

    it('keeps them when valid: pollAfterSeconds of at least 30 with API credentials, silenceAlertSeconds of at least 60', () => {
      const [result] = validate([stripe({ apiKey: API_KEY, pollAfterSeconds: 30, silenceAlertSeconds: 60 })]);
      expect(result).toMatchObject({ pollAfterSeconds: 30, silenceAlertSeconds: 60 });
      expect(validate([stripe({ apiKey: API_KEY, pollAfterSeconds: 86_400 })])[0].pollAfterSeconds).toBe(86_400);
      expect(validate([endpoint({ silenceAlertSeconds: 3_600 })])[0].silenceAlertSeconds).toBe(3_600);
      expect(validate([stripe()])[0]).not.toHaveProperty('pollAfterSeconds');
    });

    it.each([29, 0, -5, 30.5, '60', null, true, 86_401, 604_800, 2_147_483_648])('refuses pollAfterSeconds %p, naming it', (value) => {
      const err = configError(() => validate([stripe({ apiKey: API_KEY, pollAfterSeconds: value })]));
      expect(err.message).toBe('WEBHOOK_ENDPOINTS: endpoint "stripe-main": "pollAfterSeconds" must be an integer from 30 to 86400 (a day)');
      expectNoSecret(err, API_KEY);
    });

    it.each([59, 0, 60.5, '120', null])('refuses silenceAlertSeconds %p, naming it', (value) => {
      expect(configError(() => validate([endpoint({ silenceAlertSeconds: value })])).message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "silenceAlertSeconds" must be an integer of at least 60',
      );
    });

    it('refuses pollAfterSeconds without API credentials, and on a provider with no status read (paymos, adyen)', () => {
      expect(configError(() => validate([stripe({ pollAfterSeconds: 60 })])).message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "stripe-main": "pollAfterSeconds" needs the endpoint\'s API credentials ("apiKey")',
      );
      expect(configError(() => validate([endpoint({ pollAfterSeconds: 60 })])).message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "paymos-main": "pollAfterSeconds": provider "paymos" has no payment status read, so its payments cannot be polled',
      );
      const adyen = endpoint({ id: 'adyen-main', provider: 'adyen', secrets: ['44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056'], apiKey: API_KEY, pollAfterSeconds: 60 });
      expect(configError(() => validate([adyen])).message).toBe(
        'WEBHOOK_ENDPOINTS: endpoint "adyen-main": "pollAfterSeconds": provider "adyen" has no payment status read, so its payments cannot be polled',
      );
    });
  });

  it('reports under the setting name it is given', () => {
    expect(configError(() => validateEndpoints('WEBHOOK_ENDPOINTS_FILE', {})).message).toBe(
      'WEBHOOK_ENDPOINTS_FILE: must be a JSON array of endpoint definitions',
    );
  });
});

describe('validateCarriers', () => {
  const validate = (value: unknown) => validateCarriers('CARRIERS', value);
  const carrier = (over: Record<string, unknown> = {}) => ({ name: 'acme', url: 'https://acme.test/api', ...over });
  const BAD_URL = 'carrier "acme": "url" must be an http(s) URL';
  const BAD_TIMEOUT = 'carrier "acme": "timeoutMs" must be a positive integer';

  it('normalises valid definitions: trailing slashes dropped, optional fields kept', () => {
    expect(
      validate([
        carrier({ url: 'https://acme.test/api//', apiKey: SECRET, timeoutMs: 2500 }),
        { name: 'local', url: 'http://127.0.0.1:4000' },
      ]),
    ).toEqual([
      { name: 'acme', url: 'https://acme.test/api', apiKey: SECRET, timeoutMs: 2500 },
      { name: 'local', url: 'http://127.0.0.1:4000', apiKey: undefined, timeoutMs: undefined },
    ]);
  });

  it.each<[string, unknown, string]>([
    ['not an array', { name: 'acme' }, 'must be a JSON array of carrier definitions'],
    ['an element that is not an object', ['acme'], 'carrier #1 must be an object'],
    ['a missing name', [carrier({ name: undefined, apiKey: SECRET })], 'carrier #1: "name" is required'],
    ['a blank name', [carrier({ name: ' ', apiKey: SECRET })], 'carrier #1: "name" is required'],
    ['a duplicate name', [carrier({ apiKey: SECRET }), carrier({ apiKey: SECRET })], 'duplicate carrier name "acme"'],
    ['a non-http url', [carrier({ url: 'ftp://acme.test', apiKey: SECRET })], BAD_URL],
    ['an unparseable url', [carrier({ url: `not a url ${SECRET}` })], BAD_URL],
    ['a url with credentials and a bad scheme', [carrier({ url: `ftp://u:${SECRET}@acme.test` })], BAD_URL],
    ['a missing url', [carrier({ url: undefined })], BAD_URL],
    ['an empty apiKey', [carrier({ apiKey: '' })], 'carrier "acme": "apiKey" must be a non-empty string'],
    ['a numeric apiKey', [carrier({ apiKey: 123456 })], 'carrier "acme": "apiKey" must be a non-empty string'],
    ['a zero timeoutMs', [carrier({ timeoutMs: 0, apiKey: SECRET })], BAD_TIMEOUT],
    ['a fractional timeoutMs', [carrier({ timeoutMs: 1.5 })], BAD_TIMEOUT],
    ['a string timeoutMs', [carrier({ timeoutMs: '1000' })], BAD_TIMEOUT],
  ])('rejects %s, without echoing secrets', (_label, value, problem) => {
    const err = configError(() => validate(value));
    expect(err.message).toBe(`CARRIERS: ${problem}`);
    expectNoSecret(err, SECRET);
  });
});

describe('isHttpUrl', () => {
  it.each<[unknown, boolean]>([
    ['http://a.test', true],
    ['https://a.test/x', true],
    ['ftp://a.test', false],
    ['a.test', false],
    ['', false],
    [undefined, false],
    [42, false],
  ])('%j → %j', (value, expected) => {
    expect(isHttpUrl(value)).toBe(expected);
  });
});

const SINK_SECRET = 'whsec_c2luay1zZWNyZXQtZm9yLXRoZS10ZXN0LTAwMQ==';

describe('resolveOptions', () => {
  const base: PaymentWebhooksOptions = {
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
    redisUrl: 'redis://127.0.0.1:6379',
  };

  describe('eventSinks (EVENT_SINKS): a name, an http(s) URL and a whsec_ secret each', () => {
    const sink = { name: 'crm', url: 'https://crm.test/hooks', secret: SINK_SECRET };
    it('defaults: every type, a 10 s timeout', () => {
      expect(resolveOptions({ ...base, eventSinks: [sink] }).eventSinks).toEqual([{ ...sink, types: '*', timeoutMs: 10_000 }]);
    });
    it.each([
      ['no name', { ...sink, name: undefined }, 'eventSinks: sink #1: "name" is required (1–64 letters, digits, _ . : -)'],
      ['a name with a space', { ...sink, name: 'my crm' }, 'eventSinks: sink #1: "name" is required (1–64 letters, digits, _ . : -)'],
      ['no url', { ...sink, url: undefined }, 'eventSinks: sink "crm": "url" must be an http(s) URL'],
      ['an ftp url', { ...sink, url: 'ftp://crm.test' }, 'eventSinks: sink "crm": "url" must be an http(s) URL'],
      ['no secret', { ...sink, secret: undefined }, 'eventSinks: sink "crm": "secret" must be a Standard Webhooks secret starting with "whsec_"'],
      ['a secret without whsec_', { ...sink, secret: 'c2VjcmV0' }, 'eventSinks: sink "crm": "secret" must be a Standard Webhooks secret starting with "whsec_"'],
      ['a secret not base64 after whsec_', { ...sink, secret: 'whsec_not base64!' }, 'eventSinks: sink "crm": "secret" is not base64 after "whsec_"'],
      ['an unknown type', { ...sink, types: ['order.paid', 'order.shipped'] }, 'eventSinks: sink "crm": unknown event type "order.shipped"'],
      ['empty types', { ...sink, types: [] }, 'eventSinks: sink "crm": "types" must be a non-empty array of event types'],
      ['a timeout of 0', { ...sink, timeoutMs: 0 }, 'eventSinks: sink "crm": "timeoutMs" must be a positive integer'],
    ])('%s', (_name, bad, message) => {
      const err = (() => {
        try {
          resolveOptions({ ...base, eventSinks: [bad as never] });
        } catch (e) {
          return e as Error;
        }
        throw new Error('no error');
      })();
      expect(err.message.startsWith(message)).toBe(true);
      expect(err.message).not.toContain(SINK_SECRET.slice(6));
    });
    it('two sinks with one name', () => {
      expect(() => resolveOptions({ ...base, eventSinks: [sink, sink] })).toThrow('eventSinks: duplicate sink name "crm"');
    });
    describe('a whsk_ secret (an ed25519 private key): the sink signs v1a', () => {
      const { secretKey, publicKey } = generateV1aKeyPair();
      const refusal = (secret: unknown) => {
        try {
          resolveOptions({ ...base, eventSinks: [{ ...sink, secret } as never] });
        } catch (e) {
          return (e as Error).message;
        }
        throw new Error('no error');
      };

      it('accepts a 32-byte whsk_, and the 64-byte form of seed and public key', () => {
        expect(resolveOptions({ ...base, eventSinks: [{ ...sink, secret: secretKey }] }).eventSinks).toEqual([{ ...sink, secret: secretKey, types: '*', timeoutMs: 10_000 }]);
        const long = `whsk_${Buffer.concat([Buffer.from(secretKey.slice(5), 'base64'), Buffer.from(publicKey.slice(5), 'base64')]).toString('base64')}`;
        expect(resolveOptions({ ...base, eventSinks: [{ ...sink, secret: long }] }).eventSinks[0].secret).toBe(long);
      });

      it.each([
        ['16 bytes', `whsk_${Buffer.alloc(16, 3).toString('base64')}`],
        ['not base64', 'whsk_not base64!'],
        ['empty after the prefix', 'whsk_'],
      ])('refuses a whsk_ of %s, never echoing it', (_label, secret) => {
        const message = refusal(secret);
        expect(message).toBe('eventSinks: sink "crm": "secret" is not base64 of an ed25519 private key (32 bytes, or 64 with its public key) after "whsk_"');
        if (secret.length > 'whsk_'.length) expect(message).not.toContain(secret.slice('whsk_'.length));
      });

      it('refuses a 64-byte whsk_ whose public half is another key', () => {
        const { publicKey: another } = generateV1aKeyPair();
        const mismatched = `whsk_${Buffer.concat([Buffer.from(secretKey.slice(5), 'base64'), Buffer.from(another.slice(5), 'base64')]).toString('base64')}`;
        const message = refusal(mismatched);
        expect(message).toBe('eventSinks: sink "crm": "secret" holds a public key that is not its private key\'s after "whsk_" (the last 32 bytes)');
        expect(message).not.toContain(mismatched.slice(5));
      });

      it('refuses a whpk_: a sink signs, and a public key cannot', () => {
        const message = refusal(publicKey);
        expect(message).toBe('eventSinks: sink "crm": "secret" is a public key ("whpk_"): a sink signs, with the private key ("whsk_"), and its receiver verifies with the "whpk_"');
        expect(message).not.toContain(publicKey.slice(5));
      });

      it('names both prefixes when the secret has neither', () => {
        expect(refusal('c2VjcmV0')).toBe('eventSinks: sink "crm": "secret" must be a Standard Webhooks secret starting with "whsec_" or "whsk_"');
      });
    });
    it('(v4) the endpoint events are types a sink may take', () => {
      expect(resolveOptions({ ...base, eventSinks: [{ ...sink, types: ['endpoint.silent', 'endpoint.resumed'] }] }).eventSinks[0].types).toEqual(['endpoint.silent', 'endpoint.resumed']);
    });

    it("types ['*'] and '*' mean every type", () => {
      expect(resolveOptions({ ...base, eventSinks: [{ ...sink, types: ['*'] }] }).eventSinks[0].types).toBe('*');
      expect(resolveOptions({ ...base, eventSinks: [{ ...sink, types: '*' }] }).eventSinks[0].types).toBe('*');
    });
    it('eventMaxAttempts must be a positive integer', () => {
      expect(() => resolveOptions({ ...base, eventMaxAttempts: 0 })).toThrow('eventMaxAttempts: must be a positive integer');
    });
  });

  describe('schema (DATABASE_SCHEMA): a plain identifier, since it is written into SQL', () => {
    it.each(['payment_webhooks', 'public', '_x', 'a1_b2', 'a'.repeat(63)])('accepts %j', (schema) => {
      expect(resolveOptions({ ...base, schema }).schema).toBe(schema);
    });
    it.each(['', 'Payments', '1abc', 'pay-ments', 'pay ments', 'x;drop', '"q"', 'a'.repeat(64), 'pg_temp', 'ümlaut'])(
      'refuses %j, naming the option',
      (schema) => {
        expect(() => resolveOptions({ ...base, schema })).toThrow(/^schema: must/);
      },
    );
    it('refuses a value that is not a string', () => {
      expect(() => resolveOptions({ ...base, schema: 42 as unknown as string })).toThrow('schema: must be a plain identifier');
    });
  });

  describe('routePrefix (ROUTE_PREFIX)', () => {
    it.each([
      ['', ''],
      ['/', ''],
      ['pay', '/pay'],
      ['/pay', '/pay'],
      ['/pay/', '/pay'],
      ['//api/pay//', '/api/pay'],
      ['v1.payments~x', '/v1.payments~x'],
    ])('%j becomes %j', (routePrefix, expected) => {
      expect(resolveOptions({ ...base, routePrefix }).routePrefix).toBe(expected);
    });
    it.each(['/pay me', '/pay?x=1', '/pay/../admin', '/./pay', '/:id', '/pay*', '/a//b'])('refuses %j, naming the option', (routePrefix) => {
      expect(() => resolveOptions({ ...base, routePrefix })).toThrow(/^routePrefix: must be a path/);
    });
  });

  it('fills the defaults', () => {
    expect(resolveOptions(base)).toEqual({
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
    });
  });

  it('keeps the values given', () => {
    const resolved = resolveOptions({
      databaseUrl: 'postgresql://db.test/x',
      schema: 'host_pay',
      routePrefix: 'pay/',
      redisUrl: 'rediss://cache.test:6380',
      queuePrefix: 'test:run-1',
      endpoints: [{ id: 'p', provider: 'paymos', secrets: ['s-secret'], merchantAccountId: 'a' }],
      carriers: [{ name: 'c', url: 'http://c.test/' }],
      carrierTimeoutMs: 500,
      carrierMaxAttempts: 3,
      eventSinks: [{ name: 'crm', url: 'https://crm.test/hooks', secret: SINK_SECRET, types: ['order.paid', 'order.paid'] }],
      eventMaxAttempts: 4,
      commandMaxAttempts: 15,
      adminToken: 'admin-token-1',
      runWorkers: false,
      inboxRetentionDays: 7,
      webhookMaxBodyBytes: 1,
      migrationsRun: false,
      preparedStatements: false,
      trustedProxies: ['10.0.0.0/8', '::ffff:172.16.0.1', 'fd00::/8'],
      tuning: { ingestBatchSize: 10 },
    });
    expect(resolved).toEqual({
      databaseUrl: 'postgresql://db.test/x',
      schema: 'host_pay',
      routePrefix: '/pay',
      redisUrl: 'rediss://cache.test:6380',
      redisCluster: false,
      queuePrefix: 'test:run-1',
      endpoints: [{ id: 'p', provider: 'paymos', secrets: ['s-secret'], merchantAccountId: 'a', toleranceSeconds: 300 }],
      carriers: [{ name: 'c', url: 'http://c.test', apiKey: undefined, timeoutMs: undefined }],
      carrierTimeoutMs: 500,
      carrierMaxAttempts: 3,
      eventSinks: [{ name: 'crm', url: 'https://crm.test/hooks', secret: SINK_SECRET, types: ['order.paid'], timeoutMs: 10_000 }],
      eventMaxAttempts: 4,
      commandMaxAttempts: 15,
      adminToken: 'admin-token-1',
      runWorkers: false,
      inboxRetentionDays: 7,
      webhookMaxBodyBytes: 1,
      migrationsRun: false,
      preparedStatements: false,
      trustedProxies: ['10.0.0.0/8', '172.16.0.1/32', 'fd00::/8'],
      tuning: { ...DEFAULT_TUNING, ingestBatchSize: 10 },
    });
  });

  it.each<[string, unknown, string]>([
    ['a string, not a list', '10.0.0.0/8', 'trustedProxies: must be a list of addresses and CIDR ranges, such as 10.0.0.0/8,::1'],
    ['a host name', ['10.0.0.1', 'lb.internal'], 'trustedProxies: entry #2 "lb.internal" is not an IP address or a CIDR range'],
    ['a prefix too long', ['2001:db8::/129'], 'trustedProxies: entry #1 "2001:db8::/129" has a prefix length that is not 0–128'],
    ['an empty entry', ['10.0.0.1', ' '], 'trustedProxies: entry #2 is empty or not a string'],
  ])('refuses trustedProxies with %s, naming the option', (_label, trustedProxies, message) => {
    expect(() => resolveOptions({ ...base, trustedProxies: trustedProxies as string[] })).toThrow(new ConfigurationError('trustedProxies', message.slice('trustedProxies: '.length)));
  });

  it.each<[string, string | null | undefined]>([
    ['empty', ''],
    ['null', null],
    ['undefined', undefined],
  ])('reads an adminToken that is %s as none', (_label, adminToken) => {
    expect(resolveOptions({ ...base, adminToken }).adminToken).toBe(null);
  });

  const BAD_PREFIX = 'queuePrefix: must be 1–64 characters of letters, digits, _ . : -';
  it.each<[string, Partial<PaymentWebhooksOptions>, string]>([
    ['retention under 7', { inboxRetentionDays: 6 }, 'inboxRetentionDays: must be at least 7'],
    ['retention 0', { inboxRetentionDays: 0 }, 'inboxRetentionDays: must be a positive integer'],
    ['a zero carrierMaxAttempts', { carrierMaxAttempts: 0 }, 'carrierMaxAttempts: must be a positive integer'],
    ['a negative webhookMaxBodyBytes', { webhookMaxBodyBytes: -1 }, 'webhookMaxBodyBytes: must be a positive integer'],
    ['a fractional carrierTimeoutMs', { carrierTimeoutMs: 1.5 }, 'carrierTimeoutMs: must be a positive integer'],
    ['a NaN carrierTimeoutMs', { carrierTimeoutMs: Number.NaN }, 'carrierTimeoutMs: must be a positive integer'],
    ['an empty queuePrefix', { queuePrefix: '' }, BAD_PREFIX],
    ['a queuePrefix with a space', { queuePrefix: 'p w' }, BAD_PREFIX],
    ['a 65-character queuePrefix', { queuePrefix: 'p'.repeat(65) }, BAD_PREFIX],
    ['a MySQL databaseUrl', { databaseUrl: `mysql://u:${SECRET}@h/db` }, 'databaseUrl: must start with postgres:// or postgresql://'],
    ['an unparseable databaseUrl', { databaseUrl: `${SECRET}@localhost` }, 'databaseUrl: is not a valid URL'],
    ['a missing databaseUrl', { databaseUrl: undefined }, 'databaseUrl: is required'],
    ['an http redisUrl', { redisUrl: `http://:${SECRET}@h:6379` }, 'redisUrl: must start with redis:// or rediss://'],
    ['an unparseable redisUrl', { redisUrl: `:${SECRET}@h` }, 'redisUrl: is not a valid URL'],
    [
      'an endpoint without secrets',
      { endpoints: [{ id: 'p', provider: 'paymos', secrets: [], merchantAccountId: 'a' }] },
      'endpoints: endpoint "p": "secrets" must be a non-empty array of non-empty strings',
    ],
    [
      'a carrier with a bad url',
      { carriers: [{ name: 'c', url: 'nope', apiKey: SECRET }] },
      'carriers: carrier "c": "url" must be an http(s) URL',
    ],
  ])('rejects %s, naming the option', (_label, over, message) => {
    const err = configError(() => resolveOptions({ ...base, ...over } as PaymentWebhooksOptions));
    expect(err.message).toBe(message);
    expectNoSecret(err, SECRET);
  });

  describe('redisCluster (REDIS_CLUSTER) and the hash tag of queuePrefix (QUEUE_PREFIX)', () => {
    const cluster = { ...base, redisCluster: true };
    const HASH_TAG = 'queuePrefix: may hold one hash tag only: a { and a later }, with something between them, such as {pw}';
    const NEEDS_TAG = 'queuePrefix: must contain a hash tag such as {pw} on a Redis Cluster';

    it('is off by default; the single-server URL rules stay as they are', () => {
      expect(resolveOptions(base).redisCluster).toBe(false);
      expect(configError(() => resolveOptions({ ...base, redisUrl: 'redis://a:1,b:2' })).message).toBe('redisUrl: is not a valid URL');
    });

    it.each(['{pw}', 'pw:{tenant-1}', '{a}b', 'x.{y_z}:q', '{p}'])('accepts the hash-tagged prefix %j, on a cluster or not', (queuePrefix) => {
      expect(resolveOptions({ ...base, queuePrefix }).queuePrefix).toBe(queuePrefix);
      expect(resolveOptions({ ...cluster, queuePrefix }).queuePrefix).toBe(queuePrefix);
    });

    it.each(['{}', '{pw', 'pw}', '}pw{', '{a}{b}', '{{pw}}', 'a{b}c}', '{a{b}'])('rejects the malformed hash tag %j', (queuePrefix) => {
      expect(configError(() => resolveOptions({ ...base, queuePrefix })).message).toBe(HASH_TAG);
      expect(configError(() => resolveOptions({ ...cluster, queuePrefix })).message).toBe(HASH_TAG);
    });

    it('keeps the character rule: braces join letters, digits, _ . : -, and 64 characters at most', () => {
      expect(configError(() => resolveOptions({ ...cluster, queuePrefix: '{p w}' })).message).toBe(BAD_PREFIX);
      expect(configError(() => resolveOptions({ ...cluster, queuePrefix: `{${'p'.repeat(63)}}` })).message).toBe(BAD_PREFIX);
      expect(resolveOptions({ ...cluster, queuePrefix: `{${'p'.repeat(62)}}` }).queuePrefix).toHaveLength(64);
    });

    it('on a cluster, a prefix without a hash tag is an error naming the prefix', () => {
      for (const queuePrefix of ['pw', 'pw-test', 'a:b']) {
        const err = configError(() => resolveOptions({ ...cluster, queuePrefix }));
        expect(err.setting).toBe('queuePrefix');
        expect(err.message).toBe(NEEDS_TAG);
      }
      expect(configError(() => resolveOptions({ ...cluster, queuePrefix: 'pw' }, { queuePrefix: 'QUEUE_PREFIX' })).message).toBe(
        'QUEUE_PREFIX: must contain a hash tag such as {pw} on a Redis Cluster',
      );
    });

    it('on a cluster, an unset prefix is {pw}; on one server, pw', () => {
      expect(resolveOptions(cluster).queuePrefix).toBe('{pw}');
      expect(resolveOptions(base).queuePrefix).toBe('pw');
    });

    it.each([
      'redis://127.0.0.1:7000',
      'redis://127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002',
      'redis://a.test:7000, b.test:7001',
      `rediss://user:${SECRET}@a.test:7000,b.test:7001`,
      'redis://[::1]:7000,[::1]:7001/0',
      'redis://node.test',
    ])('on a cluster, accepts the seed list %j', (redisUrl) => {
      expect(resolveOptions({ ...cluster, redisUrl })).toMatchObject({ redisUrl, redisCluster: true, queuePrefix: '{pw}' });
    });

    it.each<[string, string]>([
      [`http://:${SECRET}@a:1,b:2`, 'redisUrl: must start with redis:// or rediss://'],
      [`redis://:${SECRET}@a:1,,b:2`, 'redisUrl: has a seed that is not host:port'],
      [`redis://:${SECRET}@a:1,b:99999`, 'redisUrl: has a seed that is not host:port'],
      [`redis://:${SECRET}@a:1,u:p@b:2`, 'redisUrl: must be redis://host:port[,host:port…] on a Redis Cluster'],
      [`redis://:${SECRET}@a:1,b:2/3`, 'redisUrl: names database 3; a Redis Cluster has only database 0'],
      [`redis://:${SECRET}@a:1,b:2?tls=1`, 'redisUrl: must be redis://host:port[,host:port…] on a Redis Cluster'],
      [`redis://:${SECRET}@`, 'redisUrl: must be redis://host:port[,host:port…] on a Redis Cluster'],
    ])('on a cluster, rejects the seed list %j without echoing it', (redisUrl, message) => {
      const err = configError(() => resolveOptions({ ...cluster, redisUrl }));
      expect(err.message).toBe(message);
      expectNoSecret(err, SECRET);
    });

    it('rejects a redisCluster that is not a boolean', () => {
      expect(configError(() => resolveOptions({ ...base, redisCluster: 'yes' as unknown as boolean })).message).toBe(
        'redisCluster: must be true or false',
      );
    });
  });

  it('reports under the names it is given', () => {
    const names = { inboxRetentionDays: 'INBOX_RETENTION_DAYS', endpoints: 'WEBHOOK_ENDPOINTS_FILE' };
    expect(configError(() => resolveOptions({ ...base, inboxRetentionDays: 6 }, names)).message).toBe(
      'INBOX_RETENTION_DAYS: must be at least 7',
    );
    expect(
      configError(() =>
        resolveOptions({ ...base, endpoints: [{ id: 'X', provider: 'paymos', secrets: ['s'], merchantAccountId: 'a' }] }, names),
      ).message,
    ).toBe('WEBHOOK_ENDPOINTS_FILE: endpoint #1: "id" must match [a-z0-9-]{1,64}');
  });

  it('does not echo secrets of valid endpoints when another option is invalid', () => {
    const err = configError(() =>
      resolveOptions({
        ...base,
        adminToken: SECRET,
        endpoints: [{ id: 'p', provider: 'paymos', secrets: [SECRET], merchantAccountId: 'a' }],
        inboxRetentionDays: 3,
      }),
    );
    expect(err.message).toBe('inboxRetentionDays: must be at least 7');
    expectNoSecret(err, SECRET);
  });
});

describe('minimum lengths of secrets and the admin token', () => {
  const base: PaymentWebhooksOptions = {
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
    redisUrl: 'redis://127.0.0.1:6379',
  };

  it.each([
    ['a paymos secret of 7 characters', endpoint({ secrets: ['short-7'] }), 'endpoint "paymos-main": secret #1 is shorter than 8 characters'],
    ['an expiring stripe secret of 7', endpoint({ provider: 'stripe', secrets: [{ secret: 'whsec_1', expiresAt: '2999-01-01T00:00:00Z' }] }), 'endpoint "paymos-main": secret #1 is shorter than 8 characters'],
    ['a whsec_ key of 7 bytes', endpoint({ provider: 'standard', secrets: [`whsec_${Buffer.from('7-bytes').toString('base64')}`] }), 'endpoint "paymos-main": secret #1 decodes to fewer than 8 bytes after "whsec_"'],
  ])('%s: refused, naming the setting, never the value', (_name, definition, problem) => {
    const err = configError(() => validateEndpoints('WEBHOOK_ENDPOINTS', [definition], 0));
    expect(err.setting).toBe('WEBHOOK_ENDPOINTS');
    expect(err.problem).toBe(problem);
    const secret = (definition.secrets as Array<string | { secret: string }>)[0];
    expectNoSecret(err, typeof secret === 'string' ? secret : secret.secret);
  });

  it('secrets at the minimum, and the contract example (s3cr3t-new), pass', () => {
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [endpoint({ secrets: ['8-chars!', 's3cr3t-new'] })], 0)).not.toThrow();
    expect(() =>
      validateEndpoints('WEBHOOK_ENDPOINTS', [endpoint({ provider: 'standard', secrets: [`whsec_${Buffer.from('8-bytes!').toString('base64')}`] })], 0),
    ).not.toThrow();
  });

  it('an admin token under 10 characters is refused, naming the option, never the value', () => {
    const err = configError(() => resolveOptions({ ...base, adminToken: 'short-tok' }, { adminToken: 'ADMIN_TOKEN' }));
    expect(err.message).toBe('ADMIN_TOKEN: is shorter than 10 characters');
    expectNoSecret(err, 'short-tok');
    expect(resolveOptions({ ...base, adminToken: '10-chars!!' }).adminToken).toBe('10-chars!!');
  });

  it('an event-sink secret whose key is under 16 bytes is refused, never echoed', () => {
    const secret = `whsec_${Buffer.from('fifteen-bytes!!').toString('base64')}`;
    const err = configError(() => resolveOptions({ ...base, eventSinks: [{ name: 'crm', url: 'https://crm.test', secret }] }, { eventSinks: 'EVENT_SINKS' }));
    expect(err.message).toBe('EVENT_SINKS: sink "crm": "secret" decodes to fewer than 16 bytes after "whsec_"');
    expectNoSecret(err, secret);
  });
});

describe('tuning keys: own, known keys only; no prototype keys', () => {
  const base: PaymentWebhooksOptions = {
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
    redisUrl: 'redis://127.0.0.1:6379',
  };

  it.each(['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'])('"%s" is an unknown tuning key', (key) => {
    const tuning = parseJsonSetting('PW_TUNING', `{${JSON.stringify(key)}:5}`) as PaymentWebhooksOptions['tuning'];
    expect(Object.keys(tuning!)).toEqual([key]);
    const err = configError(() => resolveOptions({ ...base, tuning }, { tuning: 'PW_TUNING' }));
    expect(err.message).toMatch(new RegExp(`^PW_TUNING: unknown tuning key "${key}" \\(known: `));
  });

  it('a __proto__ object from JSON.parse pollutes nothing and is refused', () => {
    const tuning = parseJsonSetting('PW_TUNING', '{"__proto__":{"ingestBatchSize":1,"polluted":true}}') as PaymentWebhooksOptions['tuning'];
    expect(() => resolveOptions({ ...base, tuning })).toThrow(ConfigurationError);
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('the resolved tuning has exactly the known keys, as own properties of a plain object', () => {
    const resolved = resolveOptions({ ...base, tuning: { ingestBatchSize: 10 } }).tuning;
    expect(Object.keys(resolved).sort()).toEqual(Object.keys(DEFAULT_TUNING).sort());
    expect(resolved.ingestBatchSize).toBe(10);
    expect(Object.getPrototypeOf(resolved)).toBe(Object.prototype);
  });
});

describe('one client’s share of the unverified bytes', () => {
  const base: PaymentWebhooksOptions = {
    databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
    redisUrl: 'redis://127.0.0.1:6379',
  };
  const share = (options: Partial<PaymentWebhooksOptions>) => resolveOptions({ ...base, ...options }).tuning.unverifiedBodyClientShareBytes;

  it('unset, is a quarter of the budget, never below the body size limit nor above the budget', () => {
    expect(share({})).toBe(8_388_608);
    expect(DEFAULT_TUNING.unverifiedBodyClientShareBytes).toBe(DEFAULT_TUNING.unverifiedBodyBudgetBytes / 4);
    expect(share({ webhookMaxBodyBytes: 1_000, tuning: { unverifiedBodyBudgetBytes: 100_001 } })).toBe(25_000);
    // Room for one body of the size limit, as long as the budget has it.
    expect(share({ webhookMaxBodyBytes: 30_000, tuning: { unverifiedBodyBudgetBytes: 100_000 } })).toBe(30_000);
    expect(share({ tuning: { unverifiedBodyBudgetBytes: 100_000 } })).toBe(100_000);
  });

  it('set, is kept when within the budget (equal turns per-client shares off)', () => {
    expect(share({ tuning: { unverifiedBodyClientShareBytes: 1 } })).toBe(1);
    expect(share({ tuning: { unverifiedBodyBudgetBytes: 4_000, unverifiedBodyClientShareBytes: 4_000 } })).toBe(4_000);
  });

  it.each<[string, unknown, string]>([
    ['above the budget', { unverifiedBodyBudgetBytes: 4_000, unverifiedBodyClientShareBytes: 4_001 }, 'PW_TUNING: "unverifiedBodyClientShareBytes" must not be above "unverifiedBodyBudgetBytes" (4000)'],
    ['above the default budget', { unverifiedBodyClientShareBytes: 33_554_433 }, 'PW_TUNING: "unverifiedBodyClientShareBytes" must not be above "unverifiedBodyBudgetBytes" (33554432)'],
    ['zero', { unverifiedBodyClientShareBytes: 0 }, 'PW_TUNING: "unverifiedBodyClientShareBytes" must be a positive integer'],
    ['fractional', { unverifiedBodyClientShareBytes: 1.5 }, 'PW_TUNING: "unverifiedBodyClientShareBytes" must be a positive integer'],
  ])('is refused %s', (_label, tuning, message) => {
    const err = configError(() => resolveOptions({ ...base, tuning: tuning as PaymentWebhooksOptions['tuning'] }, { tuning: 'PW_TUNING' }));
    expect(err.message).toBe(message);
  });
});
