import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { FIXTURES_DIR, signatureVectors, SignatureVector } from '../../test/support/fixtures';
import { signedHeaders } from '../testing/sign';
import type { HmacProviderName as ProviderName } from '../providers';
import { resolveEndpoint, ResolvedEndpoint, verifySignature } from './signature-verifier';

const NOW = 1_790_590_562;
const BODY = '{"id":"evt_1","type":"payment.succeeded","data":{"payment_id":"pay_1","amount":4990}}';

/** Secrets per provider: Standard keys are `whsec_<base64>`, the others are any UTF-8 string. */
const SECRETS: Record<ProviderName, [string, string]> = {
  paymos: ['paymos-secret-a', 'paymos-secret-b'],
  factuarea: ['whsec_factuarea_a', 'whsec_factuarea_b'],
  stripe: ['whsec_stripe_a', 'whsec_stripe_b'],
  standard: [
    `whsec_${Buffer.from('standard-key-number-one').toString('base64')}`,
    `whsec_${Buffer.from('standard-key-number-two').toString('base64')}`,
  ],
};
const PROVIDER_NAMES: ProviderName[] = ['paymos', 'factuarea', 'stripe', 'standard'];

function endpoint(provider: ProviderName, secrets: string[], toleranceSeconds?: number): ResolvedEndpoint {
  return resolveEndpoint({ id: 'e', provider, secrets, merchantAccountId: 'acc', toleranceSeconds });
}

function lowerCaseNames(headers: Record<string, string>): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
}

/** Independent of src/testing/sign.ts: the providers' published algorithms, written out here. */
function hexHmac(secret: string, content: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(content).digest('hex');
}

function standardHmac(secret: string, content: string): string {
  return createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64')).update(content).digest('base64');
}

/** Headers for `body` signed at `t` by every secret given (one `v1` entry each). */
function sign(provider: ProviderName, secrets: string[], t: number, body = BODY, id = 'msg_1'): IncomingHttpHeaders {
  switch (provider) {
    case 'paymos':
      return {
        'x-webhook-timestamp': String(t),
        'x-webhook-signature': secrets.map((s) => `v1=${hexHmac(s, `${t}.${body}`)}`).join(','),
      };
    case 'factuarea':
    case 'stripe':
      return {
        [`${provider}-signature`]: [`t=${t}`, ...secrets.map((s) => `v1=${hexHmac(s, `${t}.${body}`)}`)].join(','),
      };
    case 'standard':
      return {
        'webhook-id': id,
        'webhook-timestamp': String(t),
        'webhook-signature': secrets.map((s) => `v1,${standardHmac(s, `${id}.${t}.${body}`)}`).join(' '),
      };
  }
}

function verify(ep: ResolvedEndpoint, headers: IncomingHttpHeaders, body = BODY, now = NOW) {
  return verifySignature(ep, headers, Buffer.from(body, 'utf8'), now);
}

describe('verifySignature: shared signature vectors (docs/webhooks.md#signature-schemes)', () => {
  const vectors = signatureVectors();
  const inFile = JSON.parse(readFileSync(join(FIXTURES_DIR, 'vectors', 'signatures.json'), 'utf8')) as {
    vectors: unknown[];
  };

  it('reads every vector of the shared file', () => {
    expect(vectors.length).toBeGreaterThan(0);
    expect(vectors.length).toBe(inFile.vectors.length);
  });

  it('covers all four providers', () => {
    expect([...new Set(vectors.map((v) => v.provider))].sort()).toEqual(['factuarea', 'paymos', 'standard', 'stripe']);
  });

  it.each(vectors)('$provider: $case → $expect', (v: SignatureVector) => {
    const ep = resolveEndpoint({
      id: 'e',
      provider: v.provider,
      secrets: v.secrets,
      merchantAccountId: 'acc',
      toleranceSeconds: v.toleranceSeconds ?? 300,
    });
    const result = verifySignature(ep, lowerCaseNames(v.headers), Buffer.from(v.body, 'utf8'), v.now);
    if (v.expect === 'valid') {
      expect(result).toEqual({ ok: true, secretIndex: 0 });
    } else {
      expect(result).toEqual({ ok: false, error: v.expect });
    }
  });
});

