import { ConfigurationError, validateEndpoints } from '../config/validate';
import { MalformedPayloadError, ProviderApiError, ProviderEndpoint } from './provider';
import { MAX_RETRY_AFTER_MS, retryAfterMs, withoutKey } from './stripe-api';
import { stripeProvider } from './stripe.provider';

/** Stripe's thin event notifications, the adapter alone (the whole service: test/webhooks/stripe-thin.int-spec.ts). */
const endpoint = (settings: Record<string, unknown> = { payloadStyle: 'thin' }, extra: Partial<ProviderEndpoint> = {}): ProviderEndpoint => ({
  id: 'thin',
  merchantAccountId: 'acct_platform',
  apiKey: 'sk_test_unit_key_never_called',
  apiBaseUrl: 'http://127.0.0.1:9',
  settings,
  ...extra,
});

/** The published shape (stripe-node's tests, Stripe's docs), with a PaymentIntent as its related object. */
const notification = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  id: 'evt_test_65R9Ijk8dKEYZcXeRWn16R9A7j1FSQ3w3TGDPLLGSM4CW0',
  object: 'v2.core.event',
  type: 'v1.payment_intent.succeeded',
  livemode: false,
  created: '2026-12-01T10:00:00.000Z',
  context: 'acct_1Nv0FGQ9RKHgCVdK',
  related_object: { id: 'pi_3QabcDEF', type: 'payment_intent', url: '/v1/payment_intents/pi_3QabcDEF' },
  ...overrides,
});

function malformed(fn: () => unknown): MalformedPayloadError {
  try {
    fn();
  } catch (err) {
    if (err instanceof MalformedPayloadError) return err;
    throw err;
  }
  throw new Error('expected a MalformedPayloadError, nothing was thrown');
}

