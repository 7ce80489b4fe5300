import { ConfigurationError, resolveOptions } from '../../src/config/validate';
import type { EndpointDefinition, PaymentWebhooksOptions } from '../../src/config/options';
import { resolveEndpoint } from '../../src/config/endpoints';
import { BUILT_IN_PROVIDER_NAMES, hmacProvider, providerTable, type ProviderAdapter } from '../../src/providers';
import { acmeProvider } from '../support/acme-provider';

/**
 * The `providers` option (docs/providers.md#registering-it): a host's own adapters beside the
 * built-in ones, refused at start with a message naming the option and the provider, and endpoints
 * of them validated through the adapter's own hooks.
 */
const base: PaymentWebhooksOptions = {
  databaseUrl: 'postgres://postgres:postgres@127.0.0.1:5432/payments',
  redisUrl: 'redis://127.0.0.1:6379',
};

const acmeEndpoint: EndpointDefinition = { id: 'acme-main', provider: 'acme', secrets: ['acme_sk_0123456789abcdef'], merchantAccountId: 'm_1' };

/** The ConfigurationError `fn` throws: what a start refused with. */
function refusal(fn: () => unknown): ConfigurationError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigurationError);
    return err as ConfigurationError;
  }
  throw new Error('expected a ConfigurationError, nothing was thrown');
}

/** acme under another name: a second, distinct adapter. */
const renamed = (name: string): ProviderAdapter => ({ ...acmeProvider, name });

