import { signedHeaders } from '../../src/testing/sign';
import { resolveEndpoint, servesAccount, verifySignature } from '../../src/webhooks/signature-verifier';

/** Unit rules of expiring secrets and multi-account endpoints on the resolved endpoint (no I/O). */
const EXPIRES = '2026-03-01T12:00:00Z';
const EXPIRES_MS = Date.parse(EXPIRES);
const BODY = '{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1"}}}';

const rotating = resolveEndpoint({
  id: 'rotating',
  provider: 'stripe',
  secrets: [{ secret: 'whsec_old', expiresAt: EXPIRES }, 'whsec_new'],
  merchantAccountId: 'acct_1',
  toleranceSeconds: 0,
});

const verifyAt = (secret: string, nowMs: number) =>
  verifySignature(rotating, signedHeaders('stripe', secret, BODY, { timestamp: 1 }), Buffer.from(BODY), Math.floor(nowMs / 1000), nowMs);

describe('expiring secrets in verifySignature', () => {
  it('resolves each secret with its expiry (null: never)', () => {
    expect(rotating.expiresAtMs).toEqual([EXPIRES_MS, null]);
    expect(rotating.keys.map((k) => k.toString())).toEqual(['whsec_old', 'whsec_new']);
  });

  it('the old secret verifies until the millisecond before its instant, never from it on', () => {
    expect(verifyAt('whsec_old', EXPIRES_MS - 1)).toEqual({ ok: true, secretIndex: 0 });
    expect(verifyAt('whsec_old', EXPIRES_MS)).toEqual({ ok: false, error: 'invalid_signature' });
    expect(verifyAt('whsec_old', EXPIRES_MS + 86_400_000)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('the other secret keeps verifying, under its own index', () => {
    expect(verifyAt('whsec_new', EXPIRES_MS - 1)).toEqual({ ok: true, secretIndex: 1 });
    expect(verifyAt('whsec_new', EXPIRES_MS + 1)).toEqual({ ok: true, secretIndex: 1 });
  });

  it('an instant with an offset is the same instant', () => {
    const ep = resolveEndpoint({ id: 'e', provider: 'stripe', secrets: [{ secret: 's', expiresAt: '2026-03-01T13:00:00+01:00' }], merchantAccountId: 'a' });
    expect(ep.expiresAtMs).toEqual([EXPIRES_MS]);
  });

  it('without a millisecond clock, nowSeconds decides', () => {
    const headers = signedHeaders('stripe', 'whsec_old', BODY, { timestamp: 1 });
    expect(verifySignature(rotating, headers, Buffer.from(BODY), EXPIRES_MS / 1000 - 1)).toEqual({ ok: true, secretIndex: 0 });
    expect(verifySignature(rotating, headers, Buffer.from(BODY), EXPIRES_MS / 1000)).toEqual({ ok: false, error: 'invalid_signature' });
  });
});

describe('the accounts a resolved endpoint serves', () => {
  const single = resolveEndpoint({ id: 's', provider: 'stripe', secrets: ['x'], merchantAccountId: 'acct_1' });
  const listed = resolveEndpoint({ id: 'l', provider: 'stripe', secrets: ['x'], merchantAccountIds: ['acct_A', 'acct_B'] });
  const any = resolveEndpoint({ id: 'a', provider: 'stripe', secrets: ['x'], merchantAccountIds: ['*'] });

  it('exposes merchantAccountId or merchantAccountIds, the other null', () => {
    expect([single.merchantAccountId, single.merchantAccountIds]).toEqual(['acct_1', null]);
    expect([listed.merchantAccountId, listed.merchantAccountIds]).toEqual([null, ['acct_A', 'acct_B']]);
    expect([any.merchantAccountId, any.merchantAccountIds]).toEqual([null, '*']);
  });

  it('serves its own account, its listed ones, or any', () => {
    expect([servesAccount(single, 'acct_1'), servesAccount(single, 'acct_A')]).toEqual([true, false]);
    expect([servesAccount(listed, 'acct_B'), servesAccount(listed, 'acct_C')]).toEqual([true, false]);
    expect(servesAccount(any, 'acct_whoever')).toBe(true);
  });
});
