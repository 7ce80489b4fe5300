import { ID_MAX_LENGTH, isPrintableId } from '../../common/printable';

export type { CarrierAdapter, ShipmentRequest, ShipmentResult } from '../../config/carrier-adapter';

/** The longest shipment id kept: 1–255 characters (docs/carriers.md#the-carrier-contract). */
export const SHIPMENT_ID_MAX_LENGTH = ID_MAX_LENGTH;

/**
 * Whether a carrier's shipment id can be kept and shown: a string of 1–255 characters, well-formed
 * UTF-16 (no lone surrogate), with no control or format character (PostgreSQL refuses NUL in
 * text; an escape sequence would reach an operator's terminal) and not only spaces. Anything else
 * is a "2xx without an id" (docs/carriers.md#the-carrier-contract): the carrier may have shipped,
 * so it is asked again with the same key.
 */
export function isUsableShipmentId(value: unknown): value is string {
  return isPrintableId(value, SHIPMENT_ID_MAX_LENGTH) && value.trim().length > 0;
}