describe('resolveEndpoint', () => {
  it('looks up the adapter and keeps the endpoint fields', () => {
    const ep = resolveEndpoint({
      id: 'stripe-main',
      provider: 'stripe',
      secrets: ['whsec_x'],
      merchantAccountId: 'acct_1',
      toleranceSeconds: 60,
    });
    expect(ep.id).toBe('stripe-main');
    expect(ep.provider.name).toBe('stripe');
    expect(ep.merchantAccountId).toBe('acct_1');
    expect(ep.toleranceSeconds).toBe(60);
  });

  it('defaults toleranceSeconds to 300 and keeps an explicit 0', () => {
    expect(endpoint('paymos', ['s']).toleranceSeconds).toBe(300);
    expect(endpoint('paymos', ['s'], 0).toleranceSeconds).toBe(0);
  });

  it('keys Paymos, Factuarea and Stripe with the UTF-8 bytes of the whole secret', () => {
    for (const provider of ['paymos', 'factuarea', 'stripe'] as const) {
      expect(endpoint(provider, ['whsec_abc', 'é']).keys).toEqual([Buffer.from('whsec_abc'), Buffer.from('é', 'utf8')]);
    }
  });

  it('keys Standard with the base64-decoded part after whsec_', () => {
    expect(endpoint('standard', [SECRETS.standard[0]]).keys).toEqual([Buffer.from('standard-key-number-one')]);
  });
});

