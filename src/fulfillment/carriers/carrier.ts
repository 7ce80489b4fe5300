import type { OrderItem, ShipTo } from '../../common/payment-events';
import { ID_MAX_LENGTH, isPrintableId } from '../../common/printable';

/** What a carrier is asked to ship (CONTRACT §5 body). */
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
 * One way to fulfil an order: the HTTP carrier of CONTRACT §5, or a host's own (a license
 * issuer, a digital-goods service). `ship` must be idempotent on `idempotencyKey` (the
 * fulfillment id): the relay may call it again after a crash, and must get the first shipment.
 * It answers, never throws, for what the carrier said; a throw counts as a retryable failure.
 */
export interface CarrierAdapter {
  readonly name: string;
  ship(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult>;
}

/** The longest shipment id kept (CONTRACT §5: 1–255 characters). */
export const SHIPMENT_ID_MAX_LENGTH = ID_MAX_LENGTH;

/**
 * Whether a carrier's shipment id can be kept and shown: a string of 1–255 characters, well-formed
 * UTF-16 (no lone surrogate), with no control or format character (PostgreSQL refuses NUL in
 * text; an escape sequence would reach an operator's terminal) and not only spaces. Anything else
 * is a "2xx without an id" (CONTRACT §5): the carrier may have shipped, so it is asked again with
 * the same key.
 */
export function isUsableShipmentId(value: unknown): value is string {
  return isPrintableId(value, SHIPMENT_ID_MAX_LENGTH) && value.trim().length > 0;
}
