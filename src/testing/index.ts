/**
 * Helpers for a host's own tests (`nestjs-payment-webhooks/testing`): sign a body the way each
 * provider does, to play the sender against the module, and run a provider adapter (a built-in
 * one or the host's own) through the receive path (docs/providers.md#testing-an-adapter).
 */
export { signedHeaders } from './sign';
export type { SigningProvider, SignOptions } from './sign';
/** A Standard Webhooks `v1a` key pair (`whsk_` signs, `whpk_` verifies), and the `whpk_` of a `whsk_`. */
export { generateV1aKeyPair, publicKeyFor } from '../providers/standard-keys';
export { nodeHeaders, receiveWith } from './receive';
/** Adyen's part of the kit: items signed inside the body, with the official `@adyen/api-library` (required when an item is signed). */
export { ADYEN_LIBRARY, AdyenLibraryError, adyenNotification, adyenNotificationBody, signAdyenBody, signAdyenItem } from './adyen';
export type { AdyenNotificationBody, AdyenNotificationItem, AdyenNotificationOptions } from './adyen';
/** PayPal's test kit: a key pair, a certificate of PayPal's sandbox signing name by a CA of its own, and a server for it. */
export {
  PAYPAL_TEST_CA_PEM,
  PAYPAL_TEST_CERT_PATH,
  PAYPAL_TEST_SIGNING_CERT_PEM,
  PAYPAL_TEST_SIGNING_KEY_PEM,
  paypalHeaders,
  paypalSignedString,
  paypalTransmissionTime,
  startPaypalCertServer,
} from './paypal';
export type { PaypalCertRoute, PaypalCertServer, PaypalSignOptions } from './paypal';
export type { ReceiveOptions, TestDelivery } from './receive';
export type { DeliveryOutcome, KeyedEvent } from '../providers';
