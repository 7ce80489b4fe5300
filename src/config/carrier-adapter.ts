import type { OrderItem, ShipTo } from '../common/order-views';

/*
 * The interface of a carrier adapter a host passes in the options (`carrierAdapters`): declared
 * here, where the options are, so that configuration needs nothing of the fulfillment context that
 * calls the adapters.
 */

/** What a carrier is asked to ship. */
export interface ShipmentRequest {
  orderId: string;
  orderReference: string | null;
  shipTo: ShipTo;
  items: OrderItem[];
}

export type ShipmentResult =
  | { ok: true; shipmentId: string; /** for metrics: the HTTP status, or what the adapter says */ status?: string }
  /**
   * `retryable`: the same call may succeed later (network, timeout, 408, 425, 429, 5xx).
   * `mayHaveShipped`: no clear refusal came back (no answer at all, or a 2xx without an id), so the
   * carrier may hold a shipment under the key already.
   */
  | { ok: false; retryable: boolean; reason: string; retryAfterMs?: number; status?: string; mayHaveShipped?: boolean };

/**
 * One way to fulfil an order: the HTTP carrier of docs/carriers.md, or a host's own (a license
 * issuer, a digital-goods service). `ship` must be idempotent on `idempotencyKey` (the
 * fulfillment id): the relay may call it again after a crash, and must get the first shipment.
 * It answers, never throws, for what the carrier said; a throw counts as a retryable failure.
 */
export interface CarrierAdapter {
  readonly name: string;
  ship(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult>;
}
