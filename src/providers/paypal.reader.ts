import { readFailure } from './command-answers';
import { credentialsOf, PAYPAL_PACKAGE, paypalClients, PaypalClients, paypalFailure } from './paypal-client';
import { asObject, PaymentReader, PaymentReading, ProviderApiError, text } from './provider';

/** What a capture's status says, as the webhook of the same fact names it (docs/webhooks.md#paypal). */
const CAPTURE_EVENTS: ReadonlyMap<string, string> = new Map([
  // The money was taken; what went back since is left to the refunds' own webhooks.
  ['COMPLETED', 'PAYMENT.CAPTURE.COMPLETED'],
  ['PARTIALLY_REFUNDED', 'PAYMENT.CAPTURE.COMPLETED'],
  ['REFUNDED', 'PAYMENT.CAPTURE.COMPLETED'],
  ['PENDING', 'PAYMENT.CAPTURE.PENDING'],
  ['DECLINED', 'PAYMENT.CAPTURE.DECLINED'],
  ['FAILED', 'PAYMENT.CAPTURE.DECLINED'],
]);
const CAPTURED: ReadonlySet<string> = new Set(['COMPLETED', 'PARTIALLY_REFUNDED', 'REFUNDED']);

/** What an authorization's status says, where no capture of the order is listed. */
const AUTHORIZATION_EVENTS: ReadonlyMap<string, string> = new Map([
  ['CREATED', 'PAYMENT.AUTHORIZATION.CREATED'],
  ['VOIDED', 'PAYMENT.AUTHORIZATION.VOIDED'],
]);

/** A capture, an authorization or a refund of the order, with the purchase unit it is listed under. */
interface Listed {
  item: Record<string, unknown>;
  unit: Record<string, unknown>;
}

function objects(value: unknown): Record<string, unknown>[] {
  return Array.isArray(value) ? value.flatMap((v) => (asObject(v) ? [asObject(v)!] : [])) : [];
}

/** The order's payments of one kind (`captures`, `authorizations`, `refunds`), over its purchase units, in PayPal's order. */
function listed(order: Record<string, unknown>, kind: string): Listed[] {
  return objects(order.purchase_units).flatMap((unit) => objects(asObject(unit.payments)?.[kind]).map((item) => ({ item, unit })));
}

const DECIMAL = /^\d{1,20}(?:\.\d{1,10})?$/;