describe('verifySignature', () => {
  describe.each(PROVIDER_NAMES)('%s', (provider) => {
    const [secretA, secretB] = SECRETS[provider];

    it('accepts a fresh signature', () => {
      expect(verify(endpoint(provider, [secretA]), sign(provider, [secretA], NOW))).toEqual({ ok: true, secretIndex: 0 });
    });

    it('rejects a signature made with another secret', () => {
      expect(verify(endpoint(provider, [secretA]), sign(provider, [secretB], NOW))).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it('rejects a body changed by one byte', () => {
      expect(verify(endpoint(provider, [secretA]), sign(provider, [secretA], NOW), `${BODY} `)).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it('reports secretIndex 1 for a signature valid for the second configured secret', () => {
      expect(verify(endpoint(provider, [secretA, secretB]), sign(provider, [secretB], NOW))).toEqual({
        ok: true,
        secretIndex: 1,
      });
    });

    it('reports the first configured secret that matches when the sender signs with both', () => {
      expect(verify(endpoint(provider, [secretB, secretA]), sign(provider, [secretA, secretB], NOW))).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('accepts a rotation header whose second candidate is the one the receiver knows', () => {
      expect(verify(endpoint(provider, [secretB]), sign(provider, [secretA, secretB], NOW))).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    describe('timestamp tolerance (|now − t| ≤ tolerance passes)', () => {
      it.each([
        ['exactly tolerance in the past', -300, { ok: true, secretIndex: 0 }],
        ['exactly tolerance in the future', 300, { ok: true, secretIndex: 0 }],
        ['tolerance + 1 in the past', -301, { ok: false, error: 'timestamp_out_of_tolerance' }],
        ['tolerance + 1 in the future', 301, { ok: false, error: 'timestamp_out_of_tolerance' }],
      ])('t %s', (_label, offset, expected) => {
        const t = NOW + offset;
        expect(verify(endpoint(provider, [secretA], 300), sign(provider, [secretA], t))).toEqual(expected);
      });

      it('uses the endpoint tolerance (60 s): edge passes, one more second fails, both directions', () => {
        const ep = endpoint(provider, [secretA], 60);
        expect(verify(ep, sign(provider, [secretA], NOW - 60))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, sign(provider, [secretA], NOW + 60))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, sign(provider, [secretA], NOW - 61))).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
        expect(verify(ep, sign(provider, [secretA], NOW + 61))).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
      });

      it('applies the default tolerance of 300 when none is configured', () => {
        const ep = endpoint(provider, [secretA]);
        expect(verify(ep, sign(provider, [secretA], NOW - 300))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, sign(provider, [secretA], NOW + 301))).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
      });

      it('turns the check off with toleranceSeconds 0', () => {
        const ep = endpoint(provider, [secretA], 0);
        expect(verify(ep, sign(provider, [secretA], NOW - 10_000_000))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, sign(provider, [secretA], NOW + 10_000_000))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, sign(provider, [secretA], 0))).toEqual({ ok: true, secretIndex: 0 });
      });

      it('checks the signature before the timestamp (invalid_signature wins over a stale t)', () => {
        expect(verify(endpoint(provider, [secretA]), sign(provider, [secretB], NOW - 10_000))).toEqual({
          ok: false,
          error: 'invalid_signature',
        });
      });
    });
  });

  describe('Paymos header parsing', () => {
    const ep = endpoint('paymos', [SECRETS.paymos[0]]);
    const good = sign('paymos', [SECRETS.paymos[0]], NOW);
    const goodSig = good['x-webhook-signature'] as string;
    const goodHex = goodSig.slice('v1='.length);

    it.each<[string, IncomingHttpHeaders]>([
      ['no signature header', { 'x-webhook-timestamp': String(NOW) }],
      ['no timestamp header', { 'x-webhook-signature': goodSig }],
      ['a non-numeric timestamp', { 'x-webhook-timestamp': 'abc', 'x-webhook-signature': goodSig }],
      ['a fractional timestamp', { 'x-webhook-timestamp': `${NOW}.5`, 'x-webhook-signature': goodSig }],
      ['a negative timestamp', { 'x-webhook-timestamp': `-${NOW}`, 'x-webhook-signature': goodSig }],
      ['an empty timestamp', { 'x-webhook-timestamp': '', 'x-webhook-signature': goodSig }],
      ['an empty signature header', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': '' }],
      ['a blank signature header', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': '   ' }],
      ['an entry without "="', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': `v1${goodHex}` }],
      ['a second entry without "="', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': `${goodSig},junk` }],
      ['an entry with an empty name', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': `=${goodHex}` }],
      ['a trailing comma', { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': `${goodSig},` }],
    ])('answers missing_signature for %s', (_label, headers) => {
      expect(verify(ep, headers)).toEqual({ ok: false, error: 'missing_signature' });
    });

    it('answers invalid_signature for a header with only a v0 entry', () => {
      expect(verify(ep, { ...good, 'x-webhook-signature': `v0=${goodHex}` })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it('ignores entries of other schemes beside a valid v1', () => {
      expect(verify(ep, { ...good, 'x-webhook-signature': `v0=${'0'.repeat(64)},${goodSig},v2=xyz` })).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('accepts spaces around entries', () => {
      expect(verify(ep, { ...good, 'x-webhook-signature': ` v0=abc , ${goodSig} ` })).toEqual({ ok: true, secretIndex: 0 });
    });

    it('signs the timestamp: a signature moved to another timestamp fails', () => {
      expect(verify(ep, { ...good, 'x-webhook-timestamp': String(NOW + 1) })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it('signs the timestamp as sent (leading zeros are part of the signed content)', () => {
      const t = `0${NOW}`;
      const headers = { 'x-webhook-timestamp': t, 'x-webhook-signature': `v1=${hexHmac(SECRETS.paymos[0], `${t}.${BODY}`)}` };
      expect(verify(ep, headers)).toEqual({ ok: true, secretIndex: 0 });
      expect(verify(ep, { ...headers, 'x-webhook-timestamp': String(NOW) })).toEqual({ ok: false, error: 'invalid_signature' });
    });

    it('does not need X-Webhook-Id to verify (it is not signed)', () => {
      expect(verify(ep, { ...good, 'x-webhook-id': 'evt_whatever' })).toEqual({ ok: true, secretIndex: 0 });
    });

    it('reads the first value of a repeated header', () => {
      expect(verify(ep, { ...good, 'x-webhook-signature': [goodSig, 'v1=00'] as unknown as string })).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('does not read mixed-case header names (Node lower-cases them before this point)', () => {
      expect(verify(ep, { 'X-Webhook-Timestamp': String(NOW), 'X-Webhook-Signature': goodSig })).toEqual({
        ok: false,
        error: 'missing_signature',
      });
    });
  });

  describe('v1 candidates of the hex schemes', () => {
    describe.each(['paymos', 'factuarea', 'stripe'] as const)('%s', (provider) => {
      const secret = SECRETS[provider][0];
      const ep = endpoint(provider, [secret]);
      const goodHex = hexHmac(secret, `${NOW}.${BODY}`);
      const headersWith = (entries: string[]): IncomingHttpHeaders =>
        provider === 'paymos'
          ? { 'x-webhook-timestamp': String(NOW), 'x-webhook-signature': entries.join(',') }
          : { [`${provider}-signature`]: [`t=${NOW}`, ...entries].join(',') };

      it.each([
        ['63 hex digits', goodHex.slice(0, 63)],
        ['65 hex digits', `${goodHex}0`],
        ['a truncated prefix of the right value', goodHex.slice(0, 32)],
        ['non-hex characters', `${goodHex.slice(0, 62)}zz`],
        ['an empty value', ''],
        ['base64 of the right digest', Buffer.from(goodHex, 'hex').toString('base64')],
      ])('ignores a candidate of %s (invalid_signature when it is the only one)', (_label, value) => {
        expect(verify(ep, headersWith([`v1=${value}`]))).toEqual({ ok: false, error: 'invalid_signature' });
      });

      it('ignores a malformed candidate beside a valid one, in either order', () => {
        expect(verify(ep, headersWith(['v1=abcd', `v1=${goodHex}`]))).toEqual({ ok: true, secretIndex: 0 });
        expect(verify(ep, headersWith([`v1=${goodHex}`, 'v1=abcd']))).toEqual({ ok: true, secretIndex: 0 });
      });

      it('refuses upper-case hex: the contract signs lower-case hex, and only the canonical spelling verifies', () => {
        expect(verify(ep, headersWith([`v1=${goodHex.toUpperCase()}`]))).toEqual({ ok: false, error: 'invalid_signature' });
      });

      it('answers invalid_signature for a header with only a v0 entry', () => {
        expect(verify(ep, headersWith([`v0=${goodHex}`]))).toEqual({ ok: false, error: 'invalid_signature' });
      });

      it('accepts any number of v1 entries', () => {
        const others = Array.from({ length: 5 }, (_, i) => `v1=${hexHmac(`other-${i}`, `${NOW}.${BODY}`)}`);
        expect(verify(ep, headersWith([...others, `v1=${goodHex}`]))).toEqual({ ok: true, secretIndex: 0 });
      });
    });
  });

  describe.each(['factuarea', 'stripe'] as const)('%s header parsing (t=…,v1=…)', (provider) => {
    const secret = SECRETS[provider][0];
    const ep = endpoint(provider, [secret]);
    const name = `${provider}-signature`;
    const goodHex = hexHmac(secret, `${NOW}.${BODY}`);

    it.each<[string, IncomingHttpHeaders]>([
      ['no signature header', {}],
      ['an empty header', { [name]: '' }],
      ['a blank header', { [name]: '  ' }],
      ['no t= entry', { [name]: `v1=${goodHex}` }],
      ['two t= entries', { [name]: `t=${NOW},t=${NOW},v1=${goodHex}` }],
      ['two t= entries with different values', { [name]: `t=${NOW},v1=${goodHex},t=${NOW + 1}` }],
      ['a non-numeric t', { [name]: `t=abc,v1=${goodHex}` }],
      ['an empty t', { [name]: `t=,v1=${goodHex}` }],
      ['an entry without "="', { [name]: `t=${NOW},v1${goodHex}` }],
      ['a bare word entry', { [name]: `t=${NOW},v1=${goodHex},oops` }],
      ['an entry with an empty name', { [name]: `t=${NOW},=${goodHex}` }],
    ])('answers missing_signature for %s', (_label, headers) => {
      expect(verify(ep, headers)).toEqual({ ok: false, error: 'missing_signature' });
    });

    it('accepts the entries in any order', () => {
      expect(verify(ep, { [name]: `v1=${goodHex},t=${NOW}` })).toEqual({ ok: true, secretIndex: 0 });
    });

    it('answers invalid_signature for a header with t= and no v1 entry', () => {
      expect(verify(ep, { [name]: `t=${NOW}` })).toEqual({ ok: false, error: 'invalid_signature' });
    });

    it('signs t: a signature moved to another t fails', () => {
      expect(verify(ep, { [name]: `t=${NOW + 1},v1=${goodHex}` })).toEqual({ ok: false, error: 'invalid_signature' });
    });

    it('ignores the other provider’s header name', () => {
      const other = provider === 'stripe' ? 'factuarea-signature' : 'stripe-signature';
      expect(verify(ep, { [other]: `t=${NOW},v1=${goodHex}` })).toEqual({ ok: false, error: 'missing_signature' });
    });
  });

  describe('Stripe key', () => {
    it('keys the HMAC with the whole whsec_ string, not its decoded part', () => {
      const secret = `whsec_${Buffer.from('raw-key').toString('base64')}`;
      const decodedKeySig = createHmac('sha256', Buffer.from('raw-key')).update(`${NOW}.${BODY}`).digest('hex');
      const ep = endpoint('stripe', [secret]);
      expect(verify(ep, { 'stripe-signature': `t=${NOW},v1=${decodedKeySig}` })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
      expect(verify(ep, { 'stripe-signature': `t=${NOW},v1=${hexHmac(secret, `${NOW}.${BODY}`)}` })).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });
  });

  describe('Standard Webhooks header parsing', () => {
    const secret = SECRETS.standard[0];
    const ep = endpoint('standard', [secret]);
    const good = sign('standard', [secret], NOW, BODY, 'msg_abc');
    const goodSig = good['webhook-signature'] as string;

    it('accepts the signed headers', () => {
      expect(verify(ep, good)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('answers invalid_signature when webhook-id is changed (it is signed)', () => {
      expect(verify(ep, { ...good, 'webhook-id': 'msg_abd' })).toEqual({ ok: false, error: 'invalid_signature' });
    });

    it('answers invalid_signature when webhook-timestamp is changed (it is signed)', () => {
      expect(verify(ep, { ...good, 'webhook-timestamp': String(NOW - 1) })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it.each<[string, IncomingHttpHeaders]>([
      ['no webhook-id', { 'webhook-timestamp': String(NOW), 'webhook-signature': goodSig }],
      ['an empty webhook-id', { ...good, 'webhook-id': '' }],
      ['no webhook-timestamp', { 'webhook-id': 'msg_abc', 'webhook-signature': goodSig }],
      ['a non-numeric webhook-timestamp', { ...good, 'webhook-timestamp': 'soon' }],
      ['an ISO webhook-timestamp', { ...good, 'webhook-timestamp': '2026-09-29T10:16:01Z' }],
      ['no webhook-signature', { 'webhook-id': 'msg_abc', 'webhook-timestamp': String(NOW) }],
      ['an empty webhook-signature', { ...good, 'webhook-signature': '' }],
      ['a blank webhook-signature', { ...good, 'webhook-signature': '   ' }],
      ['an entry without ","', { ...good, 'webhook-signature': goodSig.replace(',', '') }],
      ['an entry with an empty version', { ...good, 'webhook-signature': goodSig.slice('v1'.length) }],
      ['a second entry without ","', { ...good, 'webhook-signature': `${goodSig} garbage` }],
    ])('answers missing_signature for %s', (_label, headers) => {
      expect(verify(ep, headers)).toEqual({ ok: false, error: 'missing_signature' });
    });

    it('answers invalid_signature for a header with no v1 entry', () => {
      expect(verify(ep, { ...good, 'webhook-signature': goodSig.replace('v1,', 'v2,') })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it.each([
      ['base64 without padding', (s: string) => s.replace(/=$/, '')],
      ['a truncated value', (s: string) => s.slice(0, 20)],
      ['hex instead of base64', (s: string) => Buffer.from(s, 'base64').toString('hex')],
      ['URL-safe base64', (s: string) => s.replace(/\+/g, '-').replace(/\//g, '_')],
    ])('ignores a v1 candidate in %s', (_label, mangle) => {
      const value = goodSig.slice('v1,'.length);
      const mangled = mangle(value);
      // Each mangling must actually change the value for the test to mean anything.
      expect(mangled === value).toBe(false);
      expect(verify(ep, { ...good, 'webhook-signature': `v1,${mangled}` })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
      expect(verify(ep, { ...good, 'webhook-signature': `v1,${mangled} ${goodSig}` })).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('accepts any whitespace between entries', () => {
      const other = `v1,${standardHmac(SECRETS.standard[1], `msg_abc.${NOW}.${BODY}`)}`;
      expect(verify(ep, { ...good, 'webhook-signature': `  ${other}\t ${goodSig}  ` })).toEqual({
        ok: true,
        secretIndex: 0,
      });
    });

    it('keys the HMAC with the decoded key, not the whsec_ string', () => {
      const wrong = createHmac('sha256', Buffer.from(secret)).update(`msg_abc.${NOW}.${BODY}`).digest('base64');
      expect(verify(ep, { ...good, 'webhook-signature': `v1,${wrong}` })).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });
  });

  it('verifies the raw bytes, not a decoded string (non-ASCII body)', () => {
    const secret = SECRETS.paymos[0];
    const body = '{"event_id":"evt_ü","type":"invoice.paid","note":"Señor 💶"}';
    const headers = sign('paymos', [secret], NOW, body);
    const ep = endpoint('paymos', [secret]);
    expect(verifySignature(ep, headers, Buffer.from(body, 'utf8'), NOW)).toEqual({ ok: true, secretIndex: 0 });
    expect(verifySignature(ep, headers, Buffer.from(body, 'latin1'), NOW)).toEqual({
      ok: false,
      error: 'invalid_signature',
    });
  });

  it('answers invalid_signature for an endpoint with no keys', () => {
    const ep = { ...endpoint('paymos', [SECRETS.paymos[0]]), keys: [] };
    expect(verify(ep, sign('paymos', [SECRETS.paymos[0]], NOW))).toEqual({ ok: false, error: 'invalid_signature' });
  });
});

describe('signedHeaders (src/testing/sign.ts) against verifySignature', () => {
  describe.each(PROVIDER_NAMES)('%s', (provider) => {
    const [secretA, secretB] = SECRETS[provider];
    const secretC = provider === 'standard' ? `whsec_${Buffer.from('a third key').toString('base64')}` : `${secretA}-c`;

    it('makes headers that verify with the signing secret', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, eventId: 'evt_1' });
      expect(verify(endpoint(provider, [secretA]), headers)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('makes headers that do not verify with another secret', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, eventId: 'evt_1' });
      expect(verify(endpoint(provider, [secretB]), headers)).toEqual({ ok: false, error: 'invalid_signature' });
    });

    it('signs the body given: another body does not verify', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, eventId: 'evt_1' });
      expect(verify(endpoint(provider, [secretA]), headers, BODY.replace('4990', '4991'))).toEqual({
        ok: false,
        error: 'invalid_signature',
      });
    });

    it('uses the timestamp given', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW - 1000, eventId: 'evt_1' });
      expect(verify(endpoint(provider, [secretA]), headers)).toEqual({ ok: false, error: 'timestamp_out_of_tolerance' });
      expect(verify(endpoint(provider, [secretA]), headers, BODY, NOW - 1000)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('defaults the timestamp to now', () => {
      const before = Math.floor(Date.now() / 1000);
      const headers = signedHeaders(provider, secretA, BODY);
      const after = Math.floor(Date.now() / 1000);
      const ep = endpoint(provider, [secretA], 1);
      expect(verify(ep, headers, BODY, before)).toEqual({ ok: true, secretIndex: 0 });
      expect(verify(ep, headers, BODY, after)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('extraSecrets: the receiver that knows only the new secret accepts', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, extraSecrets: [secretB] });
      expect(verify(endpoint(provider, [secretB]), headers)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('extraSecrets: the receiver that knows only the old secret accepts', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, extraSecrets: [secretB] });
      expect(verify(endpoint(provider, [secretA]), headers)).toEqual({ ok: true, secretIndex: 0 });
    });

    it('extraSecrets: the index is that of the receiver’s first matching secret', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, extraSecrets: [secretB] });
      expect(verify(endpoint(provider, [secretC, secretB]), headers)).toEqual({ ok: true, secretIndex: 1 });
    });

    it('extraSecrets: a receiver that knows neither rejects', () => {
      const headers = signedHeaders(provider, secretA, BODY, { timestamp: NOW, extraSecrets: [secretB] });
      expect(verify(endpoint(provider, [secretC]), headers)).toEqual({ ok: false, error: 'invalid_signature' });
    });
  });

  it('puts the event id in the provider’s id headers', () => {
    const opts = { timestamp: NOW, eventId: 'evt_42', deliveryId: 'dlv_7' };
    expect(signedHeaders('paymos', 's', BODY, opts)['x-webhook-id']).toBe('evt_42');
    const factuarea = signedHeaders('factuarea', 's', BODY, opts);
    expect(factuarea['factuarea-event-id']).toBe('evt_42');
    expect(factuarea['idempotency-key']).toBe('evt_42');
    expect(factuarea['factuarea-delivery-id']).toBe('dlv_7');
    expect(signedHeaders('standard', SECRETS.standard[0], BODY, opts)['webhook-id']).toBe('evt_42');
    expect(Object.keys(signedHeaders('stripe', 's', BODY, opts)).sort()).toEqual(['content-type', 'stripe-signature']);
  });

  it('makes a fresh webhook-id per Standard delivery when none is given', () => {
    const a = signedHeaders('standard', SECRETS.standard[0], BODY, { timestamp: NOW })['webhook-id'];
    const b = signedHeaders('standard', SECRETS.standard[0], BODY, { timestamp: NOW })['webhook-id'];
    expect(a.startsWith('msg_')).toBe(true);
    expect(a === b).toBe(false);
  });
});
