import { hmacValidator } from '@adyen/api-library';
import { HMAC_VECTORS } from '../../test/fixtures/adyen';
import { createAdyenProvider } from '../providers/adyen.provider';
import { ADYEN_LIBRARY, AdyenLibraryError, adyenNotification, adyenSigningLibrary, signAdyenItem } from './adyen';
import * as kit from './index';

/** The kit's Adyen signer: what Adyen publishes, it computes; what it signs, the module's adapter verifies. */
describe('the testing kit signs Adyen items', () => {
  it.each(HMAC_VECTORS.map((v) => [v.name, v] as const))('the signature Adyen published: %s', (_name, vector) => {
    const { hmacSignature: published, ...rest } = vector.item.additionalData ?? {};
    expect(published === undefined || published === vector.signature).toBe(true);
    expect(signAdyenItem({ ...vector.item, additionalData: rest }, vector.key).additionalData?.hmacSignature).toBe(vector.signature);
    // A signature it had is replaced, not signed over.
    expect(signAdyenItem({ ...vector.item, additionalData: { ...rest, hmacSignature: 'stale' } }, vector.key).additionalData?.hmacSignature).toBe(vector.signature);
  });

  it('adyenNotification: a body to send as is, each item signed on its own, which the adyen adapter accepts', () => {
    const hmacKey = 'AB'.repeat(32);
    const item = (psp: string, reference: string) => ({
      eventCode: 'AUTHORISATION',
      success: 'true',
      pspReference: psp,
      merchantAccountCode: 'ShopEU',
      merchantReference: reference,
      amount: { value: 4990, currency: 'EUR' },
      eventDate: '2026-12-07T10:00:00+01:00',
    });
    const { body, headers } = kit.adyenNotification({ hmacKey, items: [item('7914073381342284', 'order-1'), item('8815073381342285', 'order-2')] });
    expect(headers).toEqual({ 'content-type': 'application/json' });
    const parsed = JSON.parse(body);
    expect(parsed.live).toBe('false');
    for (const { NotificationRequestItem: signed } of parsed.notificationItems) {
      expect(new hmacValidator().validateHMAC(signed, hmacKey)).toBe(true);
    }
    const adapter = createAdyenProvider();
    const receive = (text: string) =>
      adapter.receive({ body: Buffer.from(text), headers: {} } as never, { keys: [{ index: 0, key: adapter.prepareKey(hmacKey) }] } as never);
    expect(receive(body)).toMatchObject({ ok: true, events: [{ eventId: '7914073381342284:AUTHORISATION:true' }, { eventId: '8815073381342285:AUTHORISATION:true' }] });
    expect(receive(body.replace('4990', '4991'))).toEqual({ ok: false, error: 'invalid_signature' });
    expect(receive(adyenNotification({ hmacKey: 'CD'.repeat(32), items: [item('7914073381342284', 'order-1')] }).body)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it('a host without the official package: an error naming it and how to install it', () => {
    const missing = () => {
      throw Object.assign(new Error(`Cannot find module '${ADYEN_LIBRARY}'`), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => adyenSigningLibrary(missing)).toThrow(
      new AdyenLibraryError(
        'nestjs-payment-webhooks/testing signs Adyen items with the official @adyen/api-library, which is not installed: npm install --save-dev @adyen/api-library',
        'not-installed',
      ),
    );
    expect(() => adyenSigningLibrary(() => ({}))).toThrow('the installed @adyen/api-library has no hmacValidator: npm install @adyen/api-library@latest');
    expect(() =>
      adyenSigningLibrary(() => {
        throw new Error('boom\nstack');
      }),
    ).toThrow('nestjs-payment-webhooks/testing could not load @adyen/api-library: boom');
  });

  it('importing the kit requires no optional peer: the official package is required when an item is signed', () => {
    jest.isolateModules(() => {
      for (const peer of [ADYEN_LIBRARY, '@paddle/paddle-node-sdk', 'square', '@mollie/api-client']) {
        jest.doMock(
          peer,
          () => {
            throw new Error(`${peer} required`);
          },
          { virtual: true },
        );
      }
      const isolated = require('./index') as typeof kit;
      expect(() => isolated.adyenNotification({ hmacKey: 'AB'.repeat(32), items: [{ pspReference: '1' }] })).toThrow(
        'nestjs-payment-webhooks/testing could not load @adyen/api-library: @adyen/api-library required',
      );
    });
  });
});