/** The sum of decimal strings as PayPal spells amounts (`"10.00"` + `"5.50"` = `"15.50"`); `"0"` for none. */
export function sumDecimals(values: readonly string[]): string {
  const usable = values.filter((v) => DECIMAL.test(v));
  if (usable.length === 0) return '0';
  const scale = Math.max(...usable.map((v) => (v.split('.')[1] ?? '').length));
  const total = usable.reduce((sum, v) => {
    const [whole, fraction = ''] = v.split('.');
    return sum + BigInt(whole + fraction.padEnd(scale, '0'));
  }, 0n);
  if (scale === 0) return total.toString();
  const digits = total.toString().padStart(scale + 1, '0');
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** The amount refunded of the order: its refunds that went through, else the whole capture PayPal says is refunded. */
function refundedOf(order: Record<string, unknown>, capture: Record<string, unknown> | null): string {
  const done = listed(order, 'refunds').filter(({ item }) => item.status === 'COMPLETED');
  const sum = sumDecimals(done.flatMap(({ item }) => text(asObject(item.amount)?.value) ?? []));
  if (sum === '0' && capture?.status === 'REFUNDED') return text(asObject(capture.amount)?.value) ?? '0';
  return sum;
}

/**
 * An authorization or a capture as its webhook's resource carries it: the order it belongs to
 * (`supplementary_data.related_ids.order_id`) and the merchant's `custom_id` (its own, else its
 * purchase unit's).
 */
function asPaymentResource(orderId: string, { item, unit }: Listed): Record<string, unknown> {
  const supplementary = asObject(item.supplementary_data) ?? {};
  return {
    ...item,
    ...(text(item.custom_id) === null && text(unit.custom_id) !== null ? { custom_id: unit.custom_id } : {}),
    supplementary_data: { ...supplementary, related_ids: { ...asObject(supplementary.related_ids), order_id: orderId } },
  };
}

function reading(status: string, refunded: string, eventType: string | undefined, resourceType: string, resource: Record<string, unknown>): PaymentReading {
  return {
    found: true,
    status,
    refunded,
    event: eventType === undefined ? null : { eventType, body: { event_type: eventType, resource_type: resourceType, resource } },
  };
}

/**
 * What an order (as `GET /v2/checkout/orders/{id}` answers it, PayPal's own JSON) says of its
 * payment, decided by the object furthest along: a capture that took the money (the first), else the
 * latest capture, else the latest authorization, else the order itself. `status` is that object's
 * own status word; `refunded` what went back of the order (docs/operations.md#when-webhooks-stop).
 */
export function paypalOrderReading(order: Record<string, unknown>): PaymentReading {
  const orderId = String(order.id);
  const captures = listed(order, 'captures');
  const capture = captures.find(({ item }) => CAPTURED.has(String(item.status))) ?? captures[captures.length - 1];
  if (capture) {
    const status = String(capture.item.status);
    return reading(status, refundedOf(order, capture.item), CAPTURE_EVENTS.get(status), 'capture', asPaymentResource(orderId, capture));
  }
  const authorizations = listed(order, 'authorizations');
  const authorization = authorizations[authorizations.length - 1];
  if (authorization) {
    const status = String(authorization.item.status);
    return reading(status, '0', AUTHORIZATION_EVENTS.get(status), 'authorization', asPaymentResource(orderId, authorization));
  }
  // Approved by the buyer and neither captured nor authorized yet; any other order status (created,
  // waiting for the payer, voided without an authorization) says nothing the module acts on.
  const status = String(order.status);
  return reading(status, '0', status === 'APPROVED' ? 'CHECKOUT.ORDER.APPROVED' : undefined, 'checkout-order', order);
}

/** The order's JSON as PayPal sent it (the SDK's `result` renames every field), or null. */
function sentBody(body: unknown): Record<string, unknown> | null {
  if (typeof body !== 'string') return null;
  try {
    return asObject(JSON.parse(body)) ?? null;
  } catch {
    return null;
  }
}

/**
 * Polling through `@paypal/paypal-server-sdk` (docs/operations.md#when-webhooks-stop): the payment
 * is the PayPal order, read with `OrdersController.getOrder` and the endpoint's OAuth client
 * credentials, through the same clients (and tokens) as the payment commands. A `404` is an order
 * PayPal does not know; any other failure a ProviderApiError, its message free of the credentials.
 */
export function createPaypalReader(clients: PaypalClients): PaymentReader {
  return {
    ready: (endpoint) => credentialsOf(endpoint) !== null,

    async read(target, { endpoint, timeoutMs }): Promise<PaymentReading> {
      const credentials = credentialsOf(endpoint);
      if (!credentials) throw new ProviderApiError(`endpoint "${endpoint.id}" has no PayPal clientId and clientSecret`);
      const controllers = clients.controllersFor(endpoint, credentials, timeoutMs);
      if (controllers === null) throw new ProviderApiError(`the ${PAYPAL_PACKAGE} package is not installed: npm install ${PAYPAL_PACKAGE}`);
      const orderId = target.providerPaymentId;
      let body: unknown;
      try {
        ({ body } = await controllers.orders.getOrder({ id: orderId }));
      } catch (err) {
        if ((err as { statusCode?: unknown } | null)?.statusCode === 404) return { found: false };
        const failed = paypalFailure(err, [credentials.clientSecret, credentials.clientId]);
        throw readFailure(failed, `PayPal order ${orderId} could not be read`);
      }
      const order = sentBody(body);
      if (order === null || order.id !== orderId) throw new ProviderApiError(`PayPal answered the read of order ${orderId} with another object`);
      return paypalOrderReading(order);
    },
  };
}

/** The built-in PayPal provider's reads. */
export const paypalReader = createPaypalReader(paypalClients);