describe('Stripe thin event notifications (the adapter)', () => {
  describe('identify', () => {
    it('keys a notification on its id, with its context as the declared account, and a PaymentIntent notification on the PaymentIntent', () => {
      expect(stripeProvider.identify(notification(), {}, endpoint())).toEqual({
        eventId: 'evt_test_65R9Ijk8dKEYZcXeRWn16R9A7j1FSQ3w3TGDPLLGSM4CW0',
        eventType: 'v1.payment_intent.succeeded',
        resourceId: 'pi_3QabcDEF',
        deliveryId: null,
        account: 'acct_1Nv0FGQ9RKHgCVdK',
        apiVersion: null,
      });
    });

    it('a charge or dispute notification names no PaymentIntent: the resource is read with the object', () => {
      const refunded = notification({ type: 'v1.charge.refunded', related_object: { id: 'ch_1', type: 'charge', url: '/v1/charges/ch_1' } });
      expect(stripeProvider.identify(refunded, {}, endpoint()).resourceId).toBe(null);
    });

    it('no context (the platform account itself, or `null` as stripe-node\'s examples send it) declares no account', () => {
      const { context: _omitted, ...without } = notification();
      expect(stripeProvider.identify(without, {}, endpoint()).account).toBe(null);
      expect(stripeProvider.identify(notification({ context: null }), {}, endpoint()).account).toBe(null);
    });

    it('refuses a notification without an id or a type, and one whose context is unprintable', () => {
      expect(malformed(() => stripeProvider.identify(notification({ id: undefined }), {}, endpoint())).detail).toBe('id is missing');
      expect(malformed(() => stripeProvider.identify(notification({ type: 7 }), {}, endpoint())).detail).toBe('type is missing');
      expect(malformed(() => stripeProvider.identify(notification({ context: 'acct_\u0000x' }), {}, endpoint())).detail).toMatch(/^context is not a printable string/);
    });

    it('a thin endpoint reads a notification as one and anything else as a classic event; a snapshot endpoint reads every body as a classic event; without an endpoint the body says which', () => {
      const classic = { id: 'evt_1', object: 'event', type: 'payment_intent.succeeded', data: { object: { id: 'pi_1' } } };
      expect(stripeProvider.identify(classic, {}, endpoint())).toMatchObject({ eventId: 'evt_1', eventType: 'payment_intent.succeeded', resourceId: 'pi_1' });
      // On a snapshot endpoint a notification is a type it does not act on: no resource, no account read from `context`.
      expect(stripeProvider.identify(notification(), {}, endpoint({}))).toMatchObject({ eventType: 'v1.payment_intent.succeeded', resourceId: null, account: null });
      expect(stripeProvider.identify(notification(), {})).toMatchObject({ eventType: 'v1.payment_intent.succeeded', resourceId: 'pi_3QabcDEF', account: 'acct_1Nv0FGQ9RKHgCVdK' });
      expect(stripeProvider.identify(classic, {}).resourceId).toBe('pi_1');
    });
  });

  describe('which notifications are fetched (wants)', () => {
    const wants = (body: Record<string, unknown>, at: ProviderEndpoint | undefined = endpoint()) => stripeProvider.fetchesState!.wants(body, body.type as string, at);

    it('the types acted on, each at its own object path', () => {
      expect(wants(notification())).toBe(true);
      expect(wants(notification({ type: 'v1.charge.refunded', related_object: { id: 'ch_1', type: 'charge', url: '/v1/charges/ch_1' } }))).toBe(true);
      expect(wants(notification({ type: 'v1.charge.dispute.closed', related_object: { id: 'dp_1', type: 'dispute', url: '/v1/disputes/dp_1' } }))).toBe(true);
    });

    it('nothing else: other types, v2 types, snapshot events, and a related object at another path, of another kind or with an id a URL would read otherwise', () => {
      expect(wants(notification({ type: 'v1.payment_intent.created' }))).toBe(false);
      expect(wants(notification({ type: 'v1.billing.meter.error_report_triggered', related_object: { id: 'mtr_1', type: 'billing.meter', url: '/v1/billing/meters/mtr_1' } }))).toBe(false);
      expect(wants(notification({ type: 'v2.core.event_destination.ping' }))).toBe(false);
      expect(wants({ ...notification(), object: 'event' })).toBe(false);
      expect(wants(notification({ related_object: { id: 'pi_3QabcDEF', type: 'payment_intent', url: '/v1/customers/pi_3QabcDEF' } }))).toBe(false);
      expect(wants(notification({ type: 'v1.charge.refunded' }))).toBe(false);
      expect(wants(notification({ related_object: { id: '../v1/x', type: 'payment_intent', url: '/v1/payment_intents/../v1/x' } }))).toBe(false);
      expect(wants(notification({ related_object: { id: 'pi_1?expand[]=x', type: 'payment_intent', url: '/v1/payment_intents/pi_1?expand[]=x' } }))).toBe(false);
      expect(wants(notification({ related_object: null }))).toBe(false);
    });

    it('a snapshot endpoint fetches nothing; an endpoint no longer configured, what the body names (its fetch then fails: endpoint_not_configured)', () => {
      expect(wants(notification(), endpoint({}))).toBe(false);
      expect(wants(notification(), endpoint({ payloadStyle: 'snapshot' }))).toBe(false);
      expect(wants(notification(), undefined)).toBe(true);
    });

    it('a snapshot event normalizes as before, and a notification never does by itself (its state is fetched)', () => {
      expect(stripeProvider.normalize(notification(), 'v1.payment_intent.succeeded', endpoint())).toBe(null);
    });
  });

  describe('fetch', () => {
    it('an endpoint without an API key (or no longer configured) is an error of its own code, retried like any processing failure', async () => {
      const noKey = endpoint({ payloadStyle: 'thin' }, { apiKey: undefined });
      await expect(stripeProvider.fetchesState!.fetch(notification(), 'v1.payment_intent.succeeded', noKey, { timeoutMs: 100 })).rejects.toMatchObject({
        name: 'ProviderApiError',
        code: 'endpoint_not_configured',
      });
      const gone = stripeProvider.fetchesState!.fetch(notification(), 'v1.payment_intent.succeeded', undefined, { timeoutMs: 100 });
      await expect(gone).rejects.toBeInstanceOf(ProviderApiError);
    });

    it('an unreachable API is a ProviderApiError without the key in its message', async () => {
      const err = await stripeProvider.fetchesState!.fetch(notification(), 'v1.payment_intent.succeeded', endpoint(), { timeoutMs: 500 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ProviderApiError);
      expect((err as ProviderApiError).code).toBe('provider_api_unavailable');
      expect((err as Error).message).toMatch(/^Stripe API failed for \/v1\/payment_intents\/pi_3QabcDEF: /);
      expect((err as Error).message).not.toContain('sk_test_unit_key_never_called');
    });
  });

  describe('endpoint settings', () => {
    const check = (apiKey: string | undefined, settings: Record<string, unknown>) => stripeProvider.checkEndpoint!({ ...(apiKey ? { apiKey } : {}), settings });
    it('payloadStyle is snapshot (default) or thin, and thin needs the key its objects are read with', () => {
      expect(check(undefined, {})).toBe(null);
      expect(check(undefined, { payloadStyle: 'snapshot' })).toBe(null);
      expect(check('sk_test_1', { payloadStyle: 'thin' })).toBe(null);
      expect(check(undefined, { payloadStyle: 'thin' })).toBe('"payloadStyle": "thin" requires "apiKey" (the objects its notifications name are read with it)');
      expect(check('sk_test_1', { payloadStyle: 'fat' })).toBe('"payloadStyle" must be "snapshot" or "thin"');
    });
  });
});

describe('stripe endpoints with payloadStyle (as WEBHOOK_ENDPOINTS is validated at start)', () => {
  const table = new Map([['stripe', stripeProvider]]);
  const validate = (fields: Record<string, unknown>) =>
    validateEndpoints('WEBHOOK_ENDPOINTS', [{ id: 'stripe-thin', provider: 'stripe', secrets: ['whsec_unit_thin_secret'], merchantAccountId: 'acct_1', ...fields }], Date.now(), table);

  it('keeps payloadStyle on the definition, with the key and the base URL (default Stripe\'s)', () => {
    expect(validate({})[0]).not.toHaveProperty('payloadStyle');
    expect(validate({ payloadStyle: 'snapshot' })[0]).toMatchObject({ payloadStyle: 'snapshot' });
    expect(validate({ payloadStyle: 'thin', apiKey: 'rk_test_1' })[0]).toMatchObject({ payloadStyle: 'thin', apiKey: 'rk_test_1', apiBaseUrl: 'https://api.stripe.com' });
  });

  it('stops the start on thin without apiKey, and on any other style', () => {
    expect(() => validate({ payloadStyle: 'thin' })).toThrow(
      new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "stripe-thin": "payloadStyle": "thin" requires "apiKey" (the objects its notifications name are read with it)'),
    );
    for (const payloadStyle of ['Thin', 'fat', 1, null, true]) {
      expect(() => validate({ payloadStyle, apiKey: 'sk_test_1' })).toThrow(new ConfigurationError('WEBHOOK_ENDPOINTS', 'endpoint "stripe-thin": "payloadStyle" must be "snapshot" or "thin"'));
    }
  });
});

describe('Retry-After and the key (stripe-api)', () => {
  it('reads delta-seconds and an HTTP date, cut to the most a delivery waits; anything else is none', () => {
    expect(retryAfterMs('2')).toBe(2_000);
    expect(retryAfterMs(['3'])).toBe(3_000);
    expect(retryAfterMs(new Date(10_000 + 5_000).toUTCString(), 10_000)).toBe(5_000);
    expect(retryAfterMs('86400')).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs(new Date(0).toUTCString(), 10_000)).toBe(0);
    for (const v of [undefined, '', 'soon', '-1', '1.5', 12]) expect(retryAfterMs(v)).toBe(null);
  });

  it('withoutKey takes every copy of the key out of a text', () => {
    expect(withoutKey('key sk_test_abc, again sk_test_abc.', 'sk_test_abc')).toBe('key [redacted], again [redacted].');
    expect(withoutKey('nothing', '')).toBe('nothing');
  });
});