describe('the providers option', () => {
  it("registers a host's provider beside the built-in ones; its endpoints are endpoints like any", () => {
    const resolved = resolveOptions({ ...base, providers: [acmeProvider], endpoints: [acmeEndpoint] });
    expect(resolved.endpoints).toEqual([{ ...acmeEndpoint, toleranceSeconds: 300 }]);
  });

  it.each([...BUILT_IN_PROVIDER_NAMES])('a host provider named like a built-in one (%s) is refused, naming the option and the name', (name) => {
    const err = refusal(() => resolveOptions({ ...base, providers: [renamed(name)] }));
    expect(err.setting).toBe('providers');
    expect(err.message).toBe(`providers: provider "${name}" is a built-in provider's name: give the host's own provider another name`);
  });

  it('two host providers of one name are refused', () => {
    const err = refusal(() => resolveOptions({ ...base, providers: [acmeProvider, renamed('acme')] }));
    expect(err.message).toBe('providers: provider "acme" is registered twice');
    // The same adapter twice is still two registrations of one name.
    expect(refusal(() => resolveOptions({ ...base, providers: [acmeProvider, acmeProvider] })).message).toBe('providers: provider "acme" is registered twice');
  });

  it.each<[string, unknown, string | RegExp]>([
    ['an object without receive, normalize or prepareKey', { name: 'bare', storedHeaders: [], signatureHeaders: [], secrets: 'required' }, 'providers: provider "bare" has no receive, normalize, prepareKey (see docs/providers.md)'],
    ['one without normalize', { ...acmeProvider, name: 'half', normalize: undefined }, 'providers: provider "half" has no normalize (see docs/providers.md)'],
    ['headers not listed', { ...acmeProvider, name: 'noheaders', storedHeaders: undefined }, 'providers: provider "noheaders" must list its storedHeaders and signatureHeaders (lower-case header names)'],
    ['a header in upper case', { ...acmeProvider, name: 'shouty', signatureHeaders: ['Acme-Signature'] }, 'providers: provider "shouty" must name its headers in lower case'],
    ['no word on secrets', { ...acmeProvider, name: 'secretless', secrets: 'maybe' }, 'providers: provider "secretless" must say whether its endpoints need secrets ("required" or "none")'],
    ['no name', { ...acmeProvider, name: undefined }, /^providers: a provider's name must match/],
    ['a name of another shape', { ...acmeProvider, name: 'Acme Pay' }, /^providers: a provider's name must match \^\[a-z\]/],
    ['null', null, /^providers: a provider's name must match/],
    ['a string', 'acme', /^providers: a provider's name must match/],
  ])('a non-adapter is refused: %s', (_what, adapter, message) => {
    const err = refusal(() => resolveOptions({ ...base, providers: [adapter as ProviderAdapter] }));
    expect(err.setting).toBe('providers');
    if (typeof message === 'string') expect(err.message).toBe(message);
    else expect(err.message).toMatch(message);
  });

  it.each<[string, unknown, string | RegExp]>([
    ['a function named like a provider', Object.assign(function acme() {}, { receive: () => null }), /^providers: a provider's name must match/],
    ['a number as its name', { ...acmeProvider, name: 5 }, /^providers: a provider's name must match .* \(got "5"\)$/],
    ['answer that is not a function', { ...acmeProvider, name: 'chatty', answer: '[accepted]' }, 'providers: provider "chatty" has answer that is not a function'],
    ['checkSecret and checkEndpoint that are not functions', { ...acmeProvider, name: 'hooks', checkSecret: /acme_sk_/, checkEndpoint: true }, 'providers: provider "hooks" has checkSecret, checkEndpoint that are not a function'],
    ['weakSecret that is not a function', { ...acmeProvider, name: 'weak', weakSecret: 16 }, 'providers: provider "weak" has weakSecret that is not a function'],
    ['receive that is not a function', { ...acmeProvider, name: 'deaf', receive: {} }, 'providers: provider "deaf" has no receive (see docs/providers.md)'],
    ['a header name that is not a string', { ...acmeProvider, name: 'numbered', storedHeaders: ['acme-signature', 5] }, 'providers: provider "numbered" must name its headers in lower case'],
    ['an empty header name', { ...acmeProvider, name: 'blank', signatureHeaders: [''] }, 'providers: provider "blank" must name its headers in lower case'],
    ['storedHeaders a string', { ...acmeProvider, name: 'flat', storedHeaders: 'acme-signature' }, 'providers: provider "flat" must list its storedHeaders and signatureHeaders (lower-case header names)'],
    ['signatureFields not a list of strings', { ...acmeProvider, name: 'fields', signatureFields: 'sig' }, 'providers: provider "fields" must list its signatureFields as dotted paths (strings)'],
    ['endpointFields not a list of strings', { ...acmeProvider, name: 'own', endpointFields: [1] }, 'providers: provider "own" must list its endpointFields as field names (strings)'],
    ['no word on declaresAccount', { ...acmeProvider, name: 'vague', declaresAccount: undefined }, 'providers: provider "vague" must say whether its events declare their account (declaresAccount: true or false)'],
    ['declaresAccount as text', { ...acmeProvider, name: 'texty', declaresAccount: 'true' }, 'providers: provider "texty" must say whether its events declare their account (declaresAccount: true or false)'],
    ['usesApi without a base URL', { ...acmeProvider, name: 'apiless', usesApi: {} }, 'providers: provider "apiless" must give usesApi as { defaultBaseUrl: "<an http(s) URL>" }'],
    ['usesApi of another scheme', { ...acmeProvider, name: 'ftp', usesApi: { defaultBaseUrl: 'ftp://x' } }, 'providers: provider "ftp" must give usesApi as { defaultBaseUrl: "<an http(s) URL>" }'],
    ['fetchesState without fetch', { ...acmeProvider, name: 'wanting', fetchesState: { wants: () => false } }, 'providers: provider "wanting" must give fetchesState as { wants(), fetch() } (two functions)'],
    ['fetchesState a function', { ...acmeProvider, name: 'fetchy', fetchesState: () => ({}) }, 'providers: provider "fetchy" must give fetchesState as { wants(), fetch() } (two functions)'],
  ])('what the interface cannot take is refused at start, in one line: %s', (_what, adapter, message) => {
    const err = refusal(() => resolveOptions({ ...base, providers: [adapter as ProviderAdapter] }));
    expect(err.setting).toBe('providers');
    if (typeof message === 'string') expect(err.message).toBe(message);
    else expect(err.message).toMatch(message);
    expect(err.message).not.toContain('\n');
  });

  describe("a start-up hook answers at once, with text or null; what else it does stops the start in one line, never showing the secret", () => {
    const SECRET = 'acme_sk_0123456789abcdef';
    /** The refusal of a start with acme whose `hook` is replaced. */
    const withHook = (hook: 'checkSecret' | 'weakSecret' | 'checkEndpoint', fn: unknown) =>
      refusal(() => resolveOptions({ ...base, providers: [{ ...acmeProvider, name: 'hooked', [hook]: fn } as ProviderAdapter], endpoints: [{ ...acmeEndpoint, provider: 'hooked', secrets: [SECRET] }] }));

    it.each<['checkSecret' | 'weakSecret' | 'checkEndpoint', unknown, string]>([
      ['checkSecret', () => Promise.resolve(null), 'endpoints: endpoint "acme-main": secret #1: provider "hooked" checkSecret must return its problem as text, or null, at once (it returned a promise)'],
      ['checkSecret', () => Promise.reject(new Error(`bad ${SECRET}`)), 'endpoints: endpoint "acme-main": secret #1: provider "hooked" checkSecret must return its problem as text, or null, at once (it returned a promise)'],
      ['checkSecret', () => 42, 'endpoints: endpoint "acme-main": secret #1: provider "hooked" checkSecret must return its problem as text, or null, at once (it returned number)'],
      ['checkSecret', () => { throw new Error(`cannot read ${SECRET}, sorry`); }, 'endpoints: endpoint "acme-main": secret #1: provider "hooked" checkSecret threw: cannot read [redacted], sorry'],
      ['checkSecret', () => { throw null; }, 'endpoints: endpoint "acme-main": secret #1: provider "hooked" checkSecret threw: a thrown null'],
      ['weakSecret', async () => 'too weak', 'endpoints: endpoint "acme-main": secret #1: provider "hooked" weakSecret must return its problem as text, or null, at once (it returned a promise)'],
      ['weakSecret', () => { throw new TypeError(SECRET); }, 'endpoints: endpoint "acme-main": secret #1: provider "hooked" weakSecret threw: [redacted]'],
      ['checkEndpoint', () => Promise.resolve('"region" must be "eu"'), 'endpoints: endpoint "acme-main": provider "hooked" checkEndpoint must return its problem as text, or null, at once (it returned a promise)'],
      ['checkEndpoint', () => ({ problem: 'x' }), 'endpoints: endpoint "acme-main": provider "hooked" checkEndpoint must return its problem as text, or null, at once (it returned object)'],
      ['checkEndpoint', () => { throw new Error('region lookup failed'); }, 'endpoints: endpoint "acme-main": provider "hooked" checkEndpoint threw: region lookup failed'],
    ])('%s: %p', (hook, fn, message) => {
      const err = withHook(hook, fn);
      expect(err.message).toBe(message);
      expect(err.message).not.toContain(SECRET);
    });

    it('undefined and the empty string are no problem (a hook of plain JavaScript that returns nothing)', () => {
      const quiet = { ...acmeProvider, name: 'quiet', checkSecret: () => undefined, weakSecret: () => '', checkEndpoint: () => undefined } as unknown as ProviderAdapter;
      expect(resolveOptions({ ...base, providers: [quiet], endpoints: [{ ...acmeEndpoint, provider: 'quiet' }] }).endpoints).toHaveLength(1);
    });
  });

  describe('prepareKey, when the endpoints are resolved at start', () => {
    const SECRET = 'acme_sk_0123456789abcdef';
    const resolveWith = (prepareKey: unknown) => {
      const adapter = { ...acmeProvider, name: 'keyed', prepareKey } as ProviderAdapter;
      const resolved = resolveOptions({ ...base, providers: [adapter], endpoints: [{ ...acmeEndpoint, provider: 'keyed', secrets: [SECRET] }] });
      return () => resolveEndpoint(resolved.endpoints[0], providerTable([adapter]));
    };

    it.each<[string, unknown, string]>([
      ['a promise', () => Promise.resolve({ key: 1 }), 'endpoint "acme-main": secret #1: provider "keyed" prepareKey must return the key (an object) at once (it returned a promise)'],
      ['a rejected promise', () => Promise.reject(new Error('no')), 'endpoint "acme-main": secret #1: provider "keyed" prepareKey must return the key (an object) at once (it returned a promise)'],
      ['a string', (secret: string) => secret, 'endpoint "acme-main": secret #1: provider "keyed" prepareKey must return the key (an object) at once (it returned string)'],
      ['null', () => null, 'endpoint "acme-main": secret #1: provider "keyed" prepareKey must return the key (an object) at once (it returned null)'],
      ['a throw naming the secret', (secret: string) => { throw new Error(`bad key ${secret}`); }, 'endpoint "acme-main": secret #1: provider "keyed" prepareKey threw: bad key [redacted]'],
    ])('%s: refused in one line', (_what, prepareKey, message) => {
      expect(resolveWith(prepareKey)).toThrow(new Error(message));
    });

    it('an object returned at once is the key', () => {
      expect(resolveWith(() => Buffer.from('k'))().keys).toEqual([Buffer.from('k')]);
    });
  });

  it("an endpoint naming an unknown provider lists the host's providers among the known ones", () => {
    const other = hmacProvider({ ...acmeProvider, name: 'zeta' });
    const err = refusal(() =>
      resolveOptions({ ...base, providers: [acmeProvider, other], endpoints: [{ ...acmeEndpoint, id: 'typo', provider: 'acmee' }] }),
    );
    expect(err.setting).toBe('endpoints');
    expect(err.message).toBe(`endpoints: endpoint "typo": unknown provider "acmee" (expected one of ${[...BUILT_IN_PROVIDER_NAMES, 'acme', 'zeta'].join(', ')})`);
    // Without the option, acme is unknown too.
    expect(refusal(() => resolveOptions({ ...base, endpoints: [acmeEndpoint] })).message).toBe(
      `endpoints: endpoint "acme-main": unknown provider "acme" (expected one of ${BUILT_IN_PROVIDER_NAMES.join(', ')})`,
    );
  });

  describe("an endpoint of a host provider is validated through the adapter's hooks", () => {
    const start = (endpoint: Partial<EndpointDefinition> & Record<string, unknown>) =>
      resolveOptions({ ...base, providers: [acmeProvider], endpoints: [{ ...acmeEndpoint, ...endpoint } as EndpointDefinition] });

    it.each<[string, Record<string, unknown>, string | RegExp]>([
      ['checkSecret: a secret of the wrong form', { secrets: ['whsec_not_acme_at_all'] }, 'endpoints: endpoint "acme-main": secret #1 must start with "acme_sk_"'],
      ['checkSecret on every entry, expiring ones too', { secrets: ['acme_sk_0123456789abcdef', { secret: 'nope-nope-nope-nope', expiresAt: '2099-01-01T00:00:00Z' }] }, 'endpoints: endpoint "acme-main": secret #2 must start with "acme_sk_"'],
      ['weakSecret: well-formed but too short', { secrets: ['acme_sk_short'] }, 'endpoints: endpoint "acme-main": secret #1 is shorter than 16 characters'],
      ['secrets required', { secrets: [] }, 'endpoints: endpoint "acme-main": "secrets" must be a non-empty array of non-empty strings'],
      ['checkEndpoint: a field of its own refused', { region: 'mars' }, 'endpoints: endpoint "acme-main": "region" must be "eu" or "us"'],
      ['no apiKey for a provider without usesApi', { apiKey: 'k_123' }, /^endpoints: endpoint "acme-main": "apiKey" and "apiBaseUrl" are for stripe(, \w+)* and \w+ endpoints only$/],
      ['the common rules: an account', { merchantAccountId: undefined }, 'endpoints: endpoint "acme-main": "merchantAccountId" is required'],
    ])('%s', (_what, endpoint, message) => {
      const err = refusal(() => start(endpoint));
      // The provider's words, never the secret's value.
      if (typeof message === 'string') expect(err.message).toBe(message);
      else expect(err.message).toMatch(message);
      expect(err.message).not.toMatch(/nope-nope|acme_sk_0123|acme_sk_short|whsec_not/);
    });

    it('what the hooks accept: its own field kept, many accounts allowed (its events declare theirs)', () => {
      expect(start({ region: 'eu' }).endpoints[0]).toEqual({ ...acmeEndpoint, region: 'eu', toleranceSeconds: 300 });
      const many = start({ merchantAccountId: undefined, merchantAccountIds: ['m_1', 'm_2'] }).endpoints[0];
      expect(many).toMatchObject({ merchantAccountIds: ['m_1', 'm_2'] });
      // A provider whose events declare no account may not serve many.
      const quiet = { ...acmeProvider, name: 'quiet', declaresAccount: false };
      expect(
        refusal(() => resolveOptions({ ...base, providers: [quiet], endpoints: [{ ...acmeEndpoint, provider: 'quiet', merchantAccountId: undefined, merchantAccountIds: ['m_1'] }] })).message,
      ).toBe('endpoints: endpoint "acme-main": "merchantAccountIds" is not available for quiet (its bodies declare no account); use "merchantAccountId"');
    });

    it('a provider without secrets refuses them', () => {
      const fetching = { ...acmeProvider, name: 'fetcher', secrets: 'none' as const };
      const err = refusal(() => resolveOptions({ ...base, providers: [fetching], endpoints: [{ ...acmeEndpoint, provider: 'fetcher' }] }));
      expect(err.message).toBe('endpoints: endpoint "acme-main": fetcher endpoints have no secrets (a delivery is checked with the provider itself); leave "secrets" out');
      expect(resolveOptions({ ...base, providers: [fetching], endpoints: [{ ...acmeEndpoint, provider: 'fetcher', secrets: [] }] }).endpoints[0].secrets).toEqual([]);
    });
  });
});
