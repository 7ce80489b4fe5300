import type { HistoryCause } from './history';
import type { RecordedMove } from './lifecycle';
import type { FulfillmentStatus } from './order-views';

/**
 * Events one context of the module announces to another inside the transaction that made the
 * change, so that a lower context never imports a higher one (Payments tells Webhooks a payment
 * exists; Fulfillment tells Payments a shipment left). They never leave the process: the outbox
 * carries only the public events of docs/events.md.
 */

/** A payment was registered (by the API, or created from an event's order id). */
export interface PaymentRegisteredEvent {
  type: 'internal.payment.registered';
  payment: { id: string; provider: string; merchantAccountId: string; providerPaymentId: string };
  /** The provider event whose processing created it (that delivery is not among those to release), or null for the API. */
  sourceEventId: string | null;
}

/**
 * A capture was recorded as a payment's for the first time (a provider whose refunds and disputes
 * name the capture): the deliveries that name it and wait can now find their payment.
 */
export interface CaptureRecordedEvent {
  type: 'internal.capture.recorded';
  capture: { provider: string; merchantAccountId: string; captureId: string; providerPaymentId: string };
}

/** A fulfillment was requested, dispatched, failed, canceled or asked again. */
export interface FulfillmentChangedEvent {
  type: 'internal.fulfillment.changed';
  fulfillment: { id: string; orderId: string; status: FulfillmentStatus; carrier: string; shipmentId: string | null };
  /** The moves of its status this change made, for the order's history, and their cause. */
  moves: Array<RecordedMove<FulfillmentStatus>>;
  cause: HistoryCause;
}

/**
 * (v4) The shop cancels a paid order with a refund: its fulfillment must stop before its dispatch
 * begins. The fulfillment decides under the lock its dispatch's claim takes, and refuses (throws
 * `FULFILLMENT.ALREADY_DISPATCHED`, rolling the transaction back) once the dispatch has begun.
 */
export interface FulfillmentStopRequestedEvent {
  type: 'internal.fulfillment.stop-requested';
  orderId: string;
  reason: string;
  cause: HistoryCause;
}

/**
 * (v4) A provider said that events of an endpoint may be lost (a Stripe
 * `v2.core.health.event_generation_failure.*` alert): its open payments should be polled now
 * (docs/operations.md#endpoint-health). Published in the processing transaction of that delivery.
 */
export interface PollEndpointRequestedEvent {
  type: 'internal.poll.endpoint-requested';
  endpointId: string;
  /** Why, for the logs: the alert's type and event id. */
  reason: string;
}

export type InternalEvent =
  | PaymentRegisteredEvent
  | CaptureRecordedEvent
  | FulfillmentChangedEvent
  | FulfillmentStopRequestedEvent
  | PollEndpointRequestedEvent;
export type InternalEventType = InternalEvent['type'];