describe("Stripe's health alerts (healthAlert)", () => {
  const alert = (type: string, overrides: Record<string, unknown> = {}, settings?: Record<string, unknown>) =>
    stripeProvider.healthAlert!(notification({ type, related_object: undefined, ...overrides }), type, endpoint(settings));

  it('reads a v2.core.health notification of a thin endpoint as an alert, from the notification alone', () => {
    expect(alert('v2.core.health.api_error.firing')).toEqual({
      details: { createdAt: '2026-12-01T10:00:00.000Z', livemode: false, context: 'acct_1Nv0FGQ9RKHgCVdK' },
      eventsMayBeLost: false,
    });
    expect(alert('v2.core.health.api_error.firing', { related_object: { id: 'we_123', type: 'webhook_endpoint', url: '/v1/webhook_endpoints/we_123' } })?.details.relatedObject).toEqual({
      id: 'we_123',
      type: 'webhook_endpoint',
    });
  });

  it('an event generation failure says events may be lost, whatever its suffix', () => {
    expect(alert('v2.core.health.event_generation_failure.resolved')?.eventsMayBeLost).toBe(true);
    expect(alert('v2.core.health.event_generation_failure.firing')?.eventsMayBeLost).toBe(true);
  });

  it('nothing else is an alert: another type, or a snapshot endpoint', () => {
    expect(alert('v1.payment_intent.succeeded')).toBeNull();
    expect(alert('v2.core.event_destination.ping')).toBeNull();
    expect(alert('v2.core.health.api_error.firing', {}, {})).toBeNull();
  });

  it('keeps what it shows short', () => {
    expect(alert('v2.core.health.api_error.firing', { context: 'a'.repeat(1_000) })?.details.context).toHaveLength(255);
  });
});
