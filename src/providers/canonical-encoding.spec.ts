import type { IncomingHttpHeaders } from 'node:http';
import { signatureVectors } from '../../test/support/fixtures';
import { signedHeaders } from '../testing/sign';
import type { HmacProviderName as ProviderName } from './index';
import { resolveEndpoint, verifySignature } from '../webhooks/signature-verifier';
import { decodeHexSignature } from './provider';
import { standardProvider } from './standard.provider';

/**
 * A signature verifies in its canonical encoding only (docs/webhooks.md#signature-schemes):
 * lower-case hex for Paymos, Factuarea and Stripe; standard base64 for Standard Webhooks, whose
 * last character before `=` carries 2 padding bits that must be zero. Another spelling of the
 * same bytes is not the signature the provider sent.
 */

const BODY = '{"event_id":"evt_c","id":"evt_c","type":"invoice.paid","data":{"id":"inv_c","payment_id":"pay_c"}}';
const NOW = 1_790_590_562;

const SECRETS: Record<ProviderName, string> = {
  paymos: 'paymos-canonical-secret',
  factuarea: 'whsec_factuarea_canonical',
  stripe: 'whsec_stripe_canonical',
  standard: `whsec_${Buffer.from('standard-canonical-key-0001').toString('base64')}`,
};

const SIGNATURE_HEADER: Record<ProviderName, string> = {
  paymos: 'x-webhook-signature',
  factuarea: 'factuarea-signature',
  stripe: 'stripe-signature',
  standard: 'webhook-signature',
};

function lower(headers: Record<string, string>): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}

function verify(provider: ProviderName, headers: IncomingHttpHeaders) {
  const endpoint = resolveEndpoint({ id: 'e', provider, secrets: [SECRETS[provider]], merchantAccountId: 'acc', toleranceSeconds: 0 });
  return verifySignature(endpoint, headers, Buffer.from(BODY), NOW);
}

function signed(provider: ProviderName): IncomingHttpHeaders {
  return lower(signedHeaders(provider, SECRETS[provider], BODY, { timestamp: NOW, eventId: 'evt_c' }));
}

/** The same 32 bytes in base64 with a different last character: the padding bits set. */
function nonCanonical(b64: string): string[] {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  const last = alphabet.indexOf(b64[42]);
  return [1, 2, 3].map((bits) => `${b64.slice(0, 42)}${alphabet[last | bits]}=`).filter((s) => s !== b64);
}

describe('canonical signature encodings', () => {
  describe.each(['paymos', 'factuarea', 'stripe'] as const)('%s: lower-case hex only', (provider) => {
    it('the signature as sent verifies', () => {
      expect(verify(provider, signed(provider))).toEqual({ ok: true, secretIndex: 0 });
    });

    it('the same bytes in upper-case (or mixed-case) hex do not', () => {
      const headers = signed(provider);
      const name = SIGNATURE_HEADER[provider];
      const value = String(headers[name]);
      for (const spelled of [value.replace(/v1=([0-9a-f]{64})/g, (_m, hex: string) => `v1=${hex.toUpperCase()}`), value.replace(/v1=([0-9a-f])/g, (_m, c: string) => `v1=${c.toUpperCase()}`)]) {
        if (spelled === value) continue;
        expect(verify(provider, { ...headers, [name]: spelled })).toEqual({ ok: false, error: 'invalid_signature' });
      }
    });
  });

  it('decodeHexSignature refuses upper-case digits', () => {
    expect(decodeHexSignature('ab'.repeat(32))).toEqual(Buffer.alloc(32, 0xab));
    expect(decodeHexSignature('AB'.repeat(32))).toBe(null);
    expect(decodeHexSignature(`A${'b'.repeat(63)}`)).toBe(null);
  });

  describe('standard: canonical base64 only', () => {
    it('the signature as sent verifies; the same bytes with non-zero padding bits do not', () => {
      const headers = signed('standard');
      expect(verify('standard', headers)).toEqual({ ok: true, secretIndex: 0 });
      const b64 = String(headers['webhook-signature']).slice('v1,'.length);
      const variants = nonCanonical(b64);
      expect(variants.length).toBeGreaterThan(0);
      for (const variant of variants) {
        // Node decodes them to the very same bytes: only the text tells them apart.
        expect(Buffer.from(variant, 'base64').equals(Buffer.from(b64, 'base64'))).toBe(true);
        expect(verify('standard', { ...headers, 'webhook-signature': `v1,${variant}` })).toEqual({ ok: false, error: 'invalid_signature' });
      }
    });

    it('a non-canonical candidate beside the canonical one does not stop it verifying', () => {
      const headers = signed('standard');
      const b64 = String(headers['webhook-signature']).slice('v1,'.length);
      expect(verify('standard', { ...headers, 'webhook-signature': `v1,${nonCanonical(b64)[0]} v1,${b64}` })).toEqual({ ok: true, secretIndex: 0 });
    });

    it('the parser keeps canonical candidates only', () => {
      const b64 = Buffer.alloc(32, 7).toString('base64');
      const parts = standardProvider.signature({ 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': `v1,${b64} v1,${nonCanonical(b64)[0]}` });
      expect(parts?.candidates).toEqual([Buffer.alloc(32, 7)]);
    });
  });

  it.each(signatureVectors().map((v) => [`${v.provider} ${v.case}`, v] as const))('shared vector %s: answers as it expects', (_name, v) => {
    const endpoint = resolveEndpoint({ id: 'e', provider: v.provider, secrets: v.secrets, merchantAccountId: 'acc', toleranceSeconds: v.toleranceSeconds });
    const result = verifySignature(endpoint, lower(v.headers), Buffer.from(v.body, 'utf8'), v.now);
    expect(result.ok ? 'valid' : (result as { error: string }).error).toBe(v.expect);
  });
});
