import { createHmac } from 'node:crypto';
import { hmacValidator } from '@adyen/api-library';
import { HMAC_VECTORS } from '../../../test/fixtures/adyen';
import { createAdyenProvider } from '../../providers/adyen.provider';
import { CliExit, EXIT } from '../context';
import { adyenEventId, adyenLibrary, isAdyenAccepted, isAdyenKey, itemsOf, newPspReference, notificationBody, signBody, signItem } from './adyen';
import { describeAnswer, signDelivery } from './delivery';
import { newEventId, newResourceId, providerEvent, wireBody } from './events';

/** What `simulate` and `conformance` send as Adyen: items signed by the official library, one body of one or more. */
describe('playing Adyen', () => {
  const KEY = '44782DEF547AAA06C910C43932B1EB0C71FC68D9D0C057550C48EC2ACF6BA056';
  const payment = { resourceId: '7914073381342284', orderId: 'order-1', amount: '49.90', currency: 'EUR', account: 'ShopEU' };
  const signingString = (i: Record<string, unknown>) => {
    const amount = i.amount as { value: number; currency: string };
    return [i.pspReference, i.originalReference, i.merchantAccountCode, i.merchantReference, amount.value, amount.currency, i.eventCode, i.success].join(':');
  };

  it.each(HMAC_VECTORS.map((v) => [v.name, v] as const))('signs as Adyen publishes: %s', (_name, vector) => {
    const { hmacSignature: _published, ...rest } = vector.item.additionalData ?? {};
    const signed = signItem({ ...vector.item, additionalData: rest }, vector.key);
    expect(signed.additionalData?.hmacSignature).toBe(vector.signature);
    expect(signingString(signed)).toBe(vector.signingString);
  });

  it('an AUTHORISATION: the item as Adyen sends one, its event id derived from it, signed over the signing string', () => {
    const event = providerEvent('adyen', 'succeeded', payment, 'ignored-id');
    const [item] = itemsOf(event.body);
    expect(event).toMatchObject({ eventId: '7914073381342284:AUTHORISATION:true', type: 'AUTHORISATION' });
    expect(event.body).toMatchObject({ live: 'false', notificationItems: [{ NotificationRequestItem: expect.any(Object) }] });
    expect(item).toMatchObject({
      eventCode: 'AUTHORISATION',
      success: 'true',
      pspReference: '7914073381342284',
      originalReference: '',
      merchantAccountCode: 'ShopEU',
      merchantReference: 'order-1',
      amount: { value: 4990, currency: 'EUR' },
      additionalData: {},
    });
    expect(item.eventDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
    const signed = signItem(item, KEY);
    const expected = createHmac('sha256', Buffer.from(KEY, 'hex'))
      .update('7914073381342284::ShopEU:order-1:4990:EUR:AUTHORISATION:true')
      .digest('base64');
    expect(signed.additionalData).toEqual({ hmacSignature: expected });
    expect(new hmacValidator().validateHMAC(signed as never, KEY)).toBe(true);
  });

  it('the earlier outcome is the refused AUTHORISATION of the same pspReference; the ignored one a REPORT_AVAILABLE', () => {
    const refused = providerEvent('adyen', 'early', payment);
    expect(refused.eventId).toBe('7914073381342284:AUTHORISATION:false');
    expect(itemsOf(refused.body)[0]).toMatchObject({ success: 'false', reason: 'Refused', amount: { value: 4990, currency: 'EUR' } });
    const report = providerEvent('adyen', 'ignored', payment);
    expect(report.eventId).toBe('settlement_detail_report_batch_7914073381342284.csv:REPORT_AVAILABLE:true');
  });

  it('ids in Adyen\'s shape: a 16-digit pspReference, an event id <pspReference>:<eventCode>:<success>', () => {
    expect(newPspReference()).toMatch(/^[1-9]\d{15}$/);
    expect(newResourceId('adyen')).toMatch(/^[1-9]\d{15}$/);
    expect(newEventId('adyen')).toMatch(/^[1-9]\d{15}:AUTHORISATION:true$/);
    expect(adyenEventId({ pspReference: 'p', eventCode: 'REFUND', success: 'false' })).toBe('p:REFUND:false');
  });

  it('a delivery of several items: each signed on its own with the first key, pretty-printed, the same bytes every time', () => {
    const items = [payment, { ...payment, resourceId: '8815073381342285', orderId: 'order-2' }].flatMap((p) => itemsOf(providerEvent('adyen', 'succeeded', p).body));
    const body = wireBody(notificationBody(items));
    const other = 'AA'.repeat(32);
    const d = signDelivery('adyen', 'http://s/webhooks/a', 'unused', body, { secrets: [KEY, other], timestamp: 1 });
    expect(d.eventIds).toEqual(['7914073381342284:AUTHORISATION:true', '8815073381342285:AUTHORISATION:true']);
    expect(d.eventId).toBe('7914073381342284:AUTHORISATION:true');
    expect(d.headers).toEqual({ 'content-type': 'application/json', 'user-agent': 'payment-webhooks-kit' });
    expect(d.body.startsWith('{\n  "live": "false",\n  "notificationItems": [')).toBe(true);
    const sent = itemsOf(JSON.parse(d.body));
    for (const item of sent) {
      expect(new hmacValidator().validateHMAC(item as never, KEY)).toBe(true);
      expect(new hmacValidator().validateHMAC(item as never, other)).toBe(false);
    }
    expect(signDelivery('adyen', 'http://s/webhooks/a', 'unused', body, { secrets: [KEY], timestamp: 999 }).body).toBe(d.body);
  });

  it("what the kit signs, the module's adyen adapter verifies; a changed amount.value it refuses", () => {
    const adapter = createAdyenProvider();
    const key = adapter.prepareKey(KEY);
    const body = signBody(notificationBody(itemsOf(providerEvent('adyen', 'succeeded', payment).body)), KEY);
    const receive = (b: unknown) =>
      adapter.receive({ body: Buffer.from(JSON.stringify(b)), headers: {} } as never, { keys: [{ index: 0, key }] } as never);
    expect(receive(body)).toMatchObject({ ok: true, events: [{ eventId: '7914073381342284:AUTHORISATION:true', account: 'ShopEU', resourceId: '7914073381342284' }] });
    const tampered = JSON.parse(JSON.stringify(body));
    tampered.notificationItems[0].NotificationRequestItem.amount.value = 4991;
    expect(receive(tampered)).toEqual({ ok: false, error: 'invalid_signature' });
  });

  it("the answer: a 2xx [accepted] is the service's, read as such; JSON or another text is not", () => {
    const text = (status: number, t: string) => ({ status, text: t, ms: 1 });
    expect(isAdyenAccepted(text(200, '[accepted]'))).toBe(true);
    expect(isAdyenAccepted(text(202, '[accepted]\n'))).toBe(true);
    expect(isAdyenAccepted(text(200, '{"status":"accepted"}'))).toBe(false);
    expect(isAdyenAccepted(text(401, '[accepted]'))).toBe(false);
    expect(describeAnswer(text(200, '[accepted]'))).toBe('200 [accepted]');
  });

  it('a key is hex, an even number of digits', () => {
    expect(isAdyenKey(KEY)).toBe(true);
    expect(isAdyenKey('abc')).toBe(false);
    expect(isAdyenKey('whsec_abc')).toBe(false);
  });

  it('the official package missing: exit 2, one line saying how to install it', () => {
    const missing = () => {
      throw Object.assign(new Error("Cannot find module '@adyen/api-library'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => adyenLibrary('simulate', missing)).toThrow(
      new CliExit(EXIT.couldNotRun, 'simulate: --provider adyen signs with the official @adyen/api-library, which is not installed: npm install @adyen/api-library'),
    );
    expect(() => adyenLibrary('conformance', () => ({}))).toThrow(
      new CliExit(EXIT.couldNotRun, 'conformance: the installed @adyen/api-library has no hmacValidator: npm install @adyen/api-library@latest'),
    );
    expect(typeof adyenLibrary('simulate').hmacValidator).toBe('function');
  });
});
