import { ConfigurationError, validateEndpoints } from '../../src/config/validate';

/**
 * Review of issue 36: pollAfterSeconds has no upper bound. The schedule polls a payment between
 * pollAfterSeconds and 7 days after its last change, and casts the value to a PostgreSQL integer:
 * 604,800 or more polls nothing (silently); 2,147,483,648 or more makes every claim of the endpoint
 * fail ("integer out of range").
 */
describe('review 36: pollAfterSeconds bounds', () => {
  const stripe = (pollAfterSeconds: number) => ({
    id: 'stripe-main',
    provider: 'stripe',
    secrets: ['whsec_review_secret_0123456789abcdef'],
    merchantAccountId: 'acct_1',
    apiKey: 'sk_test_51ReviewKey000000000000000000000000',
    pollAfterSeconds,
  });

  it.each([604_800, 2_147_483_648, Number.MAX_SAFE_INTEGER])('refuses pollAfterSeconds %p at start (it could never poll)', (value) => {
    // Fails: accepted.
    expect(() => validateEndpoints('WEBHOOK_ENDPOINTS', [stripe(value)])).toThrow(ConfigurationError);
  });
});
