export * from './config/options';
export { ConfigurationError } from './config/validate';
export { loadStandaloneConfig } from './config/env';
export { configurePaymentWebhooksApp } from './configure-app';
export { applyServerLimits, ServerLimits } from './http/server-limits';
/** Nest's logger interface on a pino logger: hand it the logger given as `logger`, and every line is one JSON stream. */
export { PinoNestLogger } from './observability/logger';
export { PaymentWebhooksModule, PaymentWebhooksAsyncOptions } from './payment-webhooks.module';
export { PW_CONNECTION } from './database/data-source';
export { CLOCK, Clock } from './config/tokens';
export { InboxSweeper } from './webhooks/inbox-sweeper.service';
export { DeliveryProcessingService } from './webhooks/delivery-processing.service';
export type { CarrierAdapter, ShipmentRequest, ShipmentResult } from './fulfillment/carriers/carrier';
export { HttpCarrierAdapter } from './fulfillment/carriers/http-carrier';
export { OutboxWriter } from './outbox/outbox-writer';
export { OutboxRelay } from './outbox/outbox-relay.service';
export { Money } from './payments/money';
export { OnPaymentEvent } from './events/on-payment-event.decorator';
export type { OnPaymentEventOptions } from './events/on-payment-event.decorator';
export { PAYMENT_EVENT_TYPES } from './common/host-events';
export type { PaymentEventType, PaymentWebhooksEvent, AnyPaymentEvent, OrderEventType, EndpointEvent, EndpointEventType, EndpointSnapshot } from './common/host-events';
export type { OrderSnapshot, PaymentSnapshot, RefundSnapshot, ShipTo, OrderItem } from './common/order-views';
export type { EventSinkDefinition } from './config/options';
// Writing a provider of the host's own (docs/providers.md).
export type {
  DeliveryAnswer,
  DeliveryRefusal,
  EnvelopeIdentity,
  FetchContext,
  FetchedState,
  LiveKey,
  ProviderAdapter,
  ProviderEndpoint,
  RawDelivery,
  ReceiveContext,
  ReceivedEvent,
  ReceiveResult,
  RecordedEvent,
  SignatureParts,
  StateFetcher,
  // (v4) Payment commands (docs/commands.md).
  CommandAmount,
  CommandAnswer,
  CommandContext,
  CommandTarget,
  PaymentCommand,
  PaymentCommands,
  // (v4) Polling (docs/operations.md#when-webhooks-stop).
  PaymentReader,
  PaymentReading,
  PollTarget,
  ReadContext,
} from './providers/provider';
export { failedCall, thrownCall } from './providers/command-answers';
export type { ProviderEvent, ProviderEventKind, RawAmount } from './common/provider-event';
export type { HmacScheme, HmacProvider } from './providers/hmac';
export { hmacProvider, matchHmac, withinTolerance } from './providers/hmac';
export {
  asObject,
  decimal,
  header,
  jsonAnswer,
  lenientId,
  MalformedPayloadError,
  minor,
  optionalId,
  parseKeyValueHeader,
  ProviderApiError,
  RATE_LIMITED,
  readJsonObject,
  requireId,
  text,
} from './providers/provider';
