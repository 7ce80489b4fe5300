/**
 * The bodies a sequence step sends, per provider: each provider's published example of the type
 * (test/fixtures/<provider>), made the sequence's (its order, its payment, the event's id and
 * amount), as the per-provider integration tests build them.
 */
import { randomUUID } from 'node:crypto';
import { body as checkoutFixture } from '../fixtures/checkout';
import { published as paddlePublished } from '../fixtures/paddle';
import { paypalBody } from '../fixtures/paypal';
import { disputeNotification, paymentNotification, published as squarePublished } from '../fixtures/square';
import { AMOUNT_MINOR, Kind, SequenceProvider, Step } from './sequences';

/** The accounts of the fuzz endpoints, and the other one a body may declare. */
export const ACCOUNTS = {
  paypal: { own: 'FZPAYPAL01', other: 'FZPAYPAL99' },
  checkout: { own: 'ent_fz_checkout', other: null },
  square: { own: 'MLFZSQUARE01', other: 'MLFZSQUARE99' },
  paddle: { own: 'pdl_fz_seller', other: null },
} as const;

/** One sequence's ids: our order, the provider's payment (and PayPal's capture), and a prefix for the refund ids. */
export interface SequenceIds {
  orderId: string;
  reference: string;
  paymentId: string;
  captureId: string;
  prefix: string;
}

type EventStep = Extract<Step, { op: 'event' }>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const pickOf = <T>(options: readonly T[], pick: number): T => options[pick % options.length];

/** The event id a step's body carries, of the provider's shape. */
export function newEventId(provider: SequenceProvider): string {
  const hex = randomUUID().replace(/-/g, '');
  switch (provider) {
    case 'paypal':
      return `WH-${hex.slice(0, 17).toUpperCase()}-${hex.slice(17, 31).toUpperCase()}`;
    case 'checkout':
      return `evt_${hex.slice(0, 26)}`;
    case 'square':
      return randomUUID();
    case 'paddle':
      return `evt_${hex.slice(0, 26)}`;
  }
}

/** The body of an event step, as JSON text. */
export function bodyOf(provider: SequenceProvider, step: EventStep, eventId: string, ids: SequenceIds): string {
  const wrong = step.variant === 'wrongAmount';
  const other = step.variant === 'otherAccount';
  switch (provider) {
    case 'checkout':
      return JSON.stringify(checkout(step, eventId, ids, wrong));
    case 'paddle':
      return JSON.stringify(paddle(step, eventId, ids, wrong));
    case 'square':
      return JSON.stringify(square(step, eventId, ids, wrong, other));
    case 'paypal':
      return JSON.stringify(paypal(step, eventId, ids, wrong, other));
  }
}

const CHECKOUT_TYPES: Record<Kind, string[]> = {
  processing: ['payment_pending'],
  authorized: ['payment_approved'],
  succeeded: ['payment_captured'],
  failed: ['payment_declined', 'payment_capture_declined'],
  canceled: ['payment_voided', 'payment_canceled'],
  expired: ['payment_expired', 'payment_expired.legacy'],
  refund: ['payment_refunded'],
  reversal: [],
  disputed: ['dispute_received.derived', 'dispute_evidence_required.derived'],
  dispute_won: ['dispute_won'],
  dispute_lost: ['dispute_lost', 'dispute_lost.legacy'],
  // A dispute type the service records and ignores.
  ignored: ['dispute_canceled.derived'],
};

function checkout(step: EventStep, eventId: string, ids: SequenceIds, wrong: boolean): Json {
  const fixture = pickOf(CHECKOUT_TYPES[step.kind], step.pick);
  const body = checkoutFixture(fixture);
  body.id = eventId;
  body.type = fixture.replace(/\..*$/, '');
  if (body.type.startsWith('dispute_')) {
    body.data.payment_id = ids.paymentId;
    body.data.payment_reference = ids.reference;
    if ('currency' in body.data) body.data.currency = 'EUR';
    if ('amount' in body.data) body.data.amount = AMOUNT_MINOR;
    return body;
  }
  body.data.id = ids.paymentId;
  body.data.reference = ids.reference;
  body.data.metadata = { ...(body.data.metadata ?? {}), order_id: ids.orderId };
  body.data.currency = 'EUR';
  if (step.kind === 'refund') {
    body.data.action_id = `act_${ids.prefix}${step.refundId}`;
    body.data.amount = step.refundMinor;
  } else body.data.amount = wrong ? AMOUNT_MINOR + 1 : AMOUNT_MINOR;
  return body;
}

function paddle(step: EventStep, eventId: string, ids: SequenceIds, wrong: boolean): Json {
  const transaction = (type: 'transaction.paid' | 'transaction.completed' | 'transaction.payment_failed' | 'transaction.canceled') => {
    const body = paddlePublished(type);
    body.data.id = ids.paymentId;
    body.data.custom_data = { order_id: ids.orderId };
    body.data.currency_code = 'EUR';
    body.data.details.totals = { ...body.data.details.totals, currency_code: 'EUR', grand_total: String(wrong ? AMOUNT_MINOR + 1 : AMOUNT_MINOR) };
    return body;
  };
  const adjustment = (type: 'adjustment.created' | 'adjustment.updated', fields: Json) => {
    const body = paddlePublished(type);
    body.data = { ...body.data, transaction_id: ids.paymentId, currency_code: 'EUR', ...fields };
    body.data.totals = { ...body.data.totals, currency_code: 'EUR', ...(fields.total !== undefined ? { total: fields.total } : {}) };
    delete body.data.total;
    return body;
  };
  let body: Json;
  switch (step.kind) {
    case 'succeeded':
      body = transaction(pickOf(['transaction.paid', 'transaction.completed'] as const, step.pick));
      break;
    case 'failed':
      body = transaction('transaction.payment_failed');
      break;
    case 'canceled':
      body = transaction('transaction.canceled');
      break;
    case 'refund':
      body = adjustment(pickOf(['adjustment.created', 'adjustment.updated'] as const, step.pick), { id: `adj_${ids.prefix}${step.refundId}`, action: 'refund', status: 'approved', total: String(step.refundMinor) });
      break;
    case 'dispute_lost':
      body = adjustment('adjustment.created', { id: `adj_${ids.prefix}cb`, action: 'chargeback', status: 'approved', total: String(AMOUNT_MINOR) });
      break;
    default:
      // A refund not yet approved: recorded, and changes nothing.
      body = adjustment('adjustment.created', { id: `adj_${ids.prefix}pending`, action: 'refund', status: 'pending_approval', total: '1000' });
  }
  body.event_id = eventId;
  body.event_type = body.event_type ?? body.eventType;
  body.notification_id = `ntf_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
  return body;
}

const SQUARE_STATUS: Partial<Record<Kind, string>> = { processing: 'PENDING', authorized: 'APPROVED', succeeded: 'COMPLETED', failed: 'FAILED', canceled: 'CANCELED', refund: 'COMPLETED' };

function square(step: EventStep, eventId: string, ids: SequenceIds, wrong: boolean, other: boolean): Json {
  const envelope = { eventId, merchantId: other ? ACCOUNTS.square.other : ACCOUNTS.square.own };
  const status = SQUARE_STATUS[step.kind];
  if (status) {
    const money = { amount: wrong ? AMOUNT_MINOR + 1 : AMOUNT_MINOR, currency: 'EUR' };
    const payment: Json = {
      ...squarePublished('payment.updated.COMPLETED').data.object.payment,
      id: ids.paymentId,
      status,
      amount_money: money,
      approved_money: money,
      total_money: money,
      reference_id: ids.reference,
    };
    delete payment.refunded_money;
    delete payment.refund_ids;
    if (step.kind === 'refund') payment.refunded_money = { amount: step.refundMinor, currency: 'EUR' };
    const type = step.kind === 'refund' || step.pick % 2 === 1 ? 'payment.updated' : 'payment.created';
    return paymentNotification(type, payment, envelope);
  }
  const disputeMoney = { amount: AMOUNT_MINOR, currency: 'EUR' };
  switch (step.kind) {
    case 'disputed':
      return disputeNotification('dispute.created', ids.paymentId, 'EVIDENCE_REQUIRED', { ...envelope, amountMoney: disputeMoney });
    case 'dispute_won':
    case 'dispute_lost':
      return disputeNotification(pickOf(['dispute.state.changed', 'dispute.state.updated'] as const, step.pick), ids.paymentId, step.kind === 'dispute_won' ? 'WON' : 'LOST', { ...envelope, amountMoney: disputeMoney });
    default: {
      // A refund's own notification: recorded and ignored (the payment's refunded_money says it).
      const body = squarePublished('refund.created.PENDING');
      body.event_id = eventId;
      body.merchant_id = envelope.merchantId;
      return body;
    }
  }
}

function paypalEnvelope(sample: string, eventType: string, eventId: string, resource: Json, other: boolean): Json {
  const { body } = paypalBody(sample);
  const merged: Json = { ...(body.resource as Json), ...resource };
  // The payee is the account: the endpoint's (none stated), or another seller's.
  delete merged.payee;
  if (other) merged.payee = { merchant_id: ACCOUNTS.paypal.other };
  return { ...body, id: eventId, event_type: eventType, resource: merged };
}

function paypal(step: EventStep, eventId: string, ids: SequenceIds, wrong: boolean, other: boolean): Json {
  const value = wrong ? ((AMOUNT_MINOR + 1) / 100).toFixed(2) : (AMOUNT_MINOR / 100).toFixed(2);
  const capture = (type: string) =>
    paypalEnvelope('PAYMENT.CAPTURE.COMPLETED.pui-docs', type, eventId, {
      id: ids.captureId,
      status: type.split('.').pop(),
      amount: { value, currency_code: 'EUR' },
      custom_id: ids.reference,
      supplementary_data: { related_ids: { order_id: ids.paymentId } },
    }, other);
  const upLinks = [
    { href: `https://api.paypal.com/v2/payments/refunds/x`, rel: 'self', method: 'GET' },
    { href: `https://api.paypal.com/v2/payments/captures/${ids.captureId}`, rel: 'up', method: 'GET' },
  ];
  const dispute = (type: string, outcome: string | null) => {
    const { body } = paypalBody('CUSTOMER.DISPUTE.CREATED');
    const [transaction] = (body.resource as Json).disputed_transactions as Json[];
    const resource: Json = { dispute_amount: { currency_code: 'EUR', value: (AMOUNT_MINOR / 100).toFixed(2) }, disputed_transactions: [{ ...transaction, seller_transaction_id: ids.captureId }] };
    if (type === 'CUSTOMER.DISPUTE.RESOLVED') {
      resource.status = 'RESOLVED';
      resource.dispute_outcome = outcome === null ? undefined : { outcome_code: outcome };
    }
    return paypalEnvelope('CUSTOMER.DISPUTE.CREATED', type, eventId, resource, other);
  };
  switch (step.kind) {
    case 'processing':
      return capture('PAYMENT.CAPTURE.PENDING');
    case 'succeeded':
      return capture('PAYMENT.CAPTURE.COMPLETED');
    case 'failed':
      return capture(pickOf(['PAYMENT.CAPTURE.DENIED', 'PAYMENT.CAPTURE.DECLINED'], step.pick));
    case 'authorized':
      if (step.pick % 2 === 0) {
        const { body } = paypalBody('CHECKOUT.ORDER.APPROVED');
        const [unit] = (body.resource as Json).purchase_units as Json[];
        return paypalEnvelope('CHECKOUT.ORDER.APPROVED', 'CHECKOUT.ORDER.APPROVED', eventId, { id: ids.paymentId, purchase_units: [{ ...unit, custom_id: ids.reference, amount: { currency_code: 'EUR', value } }] }, other);
      }
    // falls through: an authorization
    case 'canceled': {
      const type = step.kind === 'canceled' ? 'PAYMENT.AUTHORIZATION.VOIDED' : 'PAYMENT.AUTHORIZATION.CREATED';
      return paypalEnvelope('PAYMENT.AUTHORIZATION.VOIDED', type, eventId, {
        id: `AUTH${ids.prefix.toUpperCase()}`,
        status: type.split('.').pop(),
        custom_id: ids.reference,
        amount: { currency_code: 'EUR', value },
        supplementary_data: { related_ids: { order_id: ids.paymentId } },
      }, other);
    }
    case 'refund':
      return paypalEnvelope('PAYMENT.CAPTURE.REFUNDED', 'PAYMENT.CAPTURE.REFUNDED', eventId, { id: `R${ids.prefix.toUpperCase()}${step.refundId}`, amount: { value: (step.refundMinor / 100).toFixed(2), currency_code: 'EUR' }, links: upLinks }, other);
    case 'reversal':
      return paypalEnvelope('PAYMENT.CAPTURE.REFUNDED', 'PAYMENT.CAPTURE.REVERSED', eventId, { id: `V${ids.prefix.toUpperCase()}${step.refundId}`, amount: { value: (AMOUNT_MINOR / 100).toFixed(2), currency_code: 'EUR' }, links: upLinks }, other);
    case 'disputed':
      return dispute('CUSTOMER.DISPUTE.CREATED', null);
    case 'dispute_won':
      return dispute('CUSTOMER.DISPUTE.RESOLVED', pickOf(['RESOLVED_SELLER_FAVOUR', 'CANCELED_BY_BUYER', 'RESOLVED_WITH_PAYOUT'], step.pick));
    case 'dispute_lost':
      return dispute('CUSTOMER.DISPUTE.RESOLVED', pickOf(['RESOLVED_BUYER_FAVOUR', 'ACCEPTED'], step.pick));
    default:
      // A resolution that does not say for whom: recorded and ignored.
      return dispute('CUSTOMER.DISPUTE.RESOLVED', null);
  }
}
